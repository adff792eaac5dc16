"""The ``tmhw`` process ends without the interpreter's teardown (``tmhw.cli.entry``), and
loses nothing by it: the threads that are not daemons finish, the ``atexit`` handlers
run, buffered output reaches a pipe, and the status is ``main``'s."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

#: a process that leaves through ``_leave`` with output buffered in a pipe, a thread
#: still working and an ``atexit`` handler registered
LEAVER = """
import atexit, sys, threading, time
from tmhw.cli import _leave

def late():
    time.sleep(0.2)
    sys.stdout.write("thread done;")

atexit.register(lambda: sys.stdout.write("atexit ran;"))
threading.Thread(target=late).start()
sys.stdout.write("buffered;")
_leave(5)
"""


def test_leaving_waits_for_threads_runs_atexit_and_flushes_the_pipe() -> None:
    r = subprocess.run([sys.executable, "-c", LEAVER], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 5, r.stderr
    # the thread ends before the handlers run, as at the interpreter's own exit
    assert r.stdout == "buffered;thread done;atexit ran;", r.stdout


def test_the_command_gives_mains_status_and_all_of_its_output(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, "-m", "tmhw", "flash", "bench", "--count", "50",
                        "--json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out.write_text(r.stdout)
    rep = json.loads(out.read_text())  # the whole document reached the pipe
    assert rep["commands"]["read"] == 50, rep
    bad = subprocess.run([sys.executable, "-m", "tmhw", "flash", "bench", "--count", "0"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("tmhw: "), bad.stderr
