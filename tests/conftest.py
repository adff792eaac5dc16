"""Shared fixtures for the system-level tests: ``tmhw`` runs the command line in-process
and returns its exit status with what it printed. Tests marked ``long`` run first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest


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
