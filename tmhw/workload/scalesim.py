"""SCALE-Sim topology CSVs as training workloads.

The file is read by the project's one SCALE-Sim reader, ``npu.topology.read_rows``, as
SCALE-Sim 3.0.0 reads it (field meanings, trailing comma, output size: see that module).
What a row's numbers mean here (``batch`` is ``--batch``/``workload.batch``; a file's
own batch, as SCALE-Sim runs it, is 1):

- a conv row (``Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width,
  Channels, Num Filter, Strides``) is one sample's H x W x C input, N filters of
  R x S x C, stride; its forward GEMM is M = output pixels x batch, N = Num Filter,
  K = R S C, with R S C N weights. A depth-wise row (a name containing "DP", which
  SCALE-Sim runs as ``Channels`` one-channel layers of ``Num Filter`` filters each) is
  one grouped convolution (groups = Channels).
- a GEMM row (``Layer, M, N, K``) is a linear layer of M rows per sample (tokens, or 1
  for a fully connected layer), K inputs and N outputs: forward GEMM (batch M) x K by
  K x N, with K N weights and no bias.

A topology lists only the GEMM layers. For training, the layers are chained in file
order: layer i reads layer i-1's output. Where the sizes disagree (pooling, padding,
residual adds, concatenation and reshapes between the layers are not in the file) a
vector op ``<layer>.in`` stands in for the missing layers and turns the previous output
into an input of the needed size. A conv layer's output size is SCALE-Sim's (a partial
window counts). Every layer is weighted (a CSV cannot say that a GEMM such as Q K^T has
no weight); the backward (input and weight gradients) and optimizer step derive as for
the zoo, by ``WorkloadBuilder.finish``.
"""

from __future__ import annotations

from pathlib import Path

from npu.topology import read_rows
from tmhw.sim.errors import ConfigError
from tmhw.workload.builder import WorkloadBuilder, check_arguments
from tmhw.workload.graph import Workload


def from_scalesim_csv(path: str | Path, batch: int = 1, *, page_size: int = 4096,
                      optimizer: str = "adam", form: str = "auto",
                      name: str | None = None) -> Workload:
    """A training iteration of the topology at ``path``: its layers as the forward pass
    (chained in file order, see the module docstring), the backward derived, and the
    optimizer step. The workload's name is the file's stem unless given."""
    check_arguments(batch, page_size, optimizer)
    topo = read_rows(path, form)
    b = WorkloadBuilder(name or Path(path).stem, batch, optimizer=optimizer)
    seen: dict[str, int] = {}
    x: int | None = None
    for t in topo:
        seen[t.name] = seen.get(t.name, 0) + 1
        lname = t.name if seen[t.name] == 1 else f"{t.name}#{seen[t.name]}"
        in_elems = batch * t.ifmap_h * t.ifmap_w * t.channels
        if x is None:
            x = b.input(f"{lname}.ifmap", in_elems)
        elif b.tensors[x].nbytes != in_elems * b.dtype_bytes:
            prev = b.tensors[x].nbytes // b.dtype_bytes
            x = b.eltwise(f"{lname}.in", (x,), max(prev, in_elems), 1.0,
                          out_elems=in_elems, saves="none")
        if t.form == "gemm":
            m, n, k = t.ifmap_h, t.num_filters, t.filt_w
            x = b.linear(lname, x, batch * m, k, n, bias=False)
        else:
            groups = t.channels if t.depthwise else 1
            n = t.num_filters * groups
            x, _, _ = b.conv(lname, x, t.ifmap_h, t.ifmap_w, t.channels, t.filt_h,
                             t.filt_w, n, t.stride, groups=groups,
                             ofmap=(t.ofmap_h, t.ofmap_w))
    assert x is not None
    return b.finish(x, page_size)



# -- a topology file as a workload source (``tmhw.workload.sources``) --------------------
def check(path: str, batch: int | None, seq: int | None, layers: int | None) -> None:
    """A topology's layers are fixed: no sequence length or depth to set (``batch``
    multiplies each layer's output pixels or rows). That the file exists is the
    registry's check, made for every file source."""
    for field, v in (("seq", seq), ("layers", layers)):
        if v is not None:
            raise ConfigError(field, v, f"leave it out: {Path(path).name} is a SCALE-Sim "
                              "topology, whose layers are fixed")


def build_training(path: str, *, batch: int | None, seq: int | None, layers: int | None,
                   page_size: int, optimizer: str) -> Workload:
    """``from_scalesim_csv`` under the sources' signature (``batch`` None: 1, a
    topology's own batch, as SCALE-Sim runs it)."""
    check(path, batch, seq, layers)
    return from_scalesim_csv(path, 1 if batch is None else batch, page_size=page_size,
                             optimizer=optimizer)
