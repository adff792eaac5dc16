"""DRAM/HBM: JEDEC presets, a chunk-level fast model and a command-level controller, and
IDD-based power. ``DramTarget`` is the tier a system wires in as its HBM."""

from dram.config import PRESETS, DramConfig
from dram.target import DramTarget

__all__ = ["DramConfig", "DramTarget", "PRESETS"]
