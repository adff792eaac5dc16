"""Bad command-line input, command by command: one line on stderr naming the option or
field (and the value), exit status 2, no traceback, and nothing written. Every case fails
in validation, before any simulation, so each takes a fraction of a second."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

#: A path that no user can create (procfs takes no new entries).
NOWHERE = "/proc/tmhw-nowhere"
needs_proc = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc")

#: A run that would be quick, if it ran.
RUN = ["run", "--preset", "quick", "--policy", "hbm-only", "--set", "workload.layers=1",
       "--iterations", "1", "--quiet"]
PLACEMENT = ["placement", "show", "--preset", "quick", "--policy", "tm-training",
             "--hbm-ratio", "0.25", "--rows", "1"]


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Input files in tmp_path, which is also the working directory (so that a default
    output folder would show up there)."""
    monkeypatch.chdir(tmp_path)
    f = {
        "binary_csv": tmp_path / "binary.csv",
        "binary_toml": tmp_path / "binary.toml",
        "empty_toml": tmp_path / "empty.toml",
        "comments_toml": tmp_path / "comments.toml",
        "empty_grid": tmp_path / "empty_grid.toml",
        "empty_points": tmp_path / "empty_points.toml",
        "spec": tmp_path / "spec.toml",
        "afile": tmp_path / "afile",
        "adir": tmp_path / "adir",
        "seq0_spec": tmp_path / "seq0.toml",
        "long_spec": tmp_path / "long.toml",
        "clash_spec": tmp_path / "clash.toml",
        "deep_toml": tmp_path / "deep.toml",
        "other_run": tmp_path / "other_run",
        "a_study": tmp_path / "a_study",
    }
    f["binary_csv"].write_bytes(b"\xff\xfe\x00Layer name, IFMAP Height\n\x80\x81")
    f["binary_toml"].write_bytes(b"\x80\x81[grid]\n")
    f["empty_toml"].write_text("")
    f["comments_toml"].write_text("# nothing here\n\n")
    f["empty_grid"].write_text('preset = "quick"\n[grid]\n')
    f["empty_points"].write_text('preset = "quick"\npoints = []\n')
    f["spec"].write_text('preset = "quick"\n[base]\n"workload.layers" = 1\n'
                         '"run.iterations" = 1\n[grid]\n"policy.name" = ["hbm-only"]\n')
    f["seq0_spec"].write_text('preset = "quick"\n[grid]\n"workload.seq" = [128, 0]\n')
    f["long_spec"].write_text('preset = "quick"\n[grid]\n"run.iterations" = [2, 20000]\n')
    f["clash_spec"].write_text('preset = "quick"\n[[points]]\n"policy.name" = "demand"\n'
                               '[grid]\n"policy.name" = ["hbm-only"]\n')
    f["deep_toml"].write_text('[workload]\nlayers = 100000\n')
    f["other_run"].mkdir()
    (f["other_run"] / "report.json").write_text('{"config": {"run": {"seed": 99}}}\n')
    (f["other_run"] / "summary.txt").write_text("another run\n")
    f["a_study"].mkdir()
    (f["a_study"] / "summary.md").write_text("# Timeline\n\nScenario `timeline`, quick.\n")
    f["afile"].write_text("keep me\n")
    f["adir"].mkdir()
    return {k: str(v) for k, v in f.items()}


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with the bytes of files (None for folders)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


def _check(tmhw: Callable, tmp_path: Path, argv: list[str], files: dict[str, str],
           names: tuple[str, ...]) -> str:
    """Run ``argv`` (``{key}`` filled from ``files``) and assert the rule; returns the line."""
    before = _tree(tmp_path)
    r = tmhw(*[a.format(**files) for a in argv])
    assert r.rc == 2, (r.rc, r.err)
    lines = [ln for ln in r.err.splitlines() if ln.strip()]
    assert len(lines) == 1, r.err
    assert "Traceback" not in r.err and "Error:" not in r.err, r.err
    for n in names:
        assert n in lines[0], (n, lines[0])
    assert _tree(tmp_path) == before, "something was written"
    return lines[0]


Case = tuple[str, list[str], tuple[str, ...]]


def _params(cases: list[Case]) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("argv,names", [(a, n) for _, a, n in cases],
                                   ids=[i for i, _, _ in cases])


# -- 1. dram bench: requests that cannot fit -----------------------------------------------
DRAM_TOO_BIG: list[Case] = [
    ("request larger than the device", ["dram", "bench", "--size", "1000000000000",
                                        "--count", "2"], ("size", "1000000000000", "16.00 GiB")),
    ("request larger than the device, fast", ["dram", "bench", "--size", "1TB", "--count",
                                              "2", "--model", "fast"], ("size", "16.00 GiB")),
    ("too many bursts for the detailed model", ["dram", "bench", "--size", "100MB",
                                                "--count", "2"], ("size", "4194304")),
    ("too many requests", ["dram", "bench", "--size", "64", "--count", "100000000",
                           "--model", "fast"], ("count", "100000000", "4194304")),
]


@_params(DRAM_TOO_BIG)
def test_dram_bench_refuses_what_cannot_fit(argv: list[str], names: tuple[str, ...],
                                            files: dict[str, str], tmp_path: Path,
                                            tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


# -- 2. binary input files -----------------------------------------------------------------
BINARY_INPUT: list[Case] = [
    ("npu topology", ["npu", "cycles", "--topology", "{binary_csv}"],
     ("topology", "binary.csv", "UTF-8")),
    ("workload CSV", ["workload", "show", "{binary_csv}"], ("binary.csv", "UTF-8")),
    ("sweep spec", ["sweep", "{binary_toml}", "--out", "o"], ("spec", "binary.toml", "UTF-8")),
    ("run config", [*RUN, "--config", "{binary_toml}", "--out", "o"], ("--config",)),
]


@_params(BINARY_INPUT)
def test_binary_input_file_is_one_line(argv: list[str], names: tuple[str, ...],
                                       files: dict[str, str], tmp_path: Path,
                                       tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


# -- 3. sweep and scenario output folders --------------------------------------------------
OUT_DIRS: list[Case] = [
    ("sweep into procfs", ["sweep", "{spec}", "--out", NOWHERE], ("--out", NOWHERE)),
    ("sweep into a file", ["sweep", "{spec}", "--out", "{afile}"], ("--out", "afile")),
    ("sweep under a file", ["sweep", "{spec}", "--out", "{afile}/sub"], ("--out", "afile")),
    ("scenario into procfs", ["scenario", "ablation", "--quick", "--quiet", "--out", NOWHERE],
     ("--out", NOWHERE)),
    ("scenario into a file", ["scenario", "ablation", "--quick", "--quiet", "--out",
                              "{afile}"], ("--out", "afile")),
    ("scenario under a file", ["scenario", "timeline", "--quick", "--quiet", "--out",
                               "{afile}/sub"], ("--out", "afile")),
]


@needs_proc
@_params(OUT_DIRS)
def test_unusable_out_folder_fails_before_any_point(argv: list[str], names: tuple[str, ...],
                                                    files: dict[str, str], tmp_path: Path,
                                                    tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


# -- 4. placement show --csv ---------------------------------------------------------------
PLACEMENT_CSV: list[Case] = [
    ("csv into procfs", [*PLACEMENT, "--csv", f"{NOWHERE}.csv"], ("--csv", NOWHERE)),
    ("csv is a directory", [*PLACEMENT, "--csv", "{adir}"], ("--csv", "adir")),
    ("csv in a missing folder", [*PLACEMENT, "--csv", "no/such/t.csv"], ("--csv", "no/such")),
]


@needs_proc
@_params(PLACEMENT_CSV)
def test_placement_csv_is_checked_before_the_table_is_built(
        argv: list[str], names: tuple[str, ...], files: dict[str, str], tmp_path: Path,
        tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


# -- 5. scenario options -------------------------------------------------------------------
SCENARIO_OPTIONS: list[Case] = [
    ("workers 0", ["scenario", "ablation", "--quick", "--workers", "0"], ("--workers", "0")),
    ("negative workers", ["scenario", "ablation", "--quick", "--workers", "-2"],
     ("--workers", "-2")),
    ("hbm ratio 2", ["scenario", "ablation", "--quick", "--set", "policy.hbm_ratio=2"],
     ("policy.hbm_ratio", "2")),
    ("unknown --set key", ["scenario", "capacity_sweep", "--quick", "--out", "o", "--set",
                           "policy.bogus=1"], ("policy.bogus",)),
    ("--set without a value", ["scenario", "ablation", "--quick", "--set",
                               "policy.tm_training.split"], ("--set",)),
]


@_params(SCENARIO_OPTIONS)
def test_scenario_options_are_checked_before_the_out_folder_is_made(
        argv: list[str], names: tuple[str, ...], files: dict[str, str], tmp_path: Path,
        tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)
    assert not (tmp_path / "o").exists() and not (tmp_path / "out").exists()


# -- 6. empty specs and configs ------------------------------------------------------------
EMPTY_INPUT: list[Case] = [
    ("empty sweep spec", ["sweep", "{empty_toml}", "--out", "o"], ("spec", "grid")),
    ("empty [grid]", ["sweep", "{empty_grid}", "--out", "o"], ("[grid]",)),
    ("empty points", ["sweep", "{empty_points}", "--out", "o"], ("points",)),
    ("empty run config", [*RUN, "--config", "{empty_toml}", "--out", "o"],
     ("--config", "empty.toml")),
    ("run config of comments", [*RUN, "--config", "{comments_toml}", "--out", "o"],
     ("--config", "comments.toml")),
]


@_params(EMPTY_INPUT)
def test_empty_spec_or_config_is_refused(argv: list[str], names: tuple[str, ...],
                                         files: dict[str, str], tmp_path: Path,
                                         tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


# -- 7. dram bench --size takes units ------------------------------------------------------
@pytest.mark.parametrize("size,nbytes", [("64", 64), ("8KB", 8000), ("8KiB", 8192),
                                         ("1MB", 1_000_000), ("1.5KB", 1500)])
def test_dram_bench_size_takes_units(size: str, nbytes: int, tmhw: Callable) -> None:
    r = tmhw("dram", "bench", "--size", size, "--count", "2", "--model", "fast")
    assert r.rc == 0, r.err
    assert f" 2 x {nbytes} B " in r.out.splitlines()[0]


BAD_SIZES: list[Case] = [
    ("unknown unit", ["dram", "bench", "--size", "8KX"], ("size", "'8KX'")),
    ("fraction of a byte", ["dram", "bench", "--size", "0.5"], ("size", "'0.5'")),
    ("empty", ["dram", "bench", "--size", ""], ("size", "''")),
]


@_params(BAD_SIZES)
def test_dram_bench_bad_size_is_one_line(argv: list[str], names: tuple[str, ...],
                                         files: dict[str, str], tmp_path: Path,
                                         tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


# -- 8. --batch 0 --------------------------------------------------------------------------
BATCH: list[Case] = [
    ("run batch 0", [*RUN, "--batch", "0", "--out", "o"], ("--batch", "0")),
    ("run model with batch 0", [*RUN, "--model", "resnet18", "--batch", "0", "--out", "o"],
     ("--batch",)),
    ("placement batch 0", [*PLACEMENT, "--batch", "0"], ("--batch", "0")),
    ("workload show batch 0", ["workload", "show", "bert-base", "--batch", "0"],
     ("--batch", "0")),
    ("workload show batch -2", ["workload", "show", "resnet18", "--batch", "-2"],
     ("--batch", "-2")),
]


@_params(BATCH)
def test_batch_below_one_is_refused(argv: list[str], names: tuple[str, ...],
                                    files: dict[str, str], tmp_path: Path,
                                    tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


def test_batch_0_has_the_same_words_in_run_and_workload_show(
        files: dict[str, str], tmp_path: Path, tmhw: Callable) -> None:
    run = _check(tmhw, tmp_path, [*RUN, "--batch", "0", "--out", "o"], files, ())
    show = _check(tmhw, tmp_path, ["workload", "show", "bert-base", "--batch", "0"], files, ())
    words = "--batch: 0 is not allowed; an integer >= 1"
    assert words in run and words in show, (run, show)


#: 0 is never "the model's default": each shape option and field refuses it
SHAPE_ZERO: list[Case] = [
    ("run seq 0", [*RUN, "--seq", "0", "--out", "o"], ("--seq", "0", "workload.seq")),
    ("run layers 0", [*RUN, "--layers", "0", "--out", "o"], ("--layers", "0")),
    ("run seq 0 on a CNN", [*RUN, "--model", "resnet18", "--seq", "0", "--out", "o"],
     ("--seq", "0")),
    ("placement layers 0", [*PLACEMENT, "--layers", "0"], ("--layers", "0")),
    ("config seq 0", [*RUN, "--set", "workload.seq=0", "--out", "o"],
     ("workload.seq", "0", ">= 1")),
    ("config layers 0", [*RUN, "--set", "workload.layers=0", "--out", "o"],
     ("workload.layers", "0", ">= 1")),
    ("config batch 0", [*RUN, "--set", "workload.batch=0", "--out", "o"],
     ("workload.batch", "0", ">= 1")),
    ("sweep seq 0", ["sweep", "{seq0_spec}", "--out", "o"], ("workload.seq", "0")),
]


@_params(SHAPE_ZERO)
def test_shape_0_is_refused_not_taken_as_the_default(
        argv: list[str], names: tuple[str, ...], files: dict[str, str], tmp_path: Path,
        tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


def test_batch_seq_and_layers_0_have_the_same_words(
        files: dict[str, str], tmp_path: Path, tmhw: Callable) -> None:
    words = "is not allowed; an integer >= 1 (leave it out for the model's own"
    for flag in ("--batch", "--seq", "--layers"):
        line = _check(tmhw, tmp_path, [*RUN, flag, "0", "--out", "o"], files, ())
        assert line.startswith(f"tmhw: error: {flag}: 0 {words}"), line


# -- 9. run outputs ------------------------------------------------------------------------
RUN_OUTPUTS: list[Case] = [
    ("out into procfs", [*RUN, "--out", NOWHERE], ("--out", NOWHERE)),
    ("out under a file", [*RUN, "--out", "{afile}/sub"], ("--out", "afile")),
    ("vcd into procfs", [*RUN, "--out", "o", "--vcd", f"{NOWHERE}.vcd"], ("--vcd", NOWHERE)),
    ("trace into procfs", [*RUN, "--out", "o", "--trace", f"{NOWHERE}.json"],
     ("--trace", NOWHERE)),
    ("vcd is a directory", [*RUN, "--out", "o", "--vcd", "{adir}"], ("--vcd", "adir")),
]


@needs_proc
@_params(RUN_OUTPUTS)
def test_run_outputs_are_checked_before_the_simulation(
        argv: list[str], names: tuple[str, ...], files: dict[str, str], tmp_path: Path,
        tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


# -- 10. messages that name the value ------------------------------------------------------
NAMED_VALUES: list[Case] = [
    ("dram size 0", ["dram", "bench", "--size", "0"], ("size", "'0'")),
    ("dram count 0", ["dram", "bench", "--count", "0"], ("count", "0")),
    ("dram count negative", ["dram", "bench", "--count", "-3"], ("count", "-3")),
    ("dram channels 3", ["dram", "bench", "--channels", "3"], ("channels", "3")),
    ("seq on a CNN", [*RUN, "--model", "resnet50", "--seq", "128", "--out", "o"],
     ("--seq", "128", "resnet50", "workload.seq")),
    ("seq on a CNN chosen by --set", [*RUN, "--set", "workload.model=resnet50", "--seq",
                                      "128", "--out", "o"], ("--seq", "128", "resnet50")),
    ("layers on a CNN", [*RUN, "--model", "resnet18", "--layers", "3", "--out", "o"],
     ("--layers", "3", "resnet18", "workload.layers")),
]


@_params(NAMED_VALUES)
def test_message_names_the_option_and_its_value(argv: list[str], names: tuple[str, ...],
                                                files: dict[str, str], tmp_path: Path,
                                                tmhw: Callable) -> None:
    line = _check(tmhw, tmp_path, argv, files, names)
    assert ": 0:" not in line and "size, count" not in line, line


# -- 11. work estimates, checked before anything is built ----------------------------------
WORK: list[Case] = [
    ("a million iterations", [*RUN, "--iterations", "1000000", "--out", "o"],
     ("run.iterations", "1000000", "1..10000")),
    ("iterations in a sweep", ["sweep", "{long_spec}", "--out", "o"],
     ("run.iterations", "20000")),
    ("100,000 layers", [*RUN, "--set", "workload.layers=100000", "--out", "o"],
     ("flash", "GiB", "workload.layers")),
]


@_params(WORK)
def test_work_beyond_the_bounds_is_refused_before_the_workload_is_built(
        argv: list[str], names: tuple[str, ...], files: dict[str, str], tmp_path: Path,
        tmhw: Callable, monkeypatch: pytest.MonkeyPatch) -> None:
    import tmhw.system as system

    real = system.build_workload

    def small_only(*a: object, layers: int | None = None, **kw: object) -> object:
        assert layers is None or layers <= 2, "a deep workload was built"
        return real(*a, layers=layers, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(system, "build_workload", small_only)
    _check(tmhw, tmp_path, argv, files, names)


# -- 12. the sixteen unclean inputs of a newcomer's pass (7, 10, 16 above; 12-15 are the
# library's, in tests/test_api.py) -------------------------------------------------------
NEWCOMER: list[Case] = [
    ("1 a path as a study name", ["scenario", "../tests/conftest", "--quick"],
     ("scenario", "'../tests/conftest'", "ablation")),
    ("1 a module path as a study name", ["scenario", "tmhw.scenarios.ablation", "--quick"],
     ("scenario", "'tmhw.scenarios.ablation'")),
    ("2 trace into /dev/full", [*RUN, "--out", "o", "--trace", "/dev/full"],
     ("--trace", "/dev/full", "regular file")),
    ("3 vcd into /dev/full", [*RUN, "--out", "o", "--vcd", "/dev/full"],
     ("--vcd", "/dev/full", "regular file")),
    ("4 empty trace", [*RUN, "--out", "o", "--trace", ""], ("--trace", "''")),
    ("4 empty vcd", [*RUN, "--out", "o", "--vcd", ""], ("--vcd", "''")),
    ("5 run into ''", [*RUN, "--out", ""], ("--out", "''")),
    ("6 scenario into ''", ["scenario", "ablation", "--quick", "--out", ""], ("--out", "''")),
    ("6 sweep into ''", ["sweep", "{spec}", "--out", ""], ("--out", "''")),
    ("6 empty config", [*RUN, "--config", "", "--out", "o"], ("--config", "''")),
    ("6 empty csv", [*PLACEMENT, "--csv", ""], ("--csv", "''")),
    ("8 a point the grid would replace", ["sweep", "{clash_spec}", "--out", "o"],
     ("[[points]] entry 1", "'policy.name'", "[grid]")),
    ("9 negative bench timeout", ["bench", "--case", "kernel", "--timeout", "-1"],
     ("--timeout", "-1", "> 0")),
    ("9 zero bench timeout", ["bench", "--case", "kernel", "--timeout", "0"],
     ("--timeout", "0")),
    ("11 run over another run", [*RUN, "--out", "{other_run}"],
     ("--out", "other_run", "another run's outputs", "--force")),
    ("11 run over a study", [*RUN, "--out", "{a_study}"],
     ("--out", "a_study", "scenario timeline", "--force")),
    ("11 study over a run", ["scenario", "ablation", "--quick", "--out", "{other_run}"],
     ("--out", "other_run", "a run's outputs")),
    ("11 study over another study", ["scenario", "ablation", "--quick", "--out",
                                     "{a_study}"], ("--out", "scenario timeline")),
    ("11 sweep over a study", ["sweep", "{spec}", "--out", "{a_study}"],
     ("--out", "scenario timeline")),
    ("16 100,000 layers in a config file", ["run", "--preset", "quick", "--config",
                                            "{deep_toml}", "--out", "o", "--quiet"],
     ("flash", "GiB", "workload.layers")),
]


@_params(NEWCOMER)
def test_each_unclean_input_is_one_line_before_anything_runs(
        argv: list[str], names: tuple[str, ...], files: dict[str, str], tmp_path: Path,
        tmhw: Callable) -> None:
    _check(tmhw, tmp_path, argv, files, names)


def test_a_trace_that_fails_to_write_names_the_option_and_leaves_nothing(
        files: dict[str, str], tmp_path: Path, tmhw: Callable,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A disk that fills during the write: the option and the path, and no half file."""
    import errno

    from tmhw.sim.trace import Tracer

    def full(self: Tracer, path: object) -> None:
        Path(str(path)).write_text("half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Tracer, "write_chrome", full)
    line = _check(tmhw, tmp_path, [*RUN, "--out", "o", "--trace", "t.json"], files,
                  ("--trace", "t.json", "No space left on device"))
    assert "None" not in line, line
