"""Conventions every command keeps: sizes in binary units (GiB, MiB, KiB), rates in
GB/s and MB/s; results on stdout and diagnostics through the ``tmhw`` logger on stderr,
what was run and written only with ``--verbose``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

#: a size written in decimal units (a rate is "GB/s" or "MB/s" and does not match)
DECIMAL_SIZE = re.compile(r"\d\s*(?:KB|MB|GB|TB)\b(?!/s)")


@pytest.mark.parametrize("argv", [
    ["workload", "show", "bert-base", "--batch", "2", "--seq", "64"],
    ["bound", "--preset", "quick", "--hbm-ratio", "0.25", "--set", "workload.layers=1"],
    ["placement", "show", "--preset", "quick", "--rows", "2", "--set", "workload.layers=1"],
    ["flash", "presets"],
    ["dram", "presets"],
    ["flash", "bench", "--count", "200", "--qd", "4"],
    ["dram", "bench", "--count", "100", "--model", "fast"],
], ids=lambda a: " ".join(a[:2]))
def test_sizes_are_binary_and_rates_decimal_in_every_command(argv: list[str],
                                                            tmhw: Callable) -> None:
    r = tmhw(*argv)
    assert r.rc == 0, r.err
    assert not DECIMAL_SIZE.search(r.out), DECIMAL_SIZE.search(r.out)
    assert re.search(r"\d (?:KiB|MiB|GiB|TiB)\b|GB/s|MB/s", r.out), r.out


RUN = ["run", "--preset", "quick", "--policy", "hbm-only", "--set", "workload.layers=1",
       "--iterations", "1", "--quiet"]


def test_verbose_says_what_ran_and_was_written_on_stderr_and_results_stay_on_stdout(
        tmp_path: Path, tmhw: Callable) -> None:
    trace = tmp_path / "t.json"
    quiet = tmhw(*RUN, "--out", str(tmp_path / "a"))
    loud = tmhw(*RUN, "--out", str(tmp_path / "b"), "--trace", str(trace), "--verbose")
    assert quiet.rc == loud.rc == 0
    assert quiet.err == ""
    said = loud.err_lines
    assert said[0].startswith("tmhw: running bert-base under hbm-only")
    assert any(ln.startswith("tmhw: simulated") and "events" in ln for ln in said)
    assert f"tmhw: wrote the Chrome/Perfetto trace {trace}" in said
    # the results are the same on stdout, but for the folder they name
    assert quiet.out.replace(str(tmp_path / "a"), "X") == \
        loud.out.replace(str(tmp_path / "b"), "X")
    # -v before the command means the same
    again = tmhw("-v", *RUN, "--out", str(tmp_path / "c"))
    assert again.err_lines[0].startswith("tmhw: running")
