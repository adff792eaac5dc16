"""DRAM energy from IDD currents, in the DRAMPower / DRAMsim3 form, with times in ns.

Per device, VDD in V, currents in mA, times in ns (mA x V x ns = pJ):

    E_act = VDD x (IDD0 x tRC - (IDD3N x tRAS + IDD2N x tRP))   per ACT/PRE pair
    E_rd  = VDD x (IDD4R - IDD3N) x t_burst                        per RD burst
    E_wr  = VDD x (IDD4W - IDD3N) x t_burst                        per WR burst
    E_ref = VDD x (IDD5AB - IDD3N) x tRFC                          per all-bank REF
    P_bg  = VDD x IDD3N (a bank open) or VDD x IDD2N (all precharged), mW

each times ``devices_per_rank`` (DRAMPower and DRAMsim3 use this form). DRAMsim3
multiplies by cycles instead of ns, which is right only at tCK = 1 ns (its issue 18);
this module uses ns.
A per-bank refresh refreshes 1/banks of what an all-bank refresh does, so it costs
E_ref / banks (no open IDD5PB figure).

The IDD currents are measured with unloaded outputs, so the data I/O energy comes on
top as ``io_pj_per_bit`` per bit moved. Where ``pj_per_bit`` is set it is the whole
device energy per bit moved and every other term is zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from dram.config import DramConfig
from tmhw.sim.energy import EnergyTable
from tmhw.sim.units import NS


@dataclass(frozen=True, slots=True)
class DramEnergy:
    """Per-action energies (pJ) and background powers (mW) of one rank of one unit."""

    act_pj: float
    rd_pj: float
    wr_pj: float
    ref_pj: float
    ref_pb_pj: float
    active_standby_mw: float
    precharged_standby_mw: float

    def table(self) -> EnergyTable:
        return EnergyTable(action_pj={"act": self.act_pj, "rd": self.rd_pj,
                                      "wr": self.wr_pj, "ref": self.ref_pj,
                                      "ref_pb": self.ref_pb_pj})


def energies(cfg: DramConfig) -> DramEnergy:
    """The per-action energies of ``cfg`` (see the module docstring)."""
    burst_bits = cfg.burst_bytes * 8
    if cfg.pj_per_bit > 0:
        e = cfg.pj_per_bit * burst_bits
        return DramEnergy(0.0, e, e, 0.0, 0.0, 0.0, 0.0)
    n = cfg.devices_per_rank
    v = cfg.vdd

    def ns(ps: int) -> float:
        return ps / NS

    act = v * (cfg.idd0 * ns(cfg.t_rc) - (cfg.idd3n * ns(cfg.t_ras) + cfg.idd2n * ns(cfg.t_rp)))
    io = cfg.io_pj_per_bit * burst_bits
    rd = v * (cfg.idd4r - cfg.idd3n) * ns(cfg.t_burst) * n + io
    wr = v * (cfg.idd4w - cfg.idd3n) * ns(cfg.t_burst) * n + io
    ref = v * (cfg.idd5ab - cfg.idd3n) * ns(cfg.t_rfc) * n
    return DramEnergy(act_pj=act * n, rd_pj=rd, wr_pj=wr, ref_pj=ref,
                      ref_pb_pj=ref / cfg.banks,
                      active_standby_mw=v * cfg.idd3n * n,
                      precharged_standby_mw=v * cfg.idd2n * n)
