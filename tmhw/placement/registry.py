"""Policy names to the classes that implement them, as ``"module:Class"`` strings.

``POLICIES`` is the one list of policy names: the config's validation, the command line
and the docs take the names from it, and the config finds each policy's parameter table
(``[policy.<section>]``) through it (``tmhw.placement.base.table_policy``). It imports
nothing; ``tmhw.placement.base.policy_class`` imports a policy's module on first use, so
that its dependencies (the ILP solver of ``autotm``) load only when it is named.
"""

from __future__ import annotations

#: name -> "module:Class"
POLICIES: dict[str, str] = {
    "hbm-only": "tmhw.placement.simple:HbmOnly",
    "demand": "tmhw.placement.simple:Demand",
    "demand-belady": "tmhw.placement.simple:DemandBelady",
    "tm-training": "tmhw.placement.tm_training:TMTraining",
    "flatflash": "tmhw.placement.flatflash:FlatFlash",
    "flashneuron": "tmhw.placement.flashneuron:FlashNeuron",
    "sentinel": "tmhw.placement.sentinel:Sentinel",
    "autotm": "tmhw.placement.autotm:AutoTM",
    "ssdtrain": "tmhw.placement.ssdtrain:SSDTrain",
    "zero-infinity": "tmhw.placement.zero_infinity:ZeroInfinity",
    "recompute": "tmhw.placement.recompute:Recompute",
    "capuchin": "tmhw.placement.capuchin:Capuchin",
    "tm-recompute": "tmhw.placement.tm_training:TMRecompute",
}
