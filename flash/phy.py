"""The ONFI PHY: command and data timing on one flash channel (MQSim's
``NVM_PHY_ONFI_NVDDR2`` and ``ONFI_Channel_NVDDR2``).

``OnfiPhy`` precomputes, per number of planes a command covers, the command and address
cycles of a read, a program and an erase and the data-out setup, from the ONFI NV-DDR2
times in ``FlashConfig.onfi`` (``FlashConfig.read_command_ps`` and its siblings give the
formulas). Data moves at ``channel_rate_mtps`` transfers per microsecond, each
``channel_width_bits`` wide.

``flash.compat = "mqsim"`` reproduces stock MQSim's whole-nanosecond cycle: MQSim keeps
the time of one transfer as ``1000 / rate`` in integer nanoseconds, so a 333 MT/s channel
moves a byte in 3 ns instead of 3.003, and a channel faster than 1000 MT/s moves data in
no time at all. ``"onfi"`` (the default) uses the physical time.

Pure arithmetic: no SimPy, no state but the tables.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from flash.config import FlashConfig
from tmhw.sim.units import NS


class OnfiPhy:
    """Command and data timing of ``cfg``'s channels, in ps."""

    __slots__ = ("cfg", "mqsim", "rcmd", "rsetup", "pcmd", "rcmd_a", "rsetup_a", "pcmd_a",
                 "ecmd", "page_data", "_xfer_ps", "_per_xfer_bytes")

    def __init__(self, cfg: FlashConfig) -> None:
        self.cfg = cfg
        self.mqsim = cfg.compat == "mqsim"
        planes = cfg.planes_per_die
        #: index k: a command over k planes (index 0 unused)
        self.rcmd = [0] + [cfg.read_command_ps(k) for k in range(1, planes + 1)]
        self.rsetup = [0] + [cfg.read_setup_ps(k) for k in range(1, planes + 1)]
        self.pcmd = [0] + [cfg.program_command_ps(k) for k in range(1, planes + 1)]
        self.rcmd_a = np.array(self.rcmd, dtype=np.int64)
        self.rsetup_a = np.array(self.rsetup, dtype=np.int64)
        self.pcmd_a = np.array(self.pcmd, dtype=np.int64)
        self.ecmd = cfg.erase_command_ps(1)
        # MQSim: one transfer takes (1000 / rate) ns truncated to whole ns
        self._xfer_ps = (1000 // cfg.channel_rate_mtps) * NS
        self._per_xfer_bytes = cfg.channel_width_bits // 8
        self.page_data = self.data_ps(cfg.page_size)

    def data_ps_of(self, nbytes: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        """``data_ps`` of each of ``nbytes`` (a read's bytes wanted of each page: whole
        pages but at a run's ends, each other size computed once)."""
        nbytes = np.asarray(nbytes, dtype=np.int64)
        out = np.full(nbytes.size, self.page_data, dtype=np.int64)
        odd = np.flatnonzero(nbytes != self.cfg.page_size)
        if odd.size:
            values, inverse = np.unique(nbytes[odd], return_inverse=True)
            times = np.array([self.data_ps(v) for v in values.tolist()], dtype=np.int64)
            out[odd] = times[inverse.reshape(-1)]
        return out

    def read1_ps(self, nbytes: int) -> int:
        """A one-page read's time on its channel after tR: its setup and the data-out of
        ``nbytes`` of it."""
        return self.rsetup[1] + (self.page_data if nbytes == self.cfg.page_size
                                 else self.data_ps(nbytes))

    def data_ps(self, nbytes: int) -> int:
        """Time to move ``nbytes`` over one channel."""
        if self.mqsim:
            return -(-nbytes // self._per_xfer_bytes) * self._xfer_ps if nbytes > 0 else 0
        return self.cfg.data_ps(nbytes)
