"""NAND flash SSDs in MQSim's layers.

``FlashConfig`` and ``PRESETS`` describe devices; ``FlashTarget`` is the flash tier as a
memory target (one SSD, or several striped RAID-0); ``load_mqsim_xml`` reads an MQSim
``ssdconfig.xml``. The layers, host side first, one file each: ``target`` (the tier,
RAID-0), ``ssd`` (one device), ``host`` (NVMe queue, full-duplex PCIe link), ``cache``
(controller DRAM: write buffer, read cache), ``ftl/`` (mapping, block manager, GC and
wear levelling), ``scheduler`` (command forming, read priority, suspend, chip lock),
``fast`` and ``detailed`` (the two timing models behind ``ssd.TimingModel``), ``phy``
(ONFI command and data timing) and ``engine/`` (the booking rules: die and channel
lanes, chunks, compiled); ``convoy``
arbitrates reads by events under ``compat = "mqsim"`` (``FlashTarget.request``).
``batch`` gives the device's best time for a batch of reads and writes. The fast
model's hot loops are compiled by numba (``tmhw.sim.jit``); ``compile_kernels`` fills
its on-disk cache.
"""

from flash.config import PRESETS, FlashConfig, FlashEnergy, OnfiTiming
from flash.mqsim import load_mqsim_xml
from flash.target import FlashTarget, compile_kernels

__all__ = ["FlashConfig", "FlashEnergy", "FlashTarget", "OnfiTiming", "PRESETS",
           "compile_kernels", "load_mqsim_xml"]
