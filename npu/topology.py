"""SCALE-Sim topology CSVs, read exactly as scalesim 3.0.0 reads them
(``scalesim/topology_utils.py``: ``load_arrays_conv`` and ``load_arrays_gemm``).

Conv form, one layer per row after a header row::

    Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter,
        Strides,          (one line in the file)
    conv1, 224, 224, 7, 7, 3, 64, 2,

GEMM form (``-i gemm`` in SCALE-Sim)::

    Layer, M, N, K,
    fc1, 256, 128, 512,

SCALE-Sim's rules, kept here:

* the first line is a header and is skipped whatever it holds; blank lines are skipped;
* each line is stripped and split on ``,`` and the *last field is dropped*, so a row must end
  with a comma (without it the last number is lost);
* conv: one stride for both axes (the 8th field); an optional 9th field is an ``N:M``
  sparsity ratio (default ``1:1``); a layer whose name contains ``DP`` is depth-wise and
  becomes one single-channel layer per channel, named ``<name>Channel_<i>``; a filter larger
  than the input is an error; there is no padding, and the output size is SCALE-Sim's
  ``ceil((H - R + stride) / stride)``. That is (H - R) // stride + 1 when the stride divides
  H - R, and one more otherwise (SCALE-Sim then counts a partial window as an output: a
  1 x 1 / 2 layer on 56 x 56 gives 29 x 29, not 28 x 28). ``npu.dataflow.conv_to_gemm`` is
  the exact lowering; to describe a real layer in a topology CSV, give the input size for
  which both agree (55 instead of 56 in that example);
* gemm: ``M, N, K`` (optional 5th field: sparsity) become a conv with an M x K input, a
  1 x K filter, 1 channel, N filters and stride 1, so GEMM (M, N, K) maps to itself.

Field values go through Python's ``int()`` as in SCALE-Sim. Sparsity is parsed and kept but
does not change cycles (SCALE-Sim's sparsity support is off unless its config enables it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tmhw.sim.errors import TmhwError


@dataclass(frozen=True, slots=True)
class TopologyLayer:
    """One layer as SCALE-Sim holds it (GEMM rows already turned into their conv form)."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filt_h: int
    filt_w: int
    channels: int
    num_filters: int
    stride_h: int
    stride_w: int
    sparsity_n: int = 1
    sparsity_m: int = 1

    @property
    def ofmap_h(self) -> int:
        return _scalesim_out(self.ifmap_h, self.filt_h, self.stride_h)

    @property
    def ofmap_w(self) -> int:
        return _scalesim_out(self.ifmap_w, self.filt_w, self.stride_w)

    @property
    def gemm(self) -> tuple[int, int, int]:
        """(M, N, K) = (output pixels, filters, window size), SCALE-Sim's lowering."""
        return (self.ofmap_h * self.ofmap_w, self.num_filters,
                self.filt_h * self.filt_w * self.channels)

    @property
    def macs(self) -> int:
        m, n, k = self.gemm
        return m * n * k


def _scalesim_out(ifmap: int, filt: int, stride: int) -> int:
    """SCALE-Sim's ``int(math.ceil((ifmap - filt + stride) / stride))``, in integers."""
    return -(-(ifmap - filt + stride) // stride)


def _int(text: str, where: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise TmhwError(f"{where}: {text.strip()!r} is not an integer") from None


def _layer(name: str, vals: list[int], sparsity: str, where: str) -> TopologyLayer:
    sp = sparsity.strip().split(":")
    if len(sp) < 2:
        raise TmhwError(f"{where}: sparsity {sparsity.strip()!r} is not of the form N:M")
    h, w, r, s, c, n, sh, sw = vals[:8]
    layer = TopologyLayer(name, h, w, r, s, c, n, sh, sw, sparsity_n=_int(sp[0], where),
                          sparsity_m=_int(sp[1], where))
    if layer.filt_h > layer.ifmap_h:
        raise TmhwError(f"{where}: filter height cannot be larger than IFMAP height")
    if layer.filt_w > layer.ifmap_w:
        raise TmhwError(f"{where}: filter width cannot be larger than IFMAP width")
    if min(vals[:8]) < 1:
        raise TmhwError(f"{where}: sizes and strides must be >= 1")
    return layer


def parse_conv(lines: list[str], source: str = "<csv>") -> list[TopologyLayer]:
    """Conv-form rows (SCALE-Sim's ``load_arrays_conv``)."""
    out: list[TopologyLayer] = []
    first = True
    for no, raw in enumerate(lines, start=1):
        row = raw.strip()
        if first or row == "":
            first = False
            continue
        where = f"{source}:{no}"
        elems = row.split(",")[:-1]
        if len(elems) < 8:
            raise TmhwError(f"{where}: a conv row needs 8 fields and a trailing comma "
                            f"(name, H, W, R, S, C, N, stride,), got {row!r}")
        elems = elems[0:8] + [elems[7]] + elems[8:]
        if len(elems) < 10:
            elems.append("1:1")
        sparsity = elems.pop()
        name = elems[0].strip()
        vals = [_int(e, where) for e in elems[1:]]
        if "DP" in name:
            vals[4] = 1
            out.extend(_layer(f"{name}Channel_{i}", vals, sparsity, where)
                       for i in range(_int(elems[5], where)))
        else:
            out.append(_layer(name, vals, sparsity, where))
    return out


def parse_gemm(lines: list[str], source: str = "<csv>") -> list[TopologyLayer]:
    """GEMM-form rows (SCALE-Sim's ``load_arrays_gemm``)."""
    out: list[TopologyLayer] = []
    first = True
    for no, raw in enumerate(lines, start=1):
        row = raw.strip()
        if first:
            first = False
            continue
        if row == "":
            continue
        where = f"{source}:{no}"
        elems = row.split(",")[:-1]
        if len(elems) < 4:
            raise TmhwError(f"{where}: a GEMM row needs 4 fields and a trailing comma "
                            f"(name, M, N, K,), got {row!r}")
        m, n, k = (_int(e, where) for e in elems[1:4])
        sparsity = elems[4] if len(elems) >= 5 else "1:1"
        out.append(_layer(elems[0].strip(), [m, k, 1, k, 1, n, 1, 1], sparsity, where))
    return out


def detect_form(lines: list[str]) -> str:
    """``gemm`` if the first data row has fewer than 8 fields (SCALE-Sim needs ``-i gemm``
    to be told; a conv row always has at least 8), else ``conv``."""
    for raw in lines[1:]:
        row = raw.strip()
        if row:
            return "gemm" if len(row.split(",")[:-1]) < 8 else "conv"
    return "conv"


def read_topology(path: str | Path, form: str = "auto") -> list[TopologyLayer]:
    """Layers of a SCALE-Sim topology CSV; ``form`` is ``conv``, ``gemm`` or ``auto``."""
    p = Path(path)
    try:
        # text mode translates \r and \r\n as iterating a file does in SCALE-Sim
        lines = p.read_text().split("\n")
    except OSError as e:
        raise TmhwError(f"topology: cannot read {path}: {e.strerror}") from None
    if form == "auto":
        form = detect_form(lines)
    if form == "conv":
        return parse_conv(lines, p.name)
    if form == "gemm":
        return parse_gemm(lines, p.name)
    raise TmhwError(f"topology form: one of conv, gemm, auto, got {form!r}")
