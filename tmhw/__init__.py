"""tmhw: a discrete-event model of an NPU training out of HBM and NAND flash.

The library (``tmhw.api``): ``load_config``, ``simulate`` -> ``Report``, ``sweep``.
Imported lazily, so ``import tmhw`` (and ``import npu``, ``dram``, ``flash``) stays
light. ``tmhw.__version__`` is the package's version (its metadata, as ``tmhw
--version`` prints it).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Report", "load_config", "simulate", "sweep"]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from tmhw.report import VERSION

        return VERSION
    if name in __all__:
        from tmhw import api

        return getattr(api, name)
    raise AttributeError(f"module 'tmhw' has no attribute {name!r}")
