"""Read an MQSim ``ssdconfig.xml`` (CMU-SAFARI/MQSim, ``Device_Parameter_Set`` and
``Host_Parameter_Set``) as a ``FlashConfig``.

MQSim field -> FlashConfig field (MQSim times are ns, bandwidths GB/s):

==================================== =================================================
``PCIe_Lane_Bandwidth``              ``pcie_lane_gbps``
``PCIe_Lane_Count``                  ``pcie_lanes``
``Overprovisioning_Ratio``           ``over_provisioning``
``GC_Exec_Threshold``                ``gc_threshold``
``GC_Hard_Threshold``                ``gc_hard_threshold``
``GC_Block_Selection_Policy``        ``gc_policy``: GREEDY and RGA (randomised greedy)
                                     -> ``greedy``; RANDOM, RANDOM_P, RANDOM_PP and FIFO
                                     have no counterpart and also map to ``greedy``
``Use_Copyback_for_GC``              ``gc_copyback``
``Dynamic_Wearleveling_Enabled``     ``dynamic_wear_leveling``
``Static_Wearleveling_Enabled``      ``static_wear_leveling``
``Static_Wearleveling_Threshold``    ``static_wl_threshold``
``Plane_Allocation_Scheme``          ``allocation_order`` (CWDP and its permutations)
``Flash_Channel_Count``              ``channels``
``Flash_Channel_Width`` (bytes)      ``channel_width_bits`` (x 8)
``Channel_Transfer_Rate`` (MT/s)     ``channel_rate_mtps``
``Chip_No_Per_Channel``              ``chips_per_channel``
``Flash_Technology``                 ``cell_type``
``Page_Read_Latency_LSB/CSB/MSB``    ``t_r_page`` (LSB[, CSB], MSB by bits per cell);
                                     ``t_r`` is their mean
``Page_Program_Latency_LSB/CSB/MSB`` ``t_prog_page``, ``t_prog``
``Block_Erase_Latency``              ``t_bers``
``Block_PE_Cycles_Limit``            ``pe_limit``
``Die_No_Per_Chip``                  ``dies_per_chip``
``Plane_No_Per_Die``                 ``planes_per_die``
``Block_No_Per_Plane``               ``blocks_per_plane``
``Page_No_Per_Block``                ``pages_per_block``
``Page_Capacity``                    ``page_size``
==================================== =================================================

``IO_Queue_Depth``                   ``nvme_queue_depth``
``Suspend_Program_Time`` (ns)        ``t_suspend_program``
``Suspend_Erase_Time`` (ns)          ``t_suspend_erase``
``Preferred_suspend_write_time_for_read`` (ns) ``suspend_min_remaining``

MQSim's DRAM data cache is used per flow (``Device_Level_Data_Caching_Mode``), so its
capacity does not map to ``write_buffer_bytes``; the CMT has no counterpart. Those
settings are ignored, and fields absent from the file keep ``base``'s values.
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from flash.config import CELL_BITS, MQSIM_DEFAULT, FlashConfig
from tmhw.sim import ConfigError, TmhwError
from tmhw.sim.units import NS

_INT = {
    "PCIe_Lane_Count": "pcie_lanes",
    "Flash_Channel_Count": "channels",
    "Channel_Transfer_Rate": "channel_rate_mtps",
    "Chip_No_Per_Channel": "chips_per_channel",
    "Block_PE_Cycles_Limit": "pe_limit",
    "Die_No_Per_Chip": "dies_per_chip",
    "Plane_No_Per_Die": "planes_per_die",
    "Block_No_Per_Plane": "blocks_per_plane",
    "Page_No_Per_Block": "pages_per_block",
    "Page_Capacity": "page_size",
    "Static_Wearleveling_Threshold": "static_wl_threshold",
    "IO_Queue_Depth": "nvme_queue_depth",
}
_FLOAT = {
    "PCIe_Lane_Bandwidth": "pcie_lane_gbps",
    "Overprovisioning_Ratio": "over_provisioning",
    "GC_Exec_Threshold": "gc_threshold",
    "GC_Hard_Threshold": "gc_hard_threshold",
}
_BOOL = {
    "Use_Copyback_for_GC": "gc_copyback",
    "Dynamic_Wearleveling_Enabled": "dynamic_wear_leveling",
    "Static_Wearleveling_Enabled": "static_wear_leveling",
}
#: times in ns in the file, ps here
_TIME_NS = {
    "Block_Erase_Latency": "t_bers",
    "Suspend_Program_Time": "t_suspend_program",
    "Suspend_Erase_Time": "t_suspend_erase",
    "Preferred_suspend_write_time_for_read": "suspend_min_remaining",
}
_PAGE_TYPES = {1: ("LSB",), 2: ("LSB", "MSB"), 3: ("LSB", "CSB", "MSB"),
               4: ("LSB", "CSB", "MSB", "TSB")}


def load_mqsim_xml(path: str | Path, base: FlashConfig = MQSIM_DEFAULT) -> FlashConfig:
    """The device an MQSim ``ssdconfig.xml`` describes, as a ``FlashConfig``."""
    p = Path(path)
    try:
        root = ET.parse(p).getroot()
    except (OSError, ET.ParseError) as e:
        raise TmhwError(f"{p}: not a readable MQSim XML file ({e})") from e
    leaves = {el.tag: (el.text or "").strip() for el in root.iter() if len(el) == 0}
    if "Flash_Channel_Count" not in leaves and "Page_Capacity" not in leaves:
        raise TmhwError(f"{p}: no MQSim Device_Parameter_Set (Flash_Channel_Count, "
                        f"Page_Capacity) found")
    kw: dict[str, Any] = {"name": p.stem}

    def num(tag: str, conv: type) -> Any:
        try:
            return conv(float(leaves[tag])) if conv is int else conv(leaves[tag])
        except ValueError:
            raise ConfigError(tag, leaves[tag], f"a number ({p})") from None

    for tag, f in _INT.items():
        if tag in leaves:
            kw[f] = num(tag, int)
    for tag, f in _FLOAT.items():
        if tag in leaves:
            kw[f] = num(tag, float)
    for tag, f in _BOOL.items():
        if tag in leaves:
            kw[f] = leaves[tag].lower() == "true"
    if "Flash_Channel_Width" in leaves:
        kw["channel_width_bits"] = num("Flash_Channel_Width", int) * 8
    if "Plane_Allocation_Scheme" in leaves:
        kw["allocation_order"] = leaves["Plane_Allocation_Scheme"].upper()
    if "GC_Block_Selection_Policy" in leaves:
        kw["gc_policy"] = "greedy"
    cell = leaves.get("Flash_Technology", base.cell_type).upper()
    kw["cell_type"] = cell
    if cell in CELL_BITS:
        types = _PAGE_TYPES[CELL_BITS[cell]]
        for prefix, field, single in (("Page_Read_Latency_", "t_r_page", "t_r"),
                                      ("Page_Program_Latency_", "t_prog_page", "t_prog")):
            tags = [prefix + t for t in types]
            if all(t in leaves for t in tags):
                vals = tuple(int(round(float(leaves[t]) * NS)) for t in tags)
                kw[single] = int(round(sum(vals) / len(vals)))
                kw[field] = () if len(set(vals)) == 1 else vals
    for tag, f in _TIME_NS.items():
        if tag in leaves:
            kw[f] = int(round(num(tag, float) * NS))
    return dataclasses.replace(base, **kw)
