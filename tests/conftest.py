"""Shared fixtures for the system-level tests: ``tmhw`` runs the command line in-process
and returns its exit status with what it printed. Tests marked ``long`` run first."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import settings

# Property tests draw the same examples on every run (derandomized), so that the
# suite's verdict does not depend on the draw; a counterexample a draw finds is pinned
# as its own test. Set HYPOTHESIS_PROFILE=explore to draw at random.
settings.register_profile("repeatable", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``long`` (tens of seconds in one process) first, the others in their
    order: with two workers, the first starts on them while the second runs the rest,
    instead of one worker running them alone once the rest is done."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@dataclass(frozen=True)
class CliResult:
    rc: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return self.err.strip("\n").splitlines()


@pytest.fixture
def tmhw(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """``tmhw("run", "--preset", "quick", ...)``: ``tmhw.cli.main`` with those arguments.
    argparse's own errors leave through SystemExit; they count as the exit status."""
    from tmhw.cli import main

    def run(*argv: str) -> CliResult:
        capsys.readouterr()
        try:
            rc = main(list(argv))
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
        out, err = capsys.readouterr()
        return CliResult(rc, out, err)

    return run


@pytest.fixture
def fresh_python() -> Callable[..., str]:
    """``fresh_python(code, **run)``: what ``code`` prints on stdout, run by this
    interpreter in a process of its own (``python -c``, with ``subprocess.run``'s
    ``run`` arguments: ``env``, ``cwd``); a non-zero exit fails the test. For what a
    fresh process imports, loads or starts."""
    def run(code: str, **kw: Any) -> str:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, **kw)
        return done.stdout

    return run
