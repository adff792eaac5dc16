"""The registry of reference comparisons: every check, grouped by component, in the
order ``tmhw validate`` prints them. Each component's module (``tmhw.validate.npu``,
``dram``, ``flash``, ``ssd``, ``energy``) builds its checks from the reference data it
ships (``tmhw/validate/data/``); the test suite reads the same checks and data.
"""

from __future__ import annotations

import importlib

from tmhw.sim.errors import TmhwError
from tmhw.validate.check import Check, Result

#: component: its heading
COMPONENTS: dict[str, str] = {
    "npu": "NPU vs SCALE-Sim",
    "dram": "HBM and DDR vs DRAMsim3",
    "flash": "flash vs MQSim, both modes (compat=mqsim against stock MQSim, compat=onfi "
             "against MQSim under ONFI rules)",
    "ssd": "SSD presets vs data sheets",
    "energy": "energy vs its sources",
}


def checks(component: str | None = None, *, quick: bool = False) -> list[Check]:
    """Every check of one component (None: all), or of the quick set: the checks marked
    quick that are expected to hold (``ci``)."""
    names = list(COMPONENTS) if component is None else [component]
    out: list[Check] = []
    for name in names:
        if name not in COMPONENTS:
            raise TmhwError(f"component: {name!r} is not one of {', '.join(COMPONENTS)}")
        module = importlib.import_module(f"tmhw.validate.{name}")
        out += [c for c in module.checks() if not quick or (c.quick and c.ci)]
    return out


def run(selected: list[Check], progress: bool = False) -> list[Result]:
    """Run each check in order; ``progress``: a bar on a terminal's stderr."""
    from tmhw.sim.progress import progress as bar

    results = []
    with bar(len(selected), "validate", "check", disable=not progress) as shown:
        for c in selected:
            results.append(c.run())
            shown.update(1)
    return results
