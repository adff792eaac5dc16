"""The distribution installs whole: the wheel built from this checkout holds every file of
its four import packages (every subpackage, every scenario, every data file), and once
installed into a fresh virtual environment it runs ``tmhw scenario --list`` and
``tmhw scenario paper_headline --quick`` from a folder outside the checkout, with nothing
of the checkout on the path, its compiled kernels cached in the user's cache directory.
The kernels the installed package loads are those this checkout compiled: the same
version of the kernels' source is the same folder wherever the package is
(``tmhw.sim.jit``), so a user cache holding only the checkout's folder gains nothing
from the run (a kernel compiled there would be a file added or changed).

The environment is made without pip and without the system's packages; the wheel goes in
with ``pip --python``, and the dependencies come from the folders this interpreter finds
them in, through a ``.pth`` file that names those folders (a folder named there is only
put on the path: the ``.pth`` files in it, such as an editable install's finder of this
checkout, are not run). The wheel is built without build isolation (nothing downloaded)
from a copy of the checkout, so that no ``build/`` left by an earlier build adds files
the package list would leave out, and nothing is written into the checkout.

The quick stand-ins take over a minute of CPU, so the study runs on one of its quick
models with a tiny workload set through ``--set``, as a user can, in one process: the
same study code and command line, a third of the points, under a second each.
"""

from __future__ import annotations

import csv
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tmhw.sim import jit
from tmhw.system import compile_kernels

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("tmhw", "npu", "dram", "flash")
#: what a checkout holds that the build does not read: version control, environments,
#: build leftovers, outputs and caches
NOT_BUILT = shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                   "__pycache__", ".*_cache", ".hypothesis", "out", "scratch")
#: the tiny workload of the scenario run (tests/test_studies.py's stand-in, at batch 1)
TINY = ("workload.model=resnet18", "workload.batch=1", "workload.optimizer=sgd-momentum",
        "workload.page_size=1048576")
#: run by the environment's Python: the file each of ``MODULES`` is imported from, then
#: every folder on its path that holds a ``tmhw`` package
MODULES = ("tmhw", "npu", "dram", "flash", "tmhw.studies", "tmhw.scenarios")
WHERE = ("import os, sys, importlib\n"
         f"for m in {MODULES}:\n"
         "    print(importlib.import_module(m).__file__)\n"
         "print('\\n'.join(p for p in sys.path\n"
         "                 if os.path.isfile(os.path.join(p, 'tmhw', '__init__.py'))))\n")


def _run(cmd: list[str], cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd, env=env)
    assert r.returncode == 0, f"{' '.join(cmd)}:\n{r.stdout}\n{r.stderr}"
    return r


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder``, by its path there, with its contents."""
    return {f.relative_to(folder).as_posix(): f.read_bytes()
            for f in folder.rglob("*") if f.is_file()}


def _package_files() -> set[str]:
    """Every file of the checkout's import packages, as a wheel names it."""
    return {f.relative_to(ROOT).as_posix() for pkg in PACKAGES
            for f in (ROOT / pkg).rglob("*")
            if f.is_file() and "__pycache__" not in f.parts
            and not f.name.startswith(".")}


def _dependency_folders(wheel: Path) -> list[str]:
    """The folders this interpreter finds the wheel's dependencies in (its Requires-Dist
    without extras), none of them holding the project's packages."""
    with zipfile.ZipFile(wheel) as z:
        meta = z.read(next(n for n in z.namelist()
                           if n.endswith(".dist-info/METADATA"))).decode()
    names = [m.group(1) for m in re.finditer(r"^Requires-Dist: ([A-Za-z0-9._-]+)([^;\n]*)$",
                                             meta, re.M)]
    assert "numba" in names and "simpy" in names, names
    folders = sorted({str(importlib.metadata.distribution(n).locate_file("")) for n in names})
    for d in folders:
        assert not any((Path(d) / p / "__init__.py").is_file() for p in PACKAGES), d
    return folders


@pytest.mark.long
def test_the_wheel_installs_whole_and_runs_a_scenario_outside_the_checkout(
        tmp_path: Path) -> None:
    st = importlib.metadata.version("setuptools")
    if int(st.split(".")[0]) < 77:
        pytest.fail(f"setuptools {st} cannot build the wheel; the dev extras need "
                    "setuptools>=77 (make test installs them)")
    # -- the wheel, from a copy of the checkout ------------------------------------------
    src, dist = tmp_path / "src", tmp_path / "dist"
    shutil.copytree(ROOT, src, ignore=NOT_BUILT)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
          "--wheel-dir", str(dist), str(src)])
    (wheel,) = dist.glob("tmhw-*.whl")
    with zipfile.ZipFile(wheel) as z:
        shipped = {n for n in z.namelist() if ".dist-info/" not in n}
    assert shipped == _package_files(), (sorted(_package_files() - shipped),
                                         sorted(shipped - _package_files()))
    # -- a fresh environment: the wheel, the dependencies' folders, nothing else ----------
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py, tmhw = venv / "bin" / "python", venv / "bin" / "tmhw"
    # (no PYTHONPATH: pip would find the checkout's tmhw on it, call the wheel's
    # requirement satisfied and install nothing)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "NUMBA_CACHE_DIR",
                        "NUMBA_DISABLE_JIT", "VIRTUAL_ENV")}
    _run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
          "--no-index", str(wheel)], env=env)
    site = Path(sysconfig.get_path("purelib", "venv", vars={"base": str(venv)}))
    (site / "_tmhw_test_deps.pth").write_text("\n".join(_dependency_folders(wheel)) + "\n")
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), PYTHONNOUSERSITE="1")
    # the user's cache holds the checkout's kernels, every one compiled (``make``)
    compile_kernels()
    ours = jit.folder()
    cache = tmp_path / "cache" / "tmhw" / "numba"
    shutil.copytree(ours, cache / ours.name)
    compiled = _files(cache)
    run = tmp_path / "elsewhere"
    run.mkdir()
    where = _run([str(py), "-c", WHERE], cwd=run, env=env).stdout.splitlines()
    files, paths = where[:len(MODULES)], where[len(MODULES):]
    assert all(Path(f).is_relative_to(site) for f in files), files
    assert paths == [str(site)], paths   # the only folder on the path with a tmhw
    # -- the two commands ----------------------------------------------------------------
    listed = _run([str(tmhw), "scenario", "--list"], cwd=run, env=env).stdout.split()
    assert listed == sorted(f.stem for f in (ROOT / "tmhw" / "scenarios").glob("*.py")
                            if not f.name.startswith("_"))
    out = tmp_path / "headline"
    sets = [a for s in TINY for a in ("--set", s)]
    r = _run([str(tmhw), "scenario", "paper_headline", "--quick", "--out", str(out),
              "--model", "ResNet-50", *sets, "--workers", "1", "--quiet"], cwd=run, env=env)
    assert r.stdout.startswith("# Paper headline") and "| tm-training |" in r.stdout
    for f in ("summary.md", "summary.csv", "report.json", "memory_cost.png"):
        assert (out / f).is_file(), f
    with (out / "summary.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    # every policy, demand paging without frees, and TM-Training and the four prior
    # systems on 4 SSDs; FlashNeuron, SSDTrain, Capuchin and recomputation keep the
    # model state in HBM and cannot fit 12.5%
    assert len(rows) == 13 + 1 + 5
    assert {row["status"] for row in rows if row["policy"] not in
            ("flashneuron", "ssdtrain", "recompute", "capuchin")} == {"ok"}
    # the installed package took the checkout's kernels from the user's cache
    # directory: the same folder, nothing compiled into it, and nothing into the package
    assert [f.name for f in cache.iterdir()] == [ours.name]
    after = _files(cache)
    changed = sorted(f for f in after if compiled.get(f) != after[f])
    assert compiled and not changed, ("compiled by the run, so not by make's compile step "
                                      "(tmhw.system.compile_kernels)", changed)
    assert not any(venv.rglob("*.nbi"))
