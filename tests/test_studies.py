"""Every scenario script runs through ``tmhw scenario NAME --quick`` and writes its table,
its CSV and its figures; every point runs unless its policy does not fit the HBM, and
such a policy is labelled so; the headline covers every policy; and a study gives the
same results on a loaded machine.

The quick stand-ins take minutes of CPU for the seven studies, so these tests put one
smaller stand-in in their place: ResNet-18 at batch 4 with SGD and 1 MiB pages (the
flash and DMA work per run scales with the pages moved), about half a second per point.
The study code, the grids and the command line are the real ones."""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tmhw import studies
from tmhw.placement.registry import POLICIES
from tmhw.sim.errors import TmhwError
from tmhw.studies import study as study_mod

ROOT = Path(__file__).resolve().parent.parent
TINY = studies.Model("ResNet-18", "resnet18 b4 sgd-momentum 1MiB pages",
                     studies.workload("resnet18", 4, optimizer="sgd-momentum",
                                      page_size=1 << 20))
SCENARIOS = ("paper_headline", "capacity_sweep", "flash_sensitivity", "ablation",
             "energy_breakdown", "endurance", "timeline", "regime_map", "robustness",
             "llm_scaling", "hybrid")


@pytest.fixture
def tiny_quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """--quick runs the one small stand-in."""
    monkeypatch.setattr(study_mod, "QUICK_MODELS", (TINY,))


@pytest.fixture
def inspected(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, set[str]]]:
    """Every figure a study saves is inspected before it is written (``_check_axes``);
    the list collects each figure's name and the texts a reader sees on it."""
    from tmhw import plots
    from tmhw.studies import figures

    seen: list[tuple[str, set[str]]] = []
    save = plots._save

    def inspect_then_save(fig: Any, stem: Path) -> list[Path]:
        seen.append((Path(stem).name, _check_axes(fig, Path(stem).name)))
        return save(fig, stem)

    monkeypatch.setattr(plots, "_save", inspect_then_save)
    monkeypatch.setattr(figures, "_save", inspect_then_save)
    return seen


def _face(handle: Any) -> tuple[float, ...]:
    """A legend handle's colour as RGBA (a patch's face, a line's colour)."""
    from matplotlib.colors import to_rgba
    if hasattr(handle, "get_facecolor"):
        return tuple(to_rgba(handle.get_facecolor()))
    return tuple(to_rgba(handle.get_color()))


def _check_axes(fig: Any, name: str) -> set[str]:
    """No bars on a log axis (a bar's length there depends on the axis's arbitrary
    bottom), and on a figure with a legend every drawn series (a set of bars, a line or
    a row of dots) carries a label the legend shows; returns every text on the figure,
    lower-cased."""
    from matplotlib.container import BarContainer
    from matplotlib.lines import Line2D

    legends = [lg for lg in [*fig.legends, *(ax.get_legend() for ax in fig.axes)] if lg]
    shown = {t.get_text() for lg in legends for t in lg.get_texts()}
    # no two entries of a legend look the same (colour and hatch)
    for lg in legends:
        looks = [(tuple(round(c, 3) for c in _face(h)), getattr(h, "get_hatch", lambda: "")())
                 for h in lg.legend_handles]
        assert len(set(looks)) == len(looks), f"{name}: two legend entries look the same"
    texts = set(shown) | ({"legend"} if legends else set())
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        bars = [c for c in ax.containers if isinstance(c, BarContainer)]
        # nothing dropped: an axes draws some value (a bar of finite non-zero length, a
        # line or dot with a finite point, an image, a collection, another patch: the
        # timeline's filled steps)
        in_bars = {id(p) for c in bars for p in c}
        drawn = any(math.isfinite(p.get_height()) and p.get_height() != 0
                    for c in bars for p in c) or any(
            any(math.isfinite(float(y)) for y in ln.get_ydata()) for ln in ax.get_lines()
        ) or bool(ax.images) or bool(ax.collections) or any(
            id(p) not in in_bars for p in ax.patches)
        assert drawn, f"{name}: an axes draws nothing"
        if "log" in (ax.get_yscale(), ax.get_xscale()):
            assert not bars, f"{name}: bars on a log axis"
        series = [c.get_label() for c in bars] + [
            ln.get_label() for ln in ax.get_lines()
            if isinstance(ln, Line2D) and len(ln.get_xdata()) > 1
            or ln.get_marker() not in (None, "None", "", " ")]
        for label in series if legends else ():   # a heatmap's region edges: no series
            assert not label.startswith("_"), f"{name}: a series without a label"
            assert label in shown, f"{name}: {label!r} is not in the legend"
        texts |= {t.get_text() for t in [*ax.get_xticklabels(), *ax.get_yticklabels(),
                                          *ax.texts, ax.title]}
    texts |= {t.get_text() for t in fig.texts}
    if fig._suptitle is not None:
        texts.add(fig._suptitle.get_text())
    return {t.lower() for t in texts}


def _check_policies_labelled(rows: list[dict[str, str]],
                             seen: list[tuple[str, set[str]]]) -> None:
    """Every policy the study ran is named on one of its figures, where it draws
    policies as series (the regime map's and the robustness study's heatmaps draw
    TM-Training's gain over the best rival instead, and name neither)."""
    assert seen, "no figure inspected"
    words = " ".join(t for _, ts in seen for t in ts)
    if "legend" not in words:
        return
    for policy in {r.get("policy", "") for r in rows} - {""}:
        assert policy.lower() in words, f"{policy} is on none of the figures"


def _scenario(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="tmhw")
    studies.register(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(["scenario", *argv])
    status: int = args.func(args)
    return status


def _run(name: str, out: Path) -> list[dict[str, str]]:
    assert _scenario([name, "--quick", "--out", str(out), "--quiet", "--workers", "1"]) == 0
    with (out / "summary.csv").open() as fh:
        return list(csv.DictReader(fh))


@pytest.mark.usefixtures("tiny_quick")
@pytest.mark.parametrize("name", [n for n in SCENARIOS
                                  if n not in ("paper_headline", "energy_breakdown")])
def test_scenario_runs_quick_and_writes_table_csv_and_figures(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        inspected: list[tuple[str, set[str]]]) -> None:
    rows = _run(name, tmp_path)
    _check_outputs(tmp_path, rows, capsys.readouterr().out)
    assert len(inspected) == len(list(tmp_path.glob("*.png")))   # every figure seen
    _check_policies_labelled(rows, inspected)


def _check_outputs(out: Path, rows: list[dict[str, str]], printed: str) -> None:
    """Table, CSV and figures written; every point ran, or its policy does not fit the
    HBM and the table says so, and so does every figure that shows that policy or takes
    the best of the prior systems (the regime map's heatmaps); matplotlib keeps each
    text of an SVG as a comment."""
    md = (out / "summary.md").read_text()
    assert md.startswith("# ") and "| " in md and md.splitlines()[0] in printed
    assert rows
    for r in rows:
        assert r["status"] in ("ok", "does-not-fit"), r
    if any(r["status"] == "does-not-fit" for r in rows):
        assert studies.DOES_NOT_FIT in md
    pngs = sorted(out.glob("*.png"))
    assert pngs, "no figure"
    unfit = {r.get("policy", "") for r in rows if r["status"] == "does-not-fit"} - {""}
    for p in pngs:
        assert p.stat().st_size > 1000 and p.with_suffix(".svg").is_file()
        svg = p.with_suffix(".svg").read_text()
        shown = p.stem.startswith("regime_map") or any(
            f"<!-- {u}" in svg or f"{u} -->" in svg for u in unfit)
        assert not (unfit and shown) or studies.DOES_NOT_FIT in svg, p


def _check_headline(out: Path, rows: list[dict[str, str]]) -> None:
    """Every policy for the model, the paper's figures beside ours, and the memory cost
    of 12.5% HBM + flash against HBM-only."""
    md = (out / "summary.md").read_text()
    grid = [r for r in rows if not r["variant"]]
    assert sorted(r["policy"] for r in grid) == sorted(POLICIES)
    for must in ("-64%", "+55%", "-87%", "memory cost vs hbm-only", "traffic vs best",
                 "samples/J vs best", "under other conditions", "3 iteration(s)"):
        assert must in md
    assert "mean" not in md.split("## ResNet-18")[0]
    assert (out / "report.json").is_file()
    rep = json.loads((out / "report.json").read_text())
    assert rep["measurement"]["iterations"] == 3 and rep["measurement"]["steady_state"]
    ok = {r["policy"]: r for r in grid if r["status"] == "ok"}
    # 1/8 of the footprint in HBM plus all of it in flash, against all of it in HBM:
    # 1 - (0.125 x 15 + 0.06) / 15 = 87% less with the default $/GB.
    tm, hbm = float(ok["tm-training"]["memory_usd"]), float(ok["hbm-only"]["memory_usd"])
    assert 1 - tm / hbm == pytest.approx(0.87, abs=0.01)
    # FlashNeuron keeps every weight, gradient and optimizer state in HBM: it cannot fit
    # 1/8 of the footprint, and the headline says so in its column.
    assert "flashneuron" not in ok
    assert "| does not fit |" in md.split("## ResNet-18")[0]


@pytest.mark.usefixtures("tiny_quick")
def test_headline_runs_quick_and_compares_with_the_paper(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        inspected: list[tuple[str, set[str]]]) -> None:
    rows = _run("paper_headline", tmp_path)
    _check_outputs(tmp_path, rows, capsys.readouterr().out)
    _check_headline(tmp_path, rows)
    assert len(inspected) == len(list(tmp_path.glob("*.png")))
    _check_policies_labelled(rows, inspected)


@pytest.mark.usefixtures("tiny_quick")
def test_a_study_is_the_same_on_a_machine_loaded_by_a_cpu_hog(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        inspected: list[tuple[str, set[str]]]) -> None:
    """No wall-clock limit decides a result: the energy breakdown (every policy, AutoTM's
    ILP included) run alone and again beside a process spinning on a core gives the same
    CSV (but its wall times) and table."""
    quiet = _run("energy_breakdown", tmp_path / "a")
    _check_outputs(tmp_path / "a", quiet, capsys.readouterr().out)
    _check_policies_labelled(quiet, inspected)
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = _run("energy_breakdown", tmp_path / "b")
    finally:
        hog.kill()
        hog.wait()
    strip = [{k: v for k, v in r.items() if k != "wall_s"} for r in quiet]
    assert strip == [{k: v for k, v in r.items() if k != "wall_s"} for r in loaded]
    assert (tmp_path / "a" / "summary.md").read_text() == \
        (tmp_path / "b" / "summary.md").read_text()


def test_every_scenario_ships_in_the_package_and_runs_from_a_checkout() -> None:
    """The studies are the modules of ``tmhw.scenarios`` (a wheel ships them); a
    checkout's scenarios/NAME.py is one runner per study, of the same name, with the
    options of ``tmhw scenario``, from any working directory."""
    assert studies.available() == sorted(SCENARIOS)
    assert sorted(p.stem for p in (ROOT / "scenarios").glob("*.py")) == sorted(SCENARIOS)
    r = subprocess.run([sys.executable, str(ROOT / "scenarios" / "timeline.py"), "--help"],
                       capture_output=True, text=True, cwd="/", timeout=60)
    assert r.returncode == 0 and "--quick" in r.stdout and "--point-timeout" not in r.stdout
    assert r.stdout.startswith("usage: scenarios/timeline.py")


def test_unknown_scenario_is_a_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TmhwError, match="unknown"):
        _scenario(["no_such_study", "--quick"])
    # a runner whose name is no scenario: one line, status 2, before any option is read
    assert studies.script_main("scenarios/no_such_study.py", ["--quick"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'no_such_study' is unknown; one of ablation" in err


@pytest.mark.usefixtures("tiny_quick")
def test_a_study_bench_case_counts_what_the_study_simulated() -> None:
    """``tmhw bench --case study-NAME``: the ops, bytes and events of every point that
    ran, once each, within the event economy's budget (counts, not times: at most one
    event per op and iteration, on average, with a few per DMA chunk)."""
    from tmhw import bench

    m = bench.case_study("endurance", small=True, workers=1)
    x = m["extra"]
    assert x["points"] == x["ok"] + x["does_not_fit"] and x["failed"] == 0
    assert x["ok"] > 0 and x["ops"] > 0 and x["inter_tier_gib"] > 0
    assert m["events"] == x["events"] and m["unit"] == "simulated ops/s"
    assert x["wall_per_op_ms"] > 0 and x["max_point_s"] <= x["points_s"]
    assert m["events"] <= 4 * x["ops"] + 2 * x["inter_tier_gib"] * 2**30 / (2 << 20)


@pytest.mark.usefixtures("tiny_quick")
def test_a_study_run_with_resume_reuses_its_points_and_gives_the_same_outputs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each point's report lands in OUT/points as it finishes; ``--resume`` reads them
    back instead of running them (a long study survives an interruption), and without
    it every point runs again."""
    from tmhw import sweeps as SW

    rows = _run("endurance", tmp_path)
    first = (tmp_path / "summary.csv").read_text()
    saved = {f.parent.name for f in (tmp_path / "points").glob("*/report.json")}
    assert saved == {r["id"] for r in rows if r["status"] == "ok"}
    run_point = SW.run_point

    def refuse(point: dict[str, Any]) -> SW.Result:
        # a point that did not fit has no report: it runs again (it stops at once)
        if point["id"] in saved:
            raise AssertionError(f"point {point['id']} ran again")
        return run_point(point)

    monkeypatch.setattr(SW, "run_point", refuse)
    assert _scenario(["endurance", "--quick", "--out", str(tmp_path), "--quiet",
                      "--workers", "1", "--resume"]) == 0
    assert (tmp_path / "summary.csv").read_text() == first
    with pytest.raises(AssertionError, match="ran again"):
        _scenario(["endurance", "--quick", "--out", str(tmp_path), "--quiet",
                   "--workers", "1"])


def test_model_option_runs_the_study_on_the_named_models_only(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """``--model NAME`` (repeatable, any case) hands the study only those of its models,
    the single-model studies the first of them; a name the study does not have is one
    line naming the option, the value and what is allowed, before anything is written."""
    from tmhw.studies import cli

    other = studies.Model("BERT-large", "resnet18 b2", studies.workload("resnet18", 2))
    monkeypatch.setattr(study_mod, "QUICK_MODELS", (TINY, other))
    seen: list[tuple[tuple[str, ...], str]] = []

    def record(st: studies.Study) -> str:
        seen.append((tuple(m.stands_for for m in st.models), st.model.stands_for))
        return ""

    ap = argparse.ArgumentParser()
    cli.add_options(ap)
    for names, want in (([], (("ResNet-18", "BERT-large"), "ResNet-18")),
                        (["bert-large"], (("BERT-large",), "BERT-large")),
                        (["BERT-large", "resnet-18"], (("ResNet-18", "BERT-large"),
                                                       "ResNet-18"))):
        argv = ["--quick", "--quiet", "--out", str(tmp_path / "ok")]
        for n in names:
            argv += ["--model", n]
        assert cli.run("x", record, ap.parse_args(argv)) == 0
        assert seen[-1] == want
    bad = tmp_path / "bad"
    with pytest.raises(TmhwError, match=r"--model: 'GPT-3 block' is not allowed; one of "
                                        r"ResNet-18, BERT-large"):
        cli.run("x", record, ap.parse_args(["--quick", "--out", str(bad),
                                            "--model", "GPT-3 block"]))
    assert not bad.exists()


@pytest.mark.usefixtures("tiny_quick")
def test_a_study_of_warm_up_iterations_only_says_so(tmp_path: Path) -> None:
    """Run with no iteration past the warm-up, every row of summary.csv says
    ``steady_state`` false, and the summary says it is not a steady state."""
    assert _scenario(["energy_breakdown", "--quick", "--out", str(tmp_path), "--quiet",
                      "--workers", "1", "--set", "run.iterations=1"]) == 0
    with (tmp_path / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert rows and {r["steady_state"] for r in rows if r["status"] == "ok"} == {"false"}
    assert "**Not a steady state:**" in (tmp_path / "summary.md").read_text()


@pytest.mark.parametrize("lim", [0.004, 0.021, 0.09, 0.15, 0.9])
def test_a_heatmaps_colour_scale_tells_its_ticks_apart(lim: float) -> None:
    """The colour bar of a heatmap of gains within +-``lim`` labels each of the ticks
    matplotlib puts on it differently (the regime map's winners, within +-2%, had
    ticks every 0.5% labelled in whole percents: "+2%" and "+0%" twice each)."""
    from matplotlib.ticker import AutoLocator

    from tmhw.studies.figures import _decimals

    ticks = [t for t in AutoLocator().tick_values(-lim, lim) if -lim <= t <= lim]
    labels = [f"{t:+.{_decimals(lim)}%}" for t in ticks]
    assert len(ticks) >= 3 and len(set(labels)) == len(labels), labels


def test_a_heatmap_cells_note_is_broken_into_lines_a_cell_holds() -> None:
    """A note wider than a cell (the strategies that do not fit) is broken into lines
    of at most ``_NOTE_WIDTH`` characters, its first "what:" on a line of its own, and
    loses no word."""
    from tmhw.studies.figures import _NOTE_WIDTH, _fit_note

    note = f"recompute, offload, TM + recompute: {studies.DOES_NOT_FIT}"
    lines = _fit_note(note).split("\n")
    assert all(len(line) <= _NOTE_WIDTH for line in lines)
    assert lines[-1] == studies.DOES_NOT_FIT and " ".join(lines).split() == note.split()


@pytest.mark.usefixtures("tiny_quick")
def test_a_point_that_crashes_is_named_at_the_end_and_the_study_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A point that stops with an error (a crash, not a refusal) is a row that says so;
    the study still writes its outputs, says in summary.md how many failed, names each
    on stderr after its table (where a long study's progress lines would have scrolled
    the first report of it away) and exits 1, as ``tmhw sweep`` does."""
    import tmhw.tune

    real = tmhw.tune.simulate
    crashed: list[str] = []

    def crash_once(cfg: Any) -> Any:
        if not crashed:
            crashed.append(cfg.policy.name)
            raise RuntimeError("dictionary changed size during iteration")
        return real(cfg)

    monkeypatch.setattr(tmhw.tune, "simulate", crash_once)
    name = "paper_headline"
    argv = [name, "--quick", "--out", str(tmp_path), "--quiet", "--workers", "1"]
    assert _scenario(argv) == 1
    captured = capsys.readouterr()
    with (tmp_path / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    bad = [r for r in rows if r["status"] == "error"]
    assert len(bad) == 1 and bad[0]["policy"] == crashed[0]
    assert "RuntimeError: dictionary changed size" in bad[0]["error"]
    tail = captured.err.strip().splitlines()[-2:]
    assert tail[0].startswith(f"{name}: point {bad[0]['id']} error: RuntimeError")
    assert tail[1].startswith(f"{name}: 1 of {len(rows)} points stopped with an error")
    assert f"**Failed:** 1 of the {len(rows)} runs" in (tmp_path / "summary.md").read_text()
    assert list(tmp_path.glob("*.png"))
