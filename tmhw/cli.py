"""The ``tmhw`` command.

    tmhw run [--preset NAME] [--config FILE.toml] [--set a.b=v ...] [--model M] ...
    tmhw presets
    tmhw config show NAME
    tmhw placement show --model M --policy P --hbm-ratio R [--csv FILE]
    tmhw bound --model M --hbm-ratio R
    tmhw npu cycles | dram bench | flash bench | workload show | scenario | sweep | bench
    tmhw validate [--quick] [--component NAME] [--json | --markdown]

Every error in arguments or config ends with one line on stderr naming the field and
what is allowed, and exit status 2; nothing is written when a run fails. A valid config
whose policy cannot run in the HBM it is given (``DoesNotFit``) ends with one line
``tmhw: does not fit: ...`` and exit status 3. Results go to stdout; diagnostics
(warnings; with ``--verbose`` what was run and written) through the ``tmhw`` logger
to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from tmhw.sim.errors import DoesNotFit, TmhwError

log = logging.getLogger("tmhw")


class _StderrHandler(logging.Handler):
    """Diagnostics as ``tmhw: warning: ...`` (``tmhw: ...`` for information) on the
    stderr of the moment (a test's capture, a redirected stream)."""

    def emit(self, record: logging.LogRecord) -> None:
        level = "" if record.levelno == logging.INFO else f"{record.levelname.lower()}: "
        sys.stderr.write(f"tmhw: {level}{record.getMessage()}\n")


def setup_logging(verbose: bool) -> None:
    """The ``tmhw`` logger writes warnings to stderr, and with ``verbose`` what each
    command ran and wrote; the results themselves go to stdout."""
    for h in [h for h in log.handlers if isinstance(h, _StderrHandler)]:
        log.removeHandler(h)
    log.addHandler(_StderrHandler())
    log.setLevel(logging.INFO if verbose else logging.WARNING)
    log.propagate = False


def add_verbose(p: argparse.ArgumentParser) -> None:
    """``--verbose`` on ``p`` and on every sub-command under it (``tmhw -v run`` and
    ``tmhw run -v`` alike)."""
    if "--verbose" not in p._option_string_actions:
        p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                       help="diagnostics on stderr: what was run and what was written")
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sp in dict.fromkeys(action.choices.values()):
                add_verbose(sp)


#: Packages that add their own sub-commands through ``register(sub)``.
COMMAND_MODULES = ("npu.cli", "dram.cli", "flash.cli", "tmhw.workload.cli",
                   "tmhw.placement.cli", "tmhw.studies", "tmhw.sweeps", "tmhw.bench",
                   "tmhw.validate.cli")


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exit status 2."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def path_arg(value: str) -> str:
    """An argparse ``type`` for a file or folder option: an empty value is refused, never
    taken as the default or the current folder."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"{value!r} is not allowed; give a path")
    return value


def add_config_args(p: argparse.ArgumentParser) -> None:
    """The options that build a SystemConfig (shared by run, placement, sweep)."""
    from tmhw.placement.registry import POLICIES

    p.add_argument("--preset", help="system preset (tmhw presets lists them)")
    p.add_argument("--config", type=path_arg, help="TOML file over the preset")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override one field, e.g. flash.channels=16 (repeatable)")
    p.add_argument("--model", help="workload model: a zoo name, e.g. bert-large, or a "
                   "file a workload source reads, e.g. a SCALE-Sim topology.csv "
                   "(tmhw workload list shows both)")
    p.add_argument("--batch", type=int,
                   help="samples per iteration (default: the model's own, as "
                        "tmhw workload list shows)")
    p.add_argument("--seq", type=int,
                   help="sequence length, transformers only (default: the model's own)")
    p.add_argument("--layers", type=int,
                   help="transformer layers, to build a deeper or shallower model "
                        "(default: the model's own)")
    p.add_argument("--onnx-unknown", choices=("error", "memory"),
                   help="an ONNX op the NPU model does not map: refused (error, the "
                        "default) or run as an element-wise op (workload.onnx_unknown)")
    p.add_argument("--policy", help=f"placement policy: {', '.join(POLICIES)}")
    p.add_argument("--hbm-ratio", type=float, help="HBM capacity / footprint, in (0, 1]")
    p.add_argument("--iterations", type=int,
                   help="training iterations measured after the warm-up the run "
                        "finds (run.iterations; with a forced run.warmup_iterations, "
                        "all iterations, warm-up included)")
    p.add_argument("--seed", type=int, help="seed of every random choice (run.seed); "
                   "the same config and seed give the same report")
    p.add_argument("--no-split", action="store_true", help="TM-Training without splitting")
    p.add_argument("--no-monitor", action="store_true",
                   help="TM-Training without the timing monitor")
    p.add_argument("--no-prefetch", action="store_true",
                   help="TM-Training: demand fetch on the table")
    p.add_argument("--no-wb-schedule", action="store_true",
                   help="TM-Training: every write-back due at once (eager)")


#: the table the ``--no-*`` switches set (TM-Training's parameters)
TM_TRAINING = "tm_training"


def check_batch(value: int | None, field: str = "") -> None:
    """``--batch`` must be a batch size, never 0 or below (the same words for every
    command; ``field`` names the config field it sets, if any)."""
    check_shape("--batch", value, field)


def check_shape(option: str, value: int | None, field: str = "") -> None:
    """``--batch``, ``--seq`` and ``--layers`` take an integer >= 1, never 0 (left out,
    each is the model's own): the same words for each and for every command."""
    if value is not None and value < 1:
        where = f"; {field}" if field else ""
        raise TmhwError(f"{option}: {value} is not allowed; an integer >= 1 (leave it "
                        f"out for the model's own{where})")


def _model_in_effect(cfg: Any, args: argparse.Namespace) -> str:
    """The workload model the overrides will select: --model, else the last
    ``--set workload.model=...``, else the preset's or config file's."""
    from tmhw.sim import tomlio

    if args.model:
        return str(args.model)
    model = str(cfg.workload.model)
    for item in args.set:
        keys, value = tomlio.parse_override(item)
        if keys == ["workload", "model"]:
            model = str(value)
    return model


def _check_shape_args(cfg: Any, args: argparse.Namespace) -> None:
    """--seq and --layers on a model that has no such dimension, in one sentence naming
    the option; the model's source (``tmhw.workload.sources``) says what it allows. A
    model no source takes is left to the config's validation, which names the field."""
    from tmhw.sim.errors import ConfigError
    from tmhw.workload import sources

    seq, layers = getattr(args, "seq", None), getattr(args, "layers", None)
    if seq is None and layers is None:
        return
    try:
        sources.check(_model_in_effect(cfg, args), None, seq, layers)
    except ConfigError as e:
        if e.path in ("seq", "layers"):
            raise TmhwError(f"--{e.path}: {e.value} is not allowed; {e.allowed} "
                            f"(workload.{e.path})") from None


def _check_config_file(path: str) -> None:
    """An empty config file (nothing but blanks and comments) is a mistake, not "run the
    preset": refuse it. Files that cannot be read or parsed are left to ``config.load``."""
    from tmhw.sim import tomlio
    from tmhw.sim.errors import ConfigError

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    if not tomlio.loads(text, str(path)):
        raise ConfigError("--config", str(path), "the file sets nothing; give at least one "
                          "key (tmhw config show paper prints them all)")


def config_from_args(args: argparse.Namespace) -> Any:
    from tmhw import config as C

    for flag in ("batch", "seq", "layers"):
        check_shape(f"--{flag}", getattr(args, flag, None), f"workload.{flag}")
    ratio = getattr(args, "hbm_ratio", None)
    if ratio is not None and not 0 < ratio <= 1:   # nan and inf fail both
        raise TmhwError(f"--hbm-ratio: {ratio:g} is not allowed; a fraction in (0, 1] "
                        "(policy.hbm_ratio)")
    base = C.preset(args.preset) if args.preset is not None else C.PAPER
    if args.config:
        _check_config_file(args.config)
    cfg = C.load(args.config, base) if args.config else base
    _check_shape_args(cfg, args)
    sets = list(args.set)
    for flag, key in (("model", "workload.model"), ("batch", "workload.batch"),
                      ("seq", "workload.seq"), ("layers", "workload.layers"),
                      ("onnx_unknown", "workload.onnx_unknown"), ("policy", "policy.name"),
                      ("hbm_ratio", "policy.hbm_ratio"),
                      ("iterations", "run.iterations"), ("seed", "run.seed")):
        v = getattr(args, flag, None)
        if v is not None:
            sets.append(f"{key}={json.dumps(v)}")
    switches = [(flag, key) for flag, key in (
        ("no_split", "split"), ("no_monitor", "monitor"), ("no_prefetch", "prefetch"),
        ("no_wb_schedule", "writeback_schedule"))
        if getattr(args, flag, False)]
    sets += [f"policy.{TM_TRAINING}.{key}=false" for _, key in switches]
    out = C.with_overrides(cfg, sets)
    if switches:
        from tmhw.placement.base import policy_class

        if policy_class(out.policy.name).section != TM_TRAINING:
            flag, key = switches[0]
            raise TmhwError(f"--{flag.replace('_', '-')}: switches off a mechanism of "
                            f"TM-Training (policy.{TM_TRAINING}.{key}), which "
                            f"{out.policy.name} does not have; drop it or use "
                            "--policy tm-training")
    return out


def write_whole(option: str, path: str | Path, write: Callable[[Path], None]) -> None:
    """``write(tmp)`` into a new file beside ``path``, then put it in place: the file is
    written whole or not at all, and an error names ``option`` and ``path``."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.")
    os.close(fd)
    try:
        write(Path(tmp))
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, p)
    except OSError as e:
        raise TmhwError(f"{option}: cannot write {p}: {e.strerror}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def check_out_dir(path: str | Path, option: str = "--out") -> None:
    """Refuse an output directory that could not be created or written, before any work
    starts; creates nothing (it makes and removes one empty probe directory in the
    nearest folder that exists, the only sure test of writability, even as root)."""
    p = Path(path)
    if p.is_symlink() and not p.exists():
        raise TmhwError(f"{option}: {p} is a broken symbolic link; give a directory")
    if p.exists() and not p.is_dir():
        raise TmhwError(f"{option}: {p} exists and is not a directory")
    anc = p
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise TmhwError(f"{option}: cannot create {p}: {anc} is not a directory")
    try:
        os.rmdir(tempfile.mkdtemp(dir=anc, prefix=".tmhw-probe-"))
    except OSError as e:
        what = "write in" if anc == p else f"create {p} in"
        raise TmhwError(f"{option}: cannot {what} {anc}: {e.strerror}") from None


def check_out_file(path: str | Path, option: str) -> None:
    """Refuse an output file that could not be written, before any work starts: its
    folder must exist and the file must be creatable or writable. Leaves an existing
    file as it is and removes the probe of a new one."""
    p = Path(path)
    if p.is_dir():
        raise TmhwError(f"{option}: {p} is a directory; give a file name")
    if p.exists() and not p.is_file():
        # a device or a pipe: written in place, not replaced, and /dev/full takes the
        # open but fails the write only after the whole run
        raise TmhwError(f"{option}: {p} is not a regular file (a device or a pipe); give "
                        "a file name")
    parent = p.parent
    if not parent.is_dir():
        raise TmhwError(f"{option}: directory {parent} does not exist")
    existed = p.exists()
    try:
        with open(p, "a"):
            pass
    except OSError as e:
        raise TmhwError(f"{option}: cannot write {p}: {e.strerror}") from None
    finally:
        if not existed:
            try:
                p.unlink()
            except OSError:
                pass


def run_folder(cfg: Any) -> Path:
    """Where ``tmhw run`` writes when no ``--out`` is given: a folder of its own under
    ``out/``, named after the model, policy and HBM ratio plus the first 8 hex digits of
    the SHA-256 of the whole config, so two configs never share a folder, the same config
    always finds its own again, and a scenario's ``out/summary.md`` is never touched."""
    import hashlib

    from tmhw.sim import tomlio

    text = json.dumps(tomlio.to_dict(cfg), sort_keys=True, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()[:8]
    from tmhw.workload.sources import label

    # a model named by a file's path (a topology) is its file's stem here: the folder is
    # one level under out/, whatever the path
    return Path("out") / (f"run-{label(cfg.workload.model)}-{cfg.policy.name}-"
                          f"{cfg.policy.hbm_ratio:g}-{digest}")


def _check_outputs(args: argparse.Namespace, out: Path) -> None:
    """Refuse unusable output paths before anything is simulated: each file its own,
    none the output folder or one of the files written into it."""
    check_out_dir(out, "--out")
    taken = {out.resolve(): "the --out folder"}
    taken |= {(out / f).resolve(): f"the run's {f}" for f in ("report.json", "summary.txt")}
    if getattr(args, "plot", False):
        taken |= {(out / f"timeline.{e}").resolve(): f"the --plot timeline.{e}"
                  for e in ("png", "svg")}
    for flag in ("trace", "vcd"):
        v = getattr(args, flag, None)
        if v:
            where = Path(v).resolve()
            if where in taken:
                raise TmhwError(f"--{flag}: {v} is {taken[where]}; give the {flag} a file "
                                "of its own")
            check_out_file(v, f"--{flag}")
            taken[where] = f"the --{flag} file"


def iteration_marks(rep: dict[str, Any]) -> list[tuple[int, str]]:
    """Where each iteration starts (ps) and its label, from the report: iterations run
    back to back from time 0, each ``per_iteration[i].time_ps`` long."""
    marks, t = [], 0
    for it in rep["per_iteration"]:
        marks.append((t, f"it {it['index']}" + (" (warm-up)" if it["warmup"] else "")))
        t += int(it["time_ps"])
    return marks


def cmd_run(args: argparse.Namespace) -> int:
    from tmhw.outputs import atomic_write, check_run
    from tmhw.report import summary_table, write_json
    from tmhw.sim import tomlio
    from tmhw.sim.progress import progress
    from tmhw.system import System
    from tmhw.tune import simulate, trials
    from tmhw.workload import sources

    cfg = config_from_args(args)
    model = sources.label(cfg.workload.model)
    out = Path(args.out) if args.out is not None else run_folder(cfg)
    _check_outputs(args, out)
    check_run(out, tomlio.to_dict(cfg), args.force)
    log.info("running %s under %s at HBM ratio %g, %d iteration(s); outputs in %s",
             model, cfg.policy.name, cfg.policy.hbm_ratio, cfg.run.iterations, out)
    tracer = None
    if args.trace or args.plot or args.vcd:
        from tmhw.sim.trace import Tracer

        tracer = Tracer()
    t0 = time.perf_counter()
    tuning: dict[str, Any] | None = None
    events = 0
    if trials(cfg):
        # The trials run unwatched; the chosen one runs again (the same figures: a
        # run is deterministic) only when it is to be traced.
        cfg, rep, events = simulate(cfg)
        tuning = rep["policy"]["tuning"]
    if not tuning or tracer is not None:
        with progress(None, unit="op", desc=f"{model}/{cfg.policy.name}",
                      disable=args.quiet) as bar:
            system = System(cfg, tracer=tracer, progress=bar)
            bar.reset(total=len(system.workload.ops) * cfg.run.iterations)
            rep = system.run()
        events += system.env.events
        if tuning:
            rep["policy"]["tuning"] = tuning
    rep["host"] = {"wall_s": time.perf_counter() - t0, "events": events}
    log.info("simulated %s events in %.2f s", f"{events:,}", rep["host"]["wall_s"])
    summary = summary_table(rep)
    if tracer is not None:
        for t, label in iteration_marks(rep):
            tracer.mark(t, label)
        if args.trace:
            write_whole("--trace", args.trace, tracer.write_chrome)
            log.info("wrote the Chrome/Perfetto trace %s", args.trace)
        if args.vcd:
            write_whole("--vcd", args.vcd, tracer.write_vcd)
            log.info("wrote the VCD %s", args.vcd)
    try:
        if args.plot and tracer is not None:
            from tmhw.plots import timeline_figure

            out.mkdir(parents=True, exist_ok=True)
            for path in timeline_figure(tracer, out / "timeline", title=f"{model} / "
                                        f"{cfg.policy.name}, HBM "
                                        f"{cfg.policy.hbm_ratio:.4g} of the footprint "
                                        "(dashed: iteration starts)"):
                log.info("wrote the timeline %s", path)
    except OSError as e:
        raise TmhwError(f"--plot: cannot write {e.filename or out}: {e.strerror}") from None
    write_json(rep, out / "report.json")
    atomic_write(out / "summary.txt", summary + "\n")
    if args.json:
        print(json.dumps(rep, indent=1, default=float))
    else:
        print(summary)
        print(f"report: {out / 'report.json'}")
    for w in rep.get("warnings", []):
        log.warning("%s", w)
    return 0


def cmd_presets(args: argparse.Namespace) -> int:
    from tmhw.config import PRESET_DOCS, PRESETS

    w = max(len(n) for n in PRESETS)
    for name in PRESETS:
        print(f"{name:<{w}}  {PRESET_DOCS.get(name, '')}")
    return 0


def cmd_config_show(args: argparse.Namespace) -> int:
    from tmhw import config as C

    sys.stdout.write(C.dumps(C.preset(args.name)))
    return 0


#: The exit statuses of every command, as ``tmhw --help`` and the README list them.
EXIT_STATUS = """exit status:
  0    done
  1    a check or a point failed (tmhw validate, tmhw sweep)
  2    bad input: one line on stderr names the option or field, the value and what is
       allowed; nothing is written and nothing runs
  3    does not fit: a valid config whose policy cannot run in the HBM it is given
  130  interrupted"""


def build_parser() -> Parser:
    from tmhw.report import VERSION

    p = Parser(prog="tmhw", description="Tiered-memory NPU training simulator "
               "(TM-Training and its baselines).", epilog=EXIT_STATUS,
               formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"tmhw {VERSION}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True

    r = sub.add_parser("run", help="simulate training iterations and write report.json")
    add_config_args(r)
    r.add_argument("--out", default=None, type=path_arg,
                   help="output directory (default: a folder of the run's own, "
                        "out/run-MODEL-POLICY-RATIO-HASH/, HASH from the whole config)")
    r.add_argument("--force", action="store_true",
                   help="write into --out even where it holds another run's or a study's "
                        "outputs (a run may always replace its own: the same config's)")
    r.add_argument("--plot", action="store_true",
                   help="write timeline.png and .svg into the output directory")
    r.add_argument("--trace", type=path_arg, metavar="FILE.json",
                   help="write a Perfetto/Chrome trace")
    r.add_argument("--vcd", type=path_arg, metavar="FILE.vcd",
                   help="write busy signals as VCD")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.add_argument("--json", action="store_true", help="print the report as JSON")
    r.set_defaults(func=cmd_run)

    pr = sub.add_parser("presets", help="list the system presets")
    pr.set_defaults(func=cmd_presets)

    c = sub.add_parser("config", help="show configs")
    csub = c.add_subparsers(dest="config_cmd", metavar="SUBCOMMAND", parser_class=Parser)
    csub.required = True
    cs = csub.add_parser("show", help="print a preset as TOML")
    cs.add_argument("name")
    cs.set_defaults(func=cmd_config_show)

    for mod in COMMAND_MODULES:
        try:
            m = importlib.import_module(mod)
        except ModuleNotFoundError as e:
            if e.name == mod:
                continue
            raise
        m.register(sub)
    add_verbose(p)
    return p


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    setup_logging(bool(getattr(args, "verbose", False)))
    try:
        rc = int(args.func(args))
    except DoesNotFit as e:
        sys.stderr.write(f"tmhw: does not fit: {e}\n")
        return 3
    except TmhwError as e:
        sys.stderr.write(f"tmhw: error: {e}\n")
        return 2
    except KeyboardInterrupt:
        sys.stderr.write("tmhw: interrupted\n")
        return 130
    except BrokenPipeError:
        return 0
    return rc


def entry() -> NoReturn:
    """The ``tmhw`` process (the console script, ``python -m tmhw``): ``main``, then
    the end of the process without the interpreter's teardown. Python's own exit
    first waits for the threads that are not daemons, runs the ``atexit`` handlers and
    flushes the standard streams, as this does; then it frees every object and module
    one by one, which took 0.2 to 0.7 s after ``tmhw flash bench`` (its per-page state
    and numba's compiled kernels) and decides nothing: the process's memory goes back
    at once when it ends. ``main`` raising (``--help``, an argument error, an uncaught
    exception) exits the usual way."""
    _leave(main())


def _leave(rc: int) -> NoReturn:
    """End the process with status ``rc`` (``entry``)."""
    import atexit
    import threading

    # (``threading._shutdown`` is what the interpreter calls at exit: it joins the
    # threads that are not daemons and runs the hooks ``concurrent.futures`` registers)
    shutdown: Callable[[], None] | None = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe, a closed stream
            pass
    os._exit(rc)


if __name__ == "__main__":
    entry()
