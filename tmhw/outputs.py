"""Whose outputs an output folder holds, so that no command writes over another's.

``tmhw run``, ``tmhw scenario`` and ``tmhw sweep`` write into ``--out``. Each may replace
its own outputs there, never another's unless ``--force``:

- a run's own outputs are a ``report.json`` of the same whole config (the same run
  again: its report is replaced, as a run's own hash folder under ``out/`` is);
- a study's or a sweep's own outputs are those its marker file ``.tmhw-outputs`` names
  (``scenario NAME``, ``sweep NAME`` after the spec file's name), written into the
  folder before the first point runs: the same study or spec again resumes or replaces
  them (``--resume``, the points kept by id);
- a folder written before markers existed is judged by what it holds: a ``summary.md``
  names its scenario; ``summary.csv`` or ``points/`` alone are a sweep's (any sweep
  may resume into them, since points are kept by the id of their whole config).

Files that are no command's outputs are left alone and never block a command.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from tmhw.sim.errors import TmhwError

#: the marker a study or a sweep leaves in its folder: one line, ``KIND NAME``
MARKER = ".tmhw-outputs"
#: what a run writes
RUN_FILES = ("report.json", "summary.txt")


def holder(out: Path) -> str | None:
    """Whose outputs ``out`` holds: ``"scenario NAME"``, ``"sweep NAME"``, ``"sweep"``
    (a sweep's from before markers), ``"run"`` (a run's ``report.json``; see
    ``run_config``), or None (no command's outputs)."""
    if not out.is_dir():
        return None
    marker = out / MARKER
    if marker.is_file():
        try:
            return marker.read_text(encoding="utf-8").strip() or None
        except (OSError, UnicodeDecodeError):
            return "an unreadable marker"
    # (a study's summary.md first: paper_headline also writes a report.json, its first
    # TM-Training run's)
    md = out / "summary.md"
    if md.is_file():
        try:
            m = re.search(r"^Scenario `([^`]+)`", md.read_text(encoding="utf-8"), re.M)
        except (OSError, UnicodeDecodeError):
            m = None
        return f"scenario {m.group(1)}" if m else "a study of unknown name"
    if any((out / f).exists() for f in RUN_FILES):
        return "run"
    if (out / "summary.csv").exists() or (out / "points").is_dir():
        return "sweep"
    return None


def run_config(out: Path) -> Any:
    """The config recorded in ``out/report.json`` (None if there is none to read)."""
    try:
        return json.loads((out / "report.json").read_text(encoding="utf-8")).get("config")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return None


def _refuse(out: Path, whose: str) -> None:
    raise TmhwError(f"--out: {out} holds {whose}; give another folder, or --force to "
                    "write over them")


def check_run(out: Path, config: dict[str, Any], force: bool) -> None:
    """``tmhw run`` may write into ``out``: it holds no outputs, or this config's own
    report (``config`` as the report records it), or ``force``."""
    found = holder(out)
    if force or found is None:
        return
    if found != "run":
        _refuse(out, f"the outputs of {found}")
    plain = json.loads(json.dumps(config, default=float))
    if run_config(out) != plain:
        _refuse(out, "another run's outputs (its report.json is of a different config)")


def check_study(out: Path, kind: str, name: str, force: bool) -> None:
    """``kind`` (``scenario`` or ``sweep``) ``name`` may write into ``out``: it holds no
    outputs, or its own (see the module docstring), or ``force``."""
    found = holder(out)
    if force or found is None or found == f"{kind} {name}":
        return
    if kind == "sweep" and found == "sweep":
        return
    whose = "a run's outputs (report.json)" if found == "run" else f"the outputs of {found}"
    _refuse(out, whose)


def mark(out: Path, kind: str, name: str) -> None:
    """Leave the marker of ``kind`` ``name`` in ``out`` (created if needed)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / MARKER).write_text(f"{kind} {name}\n", encoding="utf-8")
    except OSError as e:
        raise TmhwError(f"--out: cannot write in {out}: {e.strerror}") from None


def atomic_write(path: Path, data: str) -> None:
    """Write ``data`` to ``path`` whole or not at all, with the usual permissions."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "w") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as e:
        raise TmhwError(f"{path}: cannot write: {e.strerror}") from None
