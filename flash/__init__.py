"""NAND flash: die/plane timing, ONFI channels, a flash controller and a page-level FTL.

``FlashConfig`` and ``PRESETS`` describe devices; ``FlashTarget`` is the SSD as a
memory target (fast chunk-level or detailed per-page timing); ``load_mqsim_xml`` reads an
MQSim ``ssdconfig.xml``.
"""

from flash.config import PRESETS, FlashConfig, FlashEnergy, OnfiTiming
from flash.mqsim import load_mqsim_xml
from flash.target import FlashTarget

__all__ = ["FlashConfig", "FlashEnergy", "FlashTarget", "OnfiTiming", "PRESETS",
           "load_mqsim_xml"]
