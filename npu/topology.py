"""SCALE-Sim topology CSVs: the project's one reader, for ``tmhw npu cycles`` and for
``tmhw workload show`` / ``tmhw.workload.from_scalesim_csv``.

It reads a file exactly as scalesim 3.0.0 (PyPI; the same files as
scalesim-project/scale-sim-v3) does in ``scalesim/topology_utils.py``:
``topologies.load_arrays_conv``, ``topologies.load_arrays_gemm`` and
``topologies.append_topo_arrays`` for the fields, ``topologies.topo_calc_hyperparams``
for the output size, which ``scalesim/compute/operand_matrix.py``
(``operand_matrix.set_params``, through ``get_layer_ofmap_dims``) uses unchanged.

Conv form, one layer per row after a header row::

    Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels,
        Num Filter, Strides, [Sparsity,]          (one line in the file)
    conv1, 224, 224, 7, 7, 3, 64, 2,

GEMM form (``-i gemm`` in SCALE-Sim)::

    Layer, M, N, K, [Sparsity,]
    fc1, 256, 128, 512,

SCALE-Sim's rules, kept here:

* the first line is a header and is skipped whatever it holds; blank lines are skipped
  (in the conv form a blank first line is taken as the header, as in SCALE-Sim);
* each line is stripped and split on ``,`` and the *last field is dropped*, so a row ends
  with a comma: without it the last number is lost (a row then too short is refused
  here, where SCALE-Sim stops with an IndexError or an assertion);
* conv: ``Strides`` is the stride of both axes (``load_arrays_conv`` copies the 8th field
  into the column stride); the optional 9th field is an ``N:M`` sparsity ratio (default
  ``1:1``; scale-sim-v3's ``topologies/sparsity/conv.csv`` heads it "Sparsity"). A layer
  whose name contains ``DP`` is depth-wise and SCALE-Sim runs it as one single-channel
  layer per channel, named ``<name>Channel_<i>`` (``read_topology``; ``read_rows`` keeps
  the row whole). A filter larger than the input is an error. There is no padding, and
  the output size is ``ceil((H - R + stride) / stride)``: (H - R) // stride + 1 when the
  stride divides H - R, and one more otherwise (SCALE-Sim counts the partial window: a
  1 x 1 / 2 layer on 56 x 56 gives 29 x 29, not 28 x 28). To describe a real layer, give
  the input size for which both agree (55 instead of 56 in that example);
* gemm: ``M, N, K`` (optional 5th field: sparsity) become a conv with an M x K input, a
  1 x K filter, 1 channel, N filters and stride 1, so GEMM (M, N, K) maps to itself.

Where the project had two readers, they differed, and SCALE-Sim 3.0.0 settles each point
as the ``npu`` reader had it:

=============================  =========================  =============================
point                          ``npu`` reader (right)     workload reader (wrong)
=============================  =========================  =============================
9th conv field                 sparsity ``N:M``           column stride
trailing comma                 required (last field       optional (trailing empty
                               dropped)                   fields ignored)
output size                    ceil, partial window       floor, (H - R) // s + 1
                               counted
=============================  =========================  =============================

The workload reader also skipped rows of bare commas and read rows with extra columns
(scale-sim-v2/v3's ``topologies/conv_nets/Resnet50.csv``); SCALE-Sim 3.0.0 cannot read
that file (the extra columns land in its sparsity field: ``IndexError``), so neither can
this reader.

Beyond SCALE-Sim, a row it would stop on or misread is refused with one line naming the
file, line, field and value: a field that is not an integer, a size or stride below 1
(SCALE-Sim divides by the stride), a sparsity not of the form ``N:M``, and more fields
than the form has (SCALE-Sim would shift them into its sparsity columns). The form is
``gemm`` when the header's second column is ``M`` (as in every GEMM topology SCALE-Sim
ships), else ``conv``, unless given. Sparsity is parsed and kept but does not change
cycles (SCALE-Sim's sparsity support is off unless its config enables it).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from tmhw.sim.errors import TmhwError

#: the numeric fields of each form, in file order, as SCALE-Sim's headers name them
CONV_FIELDS = ("IFMAP Height", "IFMAP Width", "Filter Height", "Filter Width", "Channels",
               "Num Filter", "Strides")
GEMM_FIELDS = ("M", "N", "K")
FORMS = ("auto", "conv", "gemm")

_ROW = {"conv": "Layer name, " + ", ".join(CONV_FIELDS) + "[, Sparsity N:M],",
        "gemm": "Layer, M, N, K[, Sparsity N:M],"}


@dataclass(frozen=True, slots=True)
class TopologyLayer:
    """One layer as SCALE-Sim holds it, GEMM rows in their conv form (``form`` says which
    form the row was read in). ``depthwise`` marks a conv row whose name contains ``DP``
    before SCALE-Sim splits it into its channels (``read_rows``)."""

    name: str
    ifmap_h: int
    ifmap_w: int
    filt_h: int
    filt_w: int
    channels: int
    num_filters: int
    stride: int = 1
    sparsity_n: int = 1
    sparsity_m: int = 1
    form: str = "conv"
    depthwise: bool = False

    @property
    def ofmap_h(self) -> int:
        return _scalesim_out(self.ifmap_h, self.filt_h, self.stride)

    @property
    def ofmap_w(self) -> int:
        return _scalesim_out(self.ifmap_w, self.filt_w, self.stride)

    @property
    def mnk(self) -> tuple[int, int, int]:
        """(M, N, K) = (output pixels, filters, window size), SCALE-Sim's lowering; for a
        depth-wise row, that of one of its single-channel layers."""
        c = 1 if self.depthwise else self.channels
        return (self.ofmap_h * self.ofmap_w, self.num_filters,
                self.filt_h * self.filt_w * c)

    @property
    def macs(self) -> int:
        m, n, k = self.mnk
        return m * n * k * (self.channels if self.depthwise else 1)

    def scalesim_layers(self) -> list[TopologyLayer]:
        """The layers SCALE-Sim runs for this row: a depth-wise row becomes ``channels``
        single-channel layers ``<name>Channel_<i>``, any other row itself."""
        if not self.depthwise:
            return [self]
        return [replace(self, name=f"{self.name}Channel_{i}", channels=1, depthwise=False)
                for i in range(self.channels)]


def _scalesim_out(ifmap: int, filt: int, stride: int) -> int:
    """SCALE-Sim's ``int(math.ceil((ifmap - filt + stride) / stride))``, in integers."""
    return -(-(ifmap - filt + stride) // stride)


def _positive(text: str, where: str, field: str) -> int:
    try:
        v = int(text.strip())
    except ValueError:
        raise TmhwError(f"{where}: {field} {text.strip()!r} is not an integer") from None
    if v < 1:
        raise TmhwError(f"{where}: {field} {v} is not allowed; a positive integer")
    return v


def _sparsity(text: str, where: str, form: str) -> tuple[int, int]:
    sp = text.strip().split(":")
    if len(sp) < 2:
        raise TmhwError(f"{where}: Sparsity {text.strip()!r} is not of the form N:M "
                        f"(a {form} row is {_ROW[form]})")
    try:
        return int(sp[0]), int(sp[1])
    except ValueError:
        raise TmhwError(f"{where}: Sparsity {text.strip()!r} is not of the form N:M with "
                        "integers N and M") from None


def _fields(row: str, where: str, form: str, least: int, most: int) -> list[str]:
    """SCALE-Sim's ``row.split(',')[:-1]``, checked for its length."""
    elems = row.split(",")[:-1]
    if len(elems) < least:
        if not row.endswith(","):
            hint = "; SCALE-Sim drops the field after the last comma: end the row with one"
        elif form == "conv":
            hint = "; a GEMM topology has M as its header's second column"
        else:
            hint = ""
        raise TmhwError(f"{where}: a {form} row is {_ROW[form]} got {len(elems)} "
                        f"field(s) in {row!r}{hint}")
    if len(elems) > most:
        raise TmhwError(f"{where}: a {form} row has at most {most} fields ({_ROW[form]}), "
                        f"got {len(elems)} in {row!r}")
    return elems


def _check_fits(layer: TopologyLayer, where: str) -> TopologyLayer:
    if layer.filt_h > layer.ifmap_h or layer.filt_w > layer.ifmap_w:
        raise TmhwError(f"{where}: filter {layer.filt_h}x{layer.filt_w} larger than IFMAP "
                        f"{layer.ifmap_h}x{layer.ifmap_w}; SCALE-Sim allows no padding, "
                        "so the filter must fit")
    return layer


def parse_conv(lines: list[str], source: str = "<csv>") -> list[TopologyLayer]:
    """Conv-form rows, one per row (SCALE-Sim's ``load_arrays_conv`` before it splits a
    depth-wise row)."""
    out: list[TopologyLayer] = []
    first = True
    for no, raw in enumerate(lines, start=1):
        row = raw.strip()
        if first or row == "":
            first = False
            continue
        where = f"{source}:{no}"
        elems = _fields(row, where, "conv", 8, 9)
        h, w, r, s, c, n, st = (_positive(e, where, f)
                                 for e, f in zip(elems[1:8], CONV_FIELDS, strict=True))
        sp_n, sp_m = _sparsity(elems[8], where, "conv") if len(elems) == 9 else (1, 1)
        name = elems[0].strip()
        out.append(_check_fits(TopologyLayer(name, h, w, r, s, c, n, st, sp_n, sp_m, "conv",
                                             "DP" in name), where))
    return out


def parse_gemm(lines: list[str], source: str = "<csv>") -> list[TopologyLayer]:
    """GEMM-form rows (SCALE-Sim's ``load_arrays_gemm``)."""
    out: list[TopologyLayer] = []
    for no, raw in enumerate(lines[1:], start=2):
        row = raw.strip()
        if row == "":
            continue
        where = f"{source}:{no}"
        elems = _fields(row, where, "gemm", 4, 5)
        m, n, k = (_positive(e, where, f) for e, f in zip(elems[1:4], GEMM_FIELDS, strict=True))
        sp_n, sp_m = _sparsity(elems[4], where, "gemm") if len(elems) == 5 else (1, 1)
        out.append(TopologyLayer(elems[0].strip(), m, k, 1, k, 1, n, 1, sp_n, sp_m, "gemm"))
    return out


def detect_form(lines: list[str]) -> str:
    """``gemm`` if the header's second column is ``M`` (any case), else ``conv``;
    SCALE-Sim itself must be told (``-i gemm``)."""
    header = lines[0].split(",") if lines else []
    return "gemm" if len(header) > 1 and header[1].strip().lower() == "m" else "conv"


def read_rows(path: str | Path, form: str = "auto") -> list[TopologyLayer]:
    """The rows of a SCALE-Sim topology CSV, one layer each (a depth-wise row whole);
    ``form`` is ``conv``, ``gemm`` or ``auto``. Raises TmhwError naming the file, line,
    field and value of a bad row; a file that is not UTF-8 text, missing, or without a
    layer row is one line too."""
    if form not in FORMS:
        raise TmhwError(f"topology form: {form!r} is unknown; one of {', '.join(FORMS)}")
    p = Path(path)
    try:
        # text mode translates \r and \r\n as iterating a file does in SCALE-Sim
        lines = p.read_text(encoding="utf-8").split("\n")
    except OSError as e:
        raise TmhwError(f"topology: cannot read {path}: {e.strerror}") from None
    except UnicodeDecodeError as e:
        raise TmhwError(f"topology: {path} is not UTF-8 text (a topology CSV must be): "
                        f"byte {e.start} is {e.object[e.start:e.start + 1]!r}") from None
    if form == "auto":
        form = detect_form(lines)
    rows = parse_conv(lines, p.name) if form == "conv" else parse_gemm(lines, p.name)
    if not rows:
        raise TmhwError(f"topology: {path} has no layer rows; a header line, then one "
                        f"row per layer: {_ROW[form]}")
    return rows


def read_topology(path: str | Path, form: str = "auto") -> list[TopologyLayer]:
    """The layers SCALE-Sim runs for the topology CSV at ``path``: its rows, each
    depth-wise row split into its single-channel layers (``read_rows``)."""
    return [lay for row in read_rows(path, form) for lay in row.scalesim_layers()]
