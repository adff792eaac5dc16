"""SCALE-Sim topology CSVs as training workloads.

SCALE-Sim (Samajdar et al., ISPASS 2020; scale-sim-v2/v3, ``scalesim/topology_utils.py``)
describes a network as one CSV row per layer, in one of two forms:

- conv: ``Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels,
  Num Filter, Strides[, Stride width]``. There is no padding field: the output is
  (H - R) // stride + 1 by (W - S) // stride + 1, and SCALE-Sim asserts R <= H, S <= W.
  A layer whose name contains "DP" is depthwise: SCALE-Sim runs it as ``Channels``
  one-channel layers of ``Num Filter`` filters each, here one grouped convolution
  (groups = Channels).
- GEMM (``scale.py -i gemm``): ``Layer, M, N, K``; SCALE-Sim turns a row into the conv
  row (H = M, W = K, R = 1, S = K, C = 1, N, stride 1), so M output rows, N columns and
  a window of K. Here it is a linear layer of M rows per sample, K inputs, N outputs.

The first line is a header and is skipped, as are blank rows (SCALE-Sim skips only
empty lines; rows of bare commas, found in some of its own topology files, are also
skipped here). SCALE-Sim drops the last comma-separated field of every row, expecting a
trailing comma; here trailing empty fields and anything after the stride fields (such as
a ``#dw`` note, or the extra columns of its Resnet50.csv) are ignored, so rows read the
same with or without the trailing comma. The form is taken from the header (second
column "M") unless given.

A topology lists only the GEMM layers. For training, the layers are chained in file
order: layer i reads layer i-1's output. Where the sizes disagree (pooling, padding,
residual adds, concatenation and reshapes between the layers are not in the file) a
vector op ``<layer>.in`` stands in for the missing layers and turns the previous output
into an input of the needed size. Batch multiplies the output pixels (conv) or M (GEMM).
Every layer is weighted (a CSV cannot say that a GEMM such as Q K^T has no weight); the
backward (input and weight gradients) and optimizer step derive as for the zoo.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tmhw.sim.errors import TmhwError
from tmhw.workload.builder import OPTIMIZER_OPS_PER_ELEM, WorkloadBuilder
from tmhw.workload.graph import Workload

CONV_FIELDS = ("IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width", "Channels",
               "Num Filter", "Strides")
GEMM_FIELDS = ("M", "N", "K")


@dataclass(frozen=True, slots=True)
class TopologyLayer:
    """One row of a topology CSV, in SCALE-Sim's conv terms (GEMM rows converted as
    SCALE-Sim converts them). ``gemm`` marks a row read in the GEMM form."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filt_h: int
    filt_w: int
    channels: int
    num_filt: int
    stride_h: int = 1
    stride_w: int = 1
    gemm: bool = False

    @property
    def depthwise(self) -> bool:
        return not self.gemm and "DP" in self.name

    @property
    def ofmap(self) -> tuple[int, int]:
        return ((self.ifmap_h - self.filt_h) // self.stride_h + 1,
                (self.ifmap_w - self.filt_w) // self.stride_w + 1)

    @property
    def mnk(self) -> tuple[int, int, int]:
        """SCALE-Sim's lowered GEMM of one sample (per depthwise channel group):
        M = output pixels, N = filters, K = R * S * C (C = 1 for a depthwise group)."""
        ho, wo = self.ofmap
        c = 1 if self.depthwise else self.channels
        return ho * wo, self.num_filt, self.filt_h * self.filt_w * c

    @property
    def macs(self) -> int:
        m, n, k = self.mnk
        return m * n * k * (self.channels if self.depthwise else 1)


def _int(text: str, where: str, field: str) -> int:
    try:
        v = int(text.strip())
    except ValueError:
        raise TmhwError(f"{where}: {field} {text.strip()!r} is not an integer") from None
    if v < 1:
        raise TmhwError(f"{where}: {field} {v} is not allowed; a positive integer")
    return v


def read_topology(path: str | Path, form: str = "auto") -> list[TopologyLayer]:
    """Parse a SCALE-Sim topology CSV; ``form`` is "conv", "gemm" or "auto" (from the
    header). Raises TmhwError naming the file, line and field of a bad row."""
    if form not in ("auto", "conv", "gemm"):
        raise TmhwError(f"form: {form!r} is unknown; one of auto, conv, gemm")
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise TmhwError(f"topology: cannot read {p}: {e.strerror}") from None
    if not lines:
        raise TmhwError(f"topology: {p} is empty; a header line and one row per layer")
    header = [f.strip().lower() for f in lines[0].split(",")]
    if form == "auto":
        form = "gemm" if len(header) > 1 and header[1] == "m" else "conv"
    layers: list[TopologyLayer] = []
    for ln, row in enumerate(lines[1:], start=2):
        fields = [f.strip() for f in row.split(",")]
        if not any(fields):
            continue
        where = f"{p.name} line {ln}"
        name = fields[0]
        if form == "gemm":
            if len(fields) < 4:
                raise TmhwError(f"{where}: a GEMM row needs Layer, M, N, K")
            m, n, k = (_int(fields[i], where, f) for i, f in enumerate(GEMM_FIELDS, 1))
            layers.append(TopologyLayer(name, m, k, 1, k, 1, n, 1, 1, gemm=True))
            continue
        if len(fields) < 8 or not all(fields[1:8]):
            raise TmhwError(f"{where}: a conv row needs Layer name, "
                            f"{', '.join(CONV_FIELDS)}")
        h, w, r, s, c, n, sh = (_int(fields[i], where, f) for i, f in enumerate(CONV_FIELDS, 1))
        sw = sh
        if len(fields) > 8 and fields[8].isdigit():
            sw = _int(fields[8], where, "Stride width")
        if r > h or s > w:
            raise TmhwError(f"{where}: filter {r}x{s} larger than IFMAP {h}x{w}; "
                            "SCALE-Sim allows no padding, so the filter must fit")
        layers.append(TopologyLayer(name, h, w, r, s, c, n, sh, sw))
    if not layers:
        raise TmhwError(f"topology: {p} has no layer rows")
    return layers


def from_scalesim_csv(path: str | Path, batch: int = 1, *, page_size: int = 4096,
                      optimizer: str = "adam", form: str = "auto",
                      name: str | None = None) -> Workload:
    """A training iteration of the topology at ``path``: its layers as the forward pass
    (chained in file order, see the module docstring), the backward derived, and the
    optimizer step. The workload's name is the file's stem unless given."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise TmhwError(f"batch: {batch!r} is not allowed; a positive integer")
    if optimizer not in OPTIMIZER_OPS_PER_ELEM:
        raise TmhwError(f"optimizer: {optimizer!r} is unknown; one of "
                        f"{', '.join(sorted(OPTIMIZER_OPS_PER_ELEM))}")
    if page_size < 1 or page_size & (page_size - 1):
        raise TmhwError(f"page_size: {page_size!r} is not allowed; a power of two")
    topo = read_topology(path, form)
    b = WorkloadBuilder(name or Path(path).stem, batch, optimizer=optimizer)
    seen: dict[str, int] = {}
    x: int | None = None
    for t in topo:
        seen[t.name] = seen.get(t.name, 0) + 1
        lname = t.name if seen[t.name] == 1 else f"{t.name}#{seen[t.name]}"
        in_elems = batch * t.ifmap_h * t.ifmap_w * (1 if t.gemm else t.channels)
        if x is None:
            x = b.input(f"{lname}.ifmap", in_elems)
        elif b.tensors[x].nbytes != in_elems * b.dtype_bytes:
            prev = b.tensors[x].nbytes // b.dtype_bytes
            x = b.eltwise(f"{lname}.in", (x,), max(prev, in_elems), 1.0,
                          out_elems=in_elems, saves="none")
        if t.gemm:
            m, n, k = t.ifmap_h, t.num_filt, t.filt_w
            x = b.linear(lname, x, batch * m, k, n, bias=False)
        else:
            groups = t.channels if t.depthwise else 1
            n = t.num_filt * groups
            x, _, _ = b.conv(lname, x, t.ifmap_h, t.ifmap_w, t.channels, t.filt_h,
                             t.filt_w, n, t.stride_h, groups=groups, stride_w=t.stride_w)
    assert x is not None
    return b.finish(x, page_size)

