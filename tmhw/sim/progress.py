"""Progress bars for long work, on stderr and only when stderr is a terminal.

``progress(total, desc, unit)`` returns a tqdm bar (tqdm is already a dependency) that
stays hidden for the first ``DELAY_S`` seconds, so work that ends sooner shows nothing,
and is disabled outright when stderr is not a TTY (a pipe, a file, a test's capture):
results, JSON on stdout and logs never carry it. A bar only observes the work; nothing
it does feeds back into a result.
"""

from __future__ import annotations

import sys
from typing import Any

#: Seconds before a bar appears: the command line promises a bar on anything that may
#: run longer than about two seconds, and nothing on work that ends before.
DELAY_S = 2.0


def enabled() -> bool:
    """Whether a bar would be drawn: stderr is an interactive terminal."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def progress(total: int | None, desc: str, unit: str = "it", *,
             disable: bool = False) -> Any:
    """A bar over ``total`` units of work (``None``: a counter without an end). Use it as
    a context manager, ``update(n)`` as work is done; ``write(line)`` prints a line to
    stdout without tearing the bar."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, leave=False,
                delay=DELAY_S, mininterval=0.25, dynamic_ncols=True,
                disable=disable or not enabled())
