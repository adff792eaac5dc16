"""SCALE-Sim topology CSVs as training workloads, read by the one reader
(``npu.topology``, pinned to scalesim 3.0.0 in tests/npu/test_npu_topology.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu.cli import layer_rows
from npu.topology import read_rows
from tmhw.sim.errors import TmhwError
from tmhw.workload.footprint import footprint
from tmhw.workload.graph import Kind, Phase
from tmhw.workload.scalesim import from_scalesim_csv

#: The first rows of scale-sim-v3's topologies/conv_nets/Resnet18.csv, verbatim but for the
#: last one (FC of Resnet50, 2048 inputs), and a shortcut whose input is not the previous
#: output.
RESNET_HEAD = (
    "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
    "Num Filter, Strides, \n") + """\
Conv1,224,224,7,7,3,64,2,
CB2a_1,56,56,1,1,64,64,1,
CB2a_2,56,56,3,3,64,64,1,
CB2a_3,56,56,1,1,64,256,1,
CB2s,56,56,1,1,64,256,1,
FC6,1,1,1,1,2048,1000,1,
"""

#: scale-sim-v3's topologies/GEMM_mnk/gpt2.csv, verbatim but for its CRLF line ends.
GPT2_GEMM = """\
Layer,M,N,K,
QKT,1024,1024,64,
QKTV,1024,64,1024,
Linear1,1024,4800,1600,
Linear2,1024,1600,1600,
PW-FF-L1,1024,3072,1600,
PW-FF-L2,1024,1600,3072,
"""


def _write(tmp_path: Path, text: str, name: str = "topo.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_conv_rows_lower_to_gemm_with_scalesims_output_size(tmp_path: Path) -> None:
    """SCALE-Sim's ceil((H - R + stride) / stride) with no padding: Conv1 of 224 with 7x7/2
    gives 110 x 110 (a partial window counts), so M = 12100, N = 64, K = 7 * 7 * 3; the
    imported forward GEMM of batch 2 has 2 x 12100 rows."""
    layers = read_rows(_write(tmp_path, RESNET_HEAD))
    assert [t.name for t in layers] == ["Conv1", "CB2a_1", "CB2a_2", "CB2a_3", "CB2s", "FC6"]
    assert (layers[0].ofmap_h, layers[0].ofmap_w) == (110, 110)
    assert layers[0].mnk == (12100, 64, 147)
    assert layers[2].mnk == (54 * 54, 64, 576)
    assert layers[-1].mnk == (1, 1000, 2048)
    wl = from_scalesim_csv(_write(tmp_path, RESNET_HEAD), batch=2)
    g = wl.ops[0].gemms[0]
    assert (g.m, g.n, g.k) == (2 * 12100, 64, 147)


def test_gemm_rows_become_scalesims_conv_equivalent(tmp_path: Path) -> None:
    """SCALE-Sim maps (M, N, K) to H = M, W = K, R = 1, S = K, C = 1, N filters."""
    layers = read_rows(_write(tmp_path, GPT2_GEMM))
    assert all(t.form == "gemm" for t in layers)
    assert [t.mnk for t in layers][:3] == [(1024, 1024, 64), (1024, 64, 1024),
                                           (1024, 4800, 1600)]
    assert (layers[0].ifmap_h, layers[0].ifmap_w, layers[0].filt_w) == (1024, 64, 64)


def test_scalesims_own_resnet50_csv_is_refused_as_scalesim_refuses_it(tmp_path: Path) -> None:
    """scale-sim-v3's topologies/conv_nets/Resnet50.csv has extra columns (Eh, Ew, e2) and
    a row of bare commas; scalesim 3.0.0 stops on it (the extra columns land in its
    sparsity field), and so does the one reader, in one line."""
    text = ("Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, "
            "Num Filter, Strides,,,Eh,Ew,e2\n,,,,,,,,,,,,\n"
            "Conv1,224,224,7,7,3,64,2,,,110,110,12100\n")
    with pytest.raises(TmhwError, match="topo.csv:2: a conv row has at most 9 fields"):
        from_scalesim_csv(_write(tmp_path, text))


def test_dp_layers_are_depthwise_as_in_scalesim(tmp_path: Path) -> None:
    """A name containing "DP" runs as Channels one-channel layers of Num Filter each."""
    head = "Layer name,H,W,R,S,C,N,Strides,\n"
    p = _write(tmp_path, head + "Conv2_DP,16,16,3,3,32,1,1,\n")
    (t,) = read_rows(p)
    assert t.depthwise and t.mnk == (14 * 14, 1, 9)
    wl = from_scalesim_csv(p, batch=2)
    g = wl.ops[0].gemms[0]
    assert (g.m, g.n, g.k, g.count) == (2 * 14 * 14, 1, 9, 32)
    assert wl.params == 9 * 32


def test_the_imported_iteration_trains_every_layer(tmp_path: Path) -> None:
    wl = from_scalesim_csv(_write(tmp_path, RESNET_HEAD), batch=4)
    wl.check()
    names = {op.name for op in wl.ops}
    for layer in ("Conv1", "CB2a_1", "CB2a_2", "CB2a_3", "CB2s", "FC6"):
        assert f"{layer}.fwd" in names and f"{layer}.wgrad" in names
        assert layer == "Conv1" or f"{layer}.dgrad" in names
    # the shortcut CB2s reads 56x56x64, not CB2a_3's 56x56x256: a stand-in op reshapes
    assert "CB2s.in.fwd" in names
    assert footprint(wl).bytes_per_param == 16.0


def test_gemm_topology_chains_and_scales_m_with_batch(tmp_path: Path) -> None:
    wl = from_scalesim_csv(_write(tmp_path, GPT2_GEMM), batch=3)
    fwd = [op for op in wl.ops if op.phase == Phase.FORWARD and op.gemms]
    assert [op.gemms[0].m for op in fwd] == [3 * 1024] * 6
    # QKT's 1024 x 1024 output is exactly QKTV's M x K input: read directly
    qktv = next(op for op in wl.ops if op.name == "QKTV.fwd")
    assert wl.tensors[qktv.reads[0]].name == "QKT.out"
    assert wl.tensors[wl.ops[0].reads[0]].kind == Kind.INPUT


_dims = st.tuples(st.integers(1, 40), st.integers(1, 40), st.integers(1, 5),
                  st.integers(1, 5), st.integers(1, 16), st.integers(1, 16),
                  st.integers(1, 3)).filter(lambda d: d[2] <= d[0] and d[3] <= d[1])


def test_one_reader_serves_both_commands(tmp_path: Path) -> None:
    """``tmhw npu cycles`` and ``tmhw workload show`` read a file the same way: the
    forward GEMMs of the imported workload at batch 1 are the layers ``npu cycles``
    times, partial window included (16 x 16, 3 x 3, stride 2: 8 x 8 outputs)."""
    p = _write(tmp_path, "Layer name,H,W,R,S,C,N,Strides,\nq,16,16,3,3,8,12,2,\n"
                         "fc,1,1,1,1,12,10,1,\n")
    npu_rows = layer_rows(str(p), "16x16", "ws", "scalesim")
    wl = from_scalesim_csv(p)
    fwd = [op.gemms[0] for op in wl.ops if op.phase == Phase.FORWARD and op.gemms]
    assert [(g.m, g.n, g.k) for g in fwd] == [(r["m"], r["n"], r["k"]) for r in npu_rows]
    assert fwd[0].m == 8 * 8


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_dims, min_size=1, max_size=6), batch=st.integers(1, 3))
def test_any_conv_topology_imports_with_scalesims_macs(
        tmp_path: Path, rows: list[tuple[int, ...]], batch: int) -> None:
    text = "Layer name,H,W,R,S,C,N,Strides,\n" + "".join(
        f"L{i},{','.join(map(str, r))},\n" for i, r in enumerate(rows))
    p = _write(tmp_path, text)
    topo = read_rows(p)
    wl = from_scalesim_csv(p, batch=batch)
    wl.check()
    fwd = sum(op.macs for op in wl.ops if op.phase == Phase.FORWARD)
    assert fwd == batch * sum(t.macs for t in topo)
    bwd = sum(op.macs for op in wl.ops if op.phase == Phase.BACKWARD)
    assert bwd == 2 * fwd - batch * topo[0].macs


def test_missing_or_empty_topologies_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TmhwError, match="cannot read"):
        from_scalesim_csv(tmp_path / "nope.csv")
    with pytest.raises(TmhwError, match="no layer rows"):
        from_scalesim_csv(_write(tmp_path, "Layer,M,N,K,\n\n"))
    with pytest.raises(TmhwError, match="batch"):
        from_scalesim_csv(_write(tmp_path, GPT2_GEMM), batch=0)
