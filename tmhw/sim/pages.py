"""The memory pages numpy asks the operating system for.

numpy advises the kernel to back every array of 4 MiB or more with 2 MiB huge pages
(``madvise(MADV_HUGEPAGE)``). A run's per-page state (the residency's flags and ready
times, the FTL's maps) is a set of arrays of one entry per page of a model's footprint,
touched a little at a time as tensors first move. Where transparent huge pages are
enabled on ``madvise`` with ``defrag = madvise`` (this project's development machines,
and a common default), each first touch of such an array then has the kernel find, and
if need be compact memory for, and zero a 2 MiB page: the GPT-3 bench run
(``tmhw bench --case e2e-gpt``) spent 2.5 s of system time in 110k page faults with
the advice and 1.1 s in 603k without it, for the same user time and 4% less peak
memory. ``small_pages`` turns the advice off for the process, unless
``NUMPY_MADVISE_HUGEPAGE`` says what the user wants. It changes no result.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from typing import cast


def small_pages() -> bool:
    """Stop numpy advising huge pages for this process (module docstring), unless the
    environment sets ``NUMPY_MADVISE_HUGEPAGE``; whether numpy now advises them."""
    try:
        core = importlib.import_module("numpy._core.multiarray")  # numpy 2
    except ImportError:
        core = importlib.import_module("numpy.core.multiarray")  # numpy 1
    setter = cast(Callable[[bool], bool], core._set_madvise_hugepage)
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        was = setter(False)
        setter(was)
        return was
    setter(False)
    return False
