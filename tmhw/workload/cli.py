"""``tmhw workload``: list the zoo and the sources, show a model's training footprint.

    tmhw workload list [--json]
    tmhw workload show MODEL [--batch B] [--seq S] [--layers L] [--optimizer NAME]
                       [--page-size BYTES] [--json]

MODEL is any ``workload.model`` value a source takes (``tmhw.workload.sources``): a zoo
name, or the path of a file such as a SCALE-Sim topology CSV (``*.csv``).
"""

from __future__ import annotations

import argparse
import json

from tmhw.sim.units import GiB
from tmhw.workload import sources
from tmhw.workload.builder import Transforms
from tmhw.workload.footprint import Footprint, footprint
from tmhw.workload.graph import Workload
from tmhw.workload.zoo import INFO


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``workload`` command and its sub-commands to ``sub``."""
    p = sub.add_parser("workload", help="DNN training workloads: the model zoo, footprints")
    wsub = p.add_subparsers(dest="workload_cmd", required=True)

    ls = wsub.add_parser("list", help="the zoo's models with their defaults, and the "
                         "workload sources")
    ls.add_argument("--json", action="store_true", help="print JSON")
    ls.set_defaults(func=_list)

    sh = wsub.add_parser("show", help="footprint of one training iteration")
    sh.add_argument("model", help="; or ".join(s.what for s in sources.SOURCES))
    sh.add_argument("--batch", type=int, default=None, help="batch size (model default)")
    sh.add_argument("--seq", type=int, default=None, help="sequence length (transformers)")
    sh.add_argument("--layers", type=int, default=None, help="layers (transformers)")
    sh.add_argument("--optimizer", default="adam",
                    help="sgd, sgd-momentum, adam, adamw or adafactor")
    sh.add_argument("--page-size", type=int, default=4096, help="bytes per page")
    sh.add_argument("--onnx-unknown", choices=("error", "memory"), default="error",
                    help="an ONNX op the NPU model does not map: refused, or run as an "
                         "element-wise op")
    sh.add_argument("--json", action="store_true", help="print JSON")
    sh.set_defaults(func=_show)


def _load(args: argparse.Namespace) -> Workload:
    from tmhw.cli import check_batch

    check_batch(args.batch)
    return sources.build(args.model, batch=args.batch, seq=args.seq, layers=args.layers,
                         page_size=args.page_size, optimizer=args.optimizer,
                         transforms=Transforms(onnx_unknown=args.onnx_unknown))


def _gb(n: int) -> str:
    """Bytes in GiB, as every command writes sizes (rates: GB/s and MB/s)."""
    return f"{n / GiB:10.3f} GiB"


def format_footprint(f: Footprint) -> str:
    """The human-readable table ``show`` prints."""
    shape = f"batch {f.batch}" + (f", seq {f.seq}" if f.seq else "")
    rows = [
        f"{f.model}: {shape}, {f.optimizer}, {f.params / 1e6:.2f}M parameters, "
        f"{f.ops} ops, {f.tensors} tensors, {f.pages} pages of {f.page_size} B",
        f"  weights (bf16)        {_gb(f.weights)}",
        f"  master weights (fp32) {_gb(f.master)}",
        f"  optimizer state       {_gb(f.optimizer_state)}",
        f"  weight gradients      {_gb(f.weight_grads)}",
        f"  model state           {_gb(f.model_state)}  ({f.bytes_per_param:.1f} B/param)",
        f"  activations saved     {_gb(f.activations_saved)}  (read by the backward)",
        f"  activations, all      {_gb(f.activations_all)}",
        f"  activation gradients  {_gb(f.activation_grads)}",
        f"  input                 {_gb(f.input)}",
        f"  peak live             {_gb(f.peak_live)}",
        f"  all tensors           {_gb(f.total)}",
        f"  MACs forward {f.forward_macs / 1e9:.1f} G, backward {f.backward_macs / 1e9:.1f} G",
    ]
    return "\n".join(rows)


def _show(args: argparse.Namespace) -> int:
    from tmhw.sim.progress import progress

    # Two steps, each linear in the layers: build the iteration's ops, then measure it
    # (a hundred thousand layers take about a minute).
    with progress(2, f"workload show {args.model}: build", "step") as bar:
        wl = _load(args)
        bar.set_description(f"workload show {args.model}: footprint")
        bar.update(1)
        f = footprint(wl)
        bar.update(1)
    print(json.dumps(as_json(wl, f), indent=2) if args.json else format_footprint(f))
    return 0


def as_json(wl: Workload, f: Footprint) -> dict[str, object]:
    """``workload show --json``: the footprint's fields, the headline counts under
    unambiguous names (``parameters``; ``forward_flops`` and ``training_flops``, two per
    multiply-accumulate, the training iteration's forward and backward GEMMs; the
    optimizer's vector work is not counted; ``peak_live_bytes``) and every op."""
    out: dict[str, object] = dict(f.as_dict())
    out.update(parameters=f.params, forward_flops=2 * f.forward_macs,
               training_flops=2 * (f.forward_macs + f.backward_macs),
               peak_live_bytes=f.peak_live,
               op_list=[{"name": op.name, "phase": op.phase.value, "macs": op.macs,
                         "vector_elems": op.vector_elems} for op in wl.ops])
    return out


def _list(args: argparse.Namespace) -> int:
    from tmhw.workload import hf
    rows = [{"model": name, "batch": i.default_batch, "seq": i.default_seq,
             "layers": i.default_layers, "source": i.note} for name, i in INFO.items()]
    for name, c in hf.CONFIGS.items():
        arch = c["architectures"][0]
        rows.append({"model": f"{hf.PREFIX}{name}", "batch": 1,
                     "seq": min(hf.DEFAULT_SEQ, hf.context(c, arch) or hf.DEFAULT_SEQ),
                     "layers": hf.depth(c, arch, name),
                     "source": f"Hugging Face config, {arch}"})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for r in rows:
        seq = "-" if r["seq"] is None else r["seq"]
        layers = "-" if r["layers"] is None else r["layers"]
        print(f"{r['model']:22s} batch {r['batch']:3d}  seq {seq!s:>5s}  "
              f"layers {layers!s:>3s}  {r['source']}")
    print("\n--model (workload.model) takes, in this order:")
    for s in sources.SOURCES:
        print(f"  {s.name:10s} {s.what}")
    return 0
