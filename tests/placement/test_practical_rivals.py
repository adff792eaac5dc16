"""Property test of the rivals practitioners deploy (``ssdtrain``, ``zero-infinity``,
``recompute``, ``capuchin``, TM-Training with each recomputation). Those that rebuild the
iteration with recomputation cannot run the hand-built graphs of
``tests/test_executor.py``, so all of them run small models the workload sources build
(a GPT-2 of random width, depth and vocabulary from a Hugging Face config; ResNet-18),
at random capacities and SSD counts. In every run that fits: HBM never over its
capacity, every operand of the computing op resident, the books balanced and no page
lost, the bytes between the tiers conserved, no bound beaten, and each recompute op
equal to the forward op it replays in GEMMs, vector work and bytes written."""

from __future__ import annotations

import json
from collections.abc import Generator
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tmhw
from tmhw.sim.errors import TmhwError
from tmhw.system import System
from tmhw.workload.graph import Phase, Workload

#: (policy, its recomputation parameter)
POLICIES = (("ssdtrain", ""), ("zero-infinity", ""), ("recompute", ""), ("capuchin", ""),
            ("tm-training", 'policy.tm_training.recompute="selective"'),
            ("tm-training", 'policy.tm_training.recompute="layer"'),
            ("tm-training", 'policy.tm_training.recompute="tensors"'))


@st.composite
def models(draw: st.DrawFn, tmp: Path) -> list[str]:
    """The ``workload.*`` overrides of a small model."""
    if draw(st.booleans()):
        cfg = {"architectures": ["GPT2LMHeadModel"], "n_embd": draw(st.sampled_from(
            [64, 128, 256])), "n_layer": draw(st.integers(1, 3)), "n_head": 4,
            "n_positions": 1024, "vocab_size": draw(st.sampled_from([256, 1024, 4096]))}
        path = tmp / f"gpt2-{cfg['n_embd']}-{cfg['n_layer']}-{cfg['vocab_size']}.json"
        path.write_text(json.dumps(cfg))
        return [f"workload.model=hf:{path}", f"workload.seq={draw(st.sampled_from([64, 256]))}",
                f"workload.batch={draw(st.integers(1, 8))}"]
    return ["workload.model=resnet18", f"workload.batch={draw(st.integers(1, 4))}"]


def replays_its_forward_op(wl: Workload) -> None:
    fwd = {op.name: op for op in wl.ops if op.phase == Phase.FORWARD}
    for op in wl.ops:
        if not op.name.endswith(".recompute"):
            continue
        f = fwd[op.name.removesuffix(".recompute") + ".fwd"]
        assert op.phase == Phase.BACKWARD
        assert (op.gemms, op.vector_elems, op.vector_ops_per_elem) == \
            (f.gemms, f.vector_elems, f.vector_ops_per_elem)
        assert [wl.tensors[t].nbytes for t in op.writes] == \
            [wl.tensors[t].nbytes for t in f.writes]


def watch_operands(s: System) -> None:
    """Check, as each op starts and ends computing, that HBM holds its operands."""
    op_of = {id(t): i for i, t in enumerate(s.executor.tasks)}
    execute = s.executor.npu.execute

    def held(i: int | None) -> None:
        if i is None or s.executor.streamed[i]:
            return                  # a streamed op holds a window of its operands
        for t in s.workload.ops[i].tensors:
            p0, p1 = s.executor.ranges[t]
            assert s.res.in_hbm[p0:p1].all(), \
                f"{s.workload.ops[i].name} computes without {s.workload.tensors[t].name}"

    def watched(task: Any) -> Generator[Any, Any, Any]:
        i = op_of.get(id(task))
        held(i)
        result = yield from execute(task)
        held(i)
        return result

    s.executor.npu.execute = watched  # type: ignore[method-assign]


@settings(max_examples=14, deadline=None, suppress_health_check=[
    HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), policy=st.sampled_from(POLICIES), ratio=st.floats(0.2, 1.0),
       devices=st.sampled_from([1, 2, 4]))
def test_a_practical_rival_keeps_the_machines_invariants(
        tmp_path: Path, data: st.DataObject, policy: tuple[str, str], ratio: float,
        devices: int) -> None:
    name, extra = policy
    sets = [*data.draw(models(tmp_path)), f"policy.name={name}",
            f"policy.hbm_ratio={ratio}", f"flash.devices={devices}", "run.iterations=2",
            *([extra] if extra else [])]
    try:
        s = System(tmhw.load_config("quick", sets))
    except TmhwError as e:
        assert str(e).startswith("policy.hbm_ratio") and "\n" not in str(e), e
        return
    replays_its_forward_op(s.workload)
    watch_operands(s)
    rep = s.run()                            # ``res.check``: books balance, no page lost
    assert rep["run_total"]["hbm_peak_occupancy_bytes"] <= rep["policy"]["hbm_capacity_bytes"]
    sysr = rep["run_total"]["system"]
    dma, fl = sysr["dma"], sysr["flash"]
    assert (fl["bytes_read"], fl["bytes_written"]) == (
        dma["fetch_bytes"] + dma["inplace_bytes"], dma["writeback_bytes"])
    # no traffic ratio where the bound is no bytes (the footprint fits)
    traffic = rep["bounds"]["traffic_ratio"]
    assert rep["bounds"]["time_ratio"] >= 1 and (traffic is None or traffic >= 1)
