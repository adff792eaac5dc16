"""The command line of a study: ``tmhw scenario NAME`` and, from a checkout,
``python scenarios/NAME.py``.

Both take the same options and run the same function, the ``study(st)`` of the module
``tmhw.scenarios.NAME``, which ships with the package. Every option is checked before
the output folder exists or any point runs; a bad one is one line on stderr and exit
status 2.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import tmhw.studies.study as S
from tmhw.sim.errors import TmhwError
from tmhw.studies.study import Model, Study

StudyFn = Callable[[Study], str]
#: the package that holds one module per scenario
SCENARIOS = "tmhw.scenarios"


def available() -> list[str]:
    """The scenarios: every module of ``tmhw.scenarios`` not starting with ``_``."""
    pkg = importlib.import_module(SCENARIOS)
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)
                  if not m.ispkg and not m.name.startswith("_"))


def load_study(name: str) -> StudyFn:
    """The ``study`` function of the scenario ``name`` (``tmhw.scenarios.NAME``)."""
    names = available()
    if name not in names:
        raise TmhwError(f"scenario: {name!r} is unknown; one of {', '.join(names)}")
    mod = importlib.import_module(f"{SCENARIOS}.{name}")
    fn = getattr(mod, "study", None)
    if not callable(fn):
        raise TmhwError(f"scenario: {mod.__file__} defines no study(st) function")
    return fn  # type: ignore[no-any-return]


def add_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true",
                   help="small stand-in workloads: seconds per run")
    from tmhw.cli import path_arg

    p.add_argument("--out", type=path_arg, help="output directory (default out/<scenario>)")
    p.add_argument("--workers", type=int, help="local processes (default: CPU count)")
    p.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                   help="override a config field in every run (repeatable)")
    p.add_argument("--model", action="append", default=[], metavar="NAME",
                   help="run the study on this one of its models only (repeatable): "
                        + ", ".join(m.stands_for for m in S.FULL_MODELS))
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--force", action="store_true",
                   help="write into --out even where it holds another study's, a sweep's "
                        "or a run's outputs (this study's own are always replaced)")
    p.add_argument("--resume", action="store_true",
                   help="reuse the points an earlier run left in OUT/points (each "
                        "point's report is written there as it finishes); without it "
                        "every point runs again")


def check_options(name: str, args: argparse.Namespace
                  ) -> tuple[dict[str, Any], Path, tuple[Model, ...]]:
    """Every option checked before anything runs or is written: the user's --set
    overrides (as a config), --workers, --model and the output folder. Returns the
    overrides, the output folder and the models chosen (all of them when none is)."""
    from tmhw import config as C
    from tmhw.cli import check_out_dir
    from tmhw.outputs import check_study
    from tmhw.sim import tomlio

    if args.workers is not None and args.workers < 1:
        raise TmhwError(f"--workers: {args.workers} is not allowed; an integer >= 1")
    C.with_overrides(C.preset(Study.preset), list(args.set))
    sets = {".".join(k): v for k, v in (tomlio.parse_override(s) for s in args.set)}
    models = S.QUICK_MODELS if args.quick else S.FULL_MODELS
    known = {m.stands_for.lower(): m for m in models}
    for m in args.model:
        if m.lower() not in known:
            raise TmhwError(f"--model: {m!r} is not allowed; one of "
                            + ", ".join(x.stands_for for x in models))
    chosen = tuple(m for m in models if m.stands_for.lower() in
                   {x.lower() for x in args.model}) or models
    out = Path(args.out) if args.out is not None else Path("out") / name
    check_out_dir(out, "--out")
    check_study(out, "scenario", name, bool(args.force))
    return sets, out, chosen


def run(name: str, study: StudyFn, args: argparse.Namespace) -> int:
    """Run ``study`` with the parsed options; print its markdown table. Status 1 when a
    point stopped with an error (as ``tmhw sweep``), each named on stderr at the end,
    where a long study's progress lines would have scrolled it away."""
    from tmhw.outputs import mark

    sets, out, models = check_options(name, args)
    mark(out, "scenario", name)
    st = Study(name, bool(args.quick), out, args.workers, sets, not args.quiet,
               models=models, resume=bool(args.resume),
               one=None if len(models) > 1 else models[0])
    text = study(st)
    print(text, end="")
    print(f"\n{name}: {time.perf_counter() - st.started:.1f} s; outputs in {out}/")
    failed = st.failed()
    for r in failed:
        sys.stderr.write(f"{name}: point {r['id']} error: {r['error']}\n")
    if failed:
        sys.stderr.write(f"{name}: {len(failed)} of {len(st.results)} points stopped with "
                         "an error; their rows in summary.csv say which\n")
    return 1 if failed else 0


def script_main(script: str, argv: Sequence[str] | None = None) -> int:
    """``python scenarios/NAME.py [options]``: the runner ``script`` (its ``__file__``)
    runs the scenario of its own name; errors end with one line and status 2."""
    from tmhw.cli import Parser, add_verbose, setup_logging

    name = Path(script).stem
    try:
        study = load_study(name)
    except TmhwError as e:
        sys.stderr.write(f"{name}: error: {e}\n")
        return 2
    p = Parser(prog=f"scenarios/{name}.py",
               description=(study.__doc__ or f"The {name} study.").strip().split("\n\n")[0])
    add_options(p)
    add_verbose(p)
    args = p.parse_args(list(argv) if argv is not None else None)
    setup_logging(bool(getattr(args, "verbose", False)))
    try:
        return run(name, study, args)
    except TmhwError as e:
        sys.stderr.write(f"{name}: error: {e}\n")
        return 2


def _cmd(args: argparse.Namespace) -> int:
    if args.list:
        for n in available():
            print(n)
        return 0
    if args.name is None:
        raise TmhwError(f"scenario: give a NAME; one of {', '.join(available())}")
    study = load_study(args.name)
    return run(args.name, study, args)


def register(sub: Any) -> None:
    """Add ``tmhw scenario`` to the top-level sub-parsers."""
    p = sub.add_parser("scenario", help="run a study that reproduces the paper's figures",
                       description="Run the study tmhw.scenarios.NAME: "
                                   + ", ".join(available()) + ".")
    p.add_argument("name", nargs="?", metavar="NAME", help="the scenario to run")
    p.add_argument("--list", action="store_true", help="list the scenarios")
    add_options(p)
    p.set_defaults(func=_cmd)
