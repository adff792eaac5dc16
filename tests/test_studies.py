"""Every scenario runs at --quick through ``tmhw scenario`` (which loads scenarios/NAME.py)
and writes its table, its CSV and its figures; the headline covers every policy."""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
from pathlib import Path

import pytest

from tmhw import studies
from tmhw.placement.registry import POLICIES

ROOT = Path(__file__).resolve().parent.parent
#: Each scenario at --quick is sized to take well under a minute on an idle 2-core
#: machine, with a run given up after POINT_TIMEOUT_S (tighter than the quick default,
#: which leaves slow policies a minute). Wall time is not asserted (it depends on the
#: machine's load); the timeout mark only stops a study that hangs.
POINT_TIMEOUT_S = "15"

def _scenario(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="tmhw")
    studies.register(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(["scenario", *argv])
    status: int = args.func(args)
    return status


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", list(studies.SCENARIOS))
def test_scenario_runs_quick_and_writes_table_csv_and_figures(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _scenario([name, "--quick", "--out", str(tmp_path), "--quiet",
                      "--point-timeout", POINT_TIMEOUT_S]) == 0
    out = capsys.readouterr().out
    md = (tmp_path / "summary.md").read_text()
    assert md.startswith("# ") and "| " in md and md.splitlines()[0] in out
    rows = _rows(tmp_path / "summary.csv")
    assert rows and all(r["status"] in ("ok", "skipped", "error") for r in rows)
    assert not [r for r in rows if r["status"] == "error"], [r["error"] for r in rows]
    pngs = sorted(tmp_path.glob("*.png"))
    assert pngs, "no figure"
    for p in pngs:
        assert p.stat().st_size > 1000 and p.with_suffix(".svg").is_file()
    if name == "paper_headline":
        _check_headline(tmp_path, rows, md)


def _check_headline(out: Path, rows: list[dict[str, str]], md: str) -> None:
    """Every policy for every model, the paper's figures beside ours, and the memory
    cost of 12.5% HBM + flash against HBM-only."""
    models = [m.stands_for for m in studies.QUICK_MODELS]
    assert sorted((r["model"], r["policy"]) for r in rows) == \
        sorted((m, p) for m in models for p in POLICIES)
    for must in ("-64%", "+55%", "-87%", "memory cost vs hbm-only"):
        assert must in md
    assert (out / "report.json").is_file()
    ok = {(r["model"], r["policy"]): r for r in rows if r["status"] == "ok"}
    for m in models:
        if (m, "tm-training") in ok and (m, "hbm-only") in ok:
            # 1/8 of the footprint in HBM plus all of it in flash, against all of it in
            # HBM: 1 - (0.125 x 15 + 0.06) / 15 = 87% less with the default $/GB.
            tm = float(ok[(m, "tm-training")]["memory_usd"])
            hbm = float(ok[(m, "hbm-only")]["memory_usd"])
            assert 1 - tm / hbm == pytest.approx(0.87, abs=0.01)


def test_scenario_scripts_run_directly_and_are_listed() -> None:
    for name in studies.SCENARIOS:
        assert (ROOT / "scenarios" / f"{name}.py").is_file()
    assert set(studies.available()) >= set(studies.SCENARIOS)
    r = subprocess.run([sys.executable, str(ROOT / "scenarios" / "timeline.py"), "--help"],
                       capture_output=True, text=True, cwd="/", timeout=60)
    assert r.returncode == 0 and "--quick" in r.stdout


def test_unknown_scenario_is_a_one_line_error() -> None:
    with pytest.raises(studies.TmhwError, match="unknown"):
        _scenario(["no_such_study", "--quick"])
