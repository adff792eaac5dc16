"""The SystemC-like kernel of tmhw: units, components, timelines, statistics, energy,
transactions and tracing. Imports nothing else of the project.

Importing it stops numpy advising huge pages for the process (``tmhw.sim.pages``)."""

from tmhw.sim.component import Component
from tmhw.sim.energy import EnergyMeter, EnergyTable
from tmhw.sim.env import Environment
from tmhw.sim.errors import ConfigError, ElaborationError, TmhwError
from tmhw.sim.pages import small_pages
from tmhw.sim.stats import Counter, Level, Tally
from tmhw.sim.timeline import Timeline
from tmhw.sim.trace import NULL_TRACER, NullTracer, Tracer
from tmhw.sim.transfer import ChunkedOps, MemoryTarget, Op, Pattern, Transfer

__all__ = [
    "ChunkedOps", "Component", "ConfigError", "Counter", "ElaborationError", "EnergyMeter",
    "EnergyTable", "Environment", "Level", "MemoryTarget", "NULL_TRACER", "NullTracer", "Op",
    "Pattern", "Tally", "Timeline", "TmhwError", "Tracer", "Transfer",
]

small_pages()
