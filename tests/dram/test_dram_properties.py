"""Controller invariants on generated request streams: every command is legal, every
request completes exactly once, bursts are conserved, refresh keeps up."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dram import PRESETS, DramConfig
from dram.checker import check_log, refresh_debt
from dram.controller import DetailedModel
from tmhw.sim.transfer import Pattern
from tmhw.sim.units import NS

# Small queues make the watermarks, back-pressure and refresh interplay frequent.
configs = st.builds(
    lambda name, page, refresh, q, ranks: _cfg(name, page, refresh, q, ranks),
    st.sampled_from(["hbm2", "hbm3", "ddr4-3200", "lpddr5-6400", "ddr5-4800"]),
    st.sampled_from(["open", "closed"]),
    st.sampled_from(["all-bank", "per-bank", "off"]),
    st.sampled_from([4, 8, 32]),
    st.sampled_from([1, 1, 2]),
)


def _cfg(name: str, page: str, refresh: str, q: int, ranks: int) -> DramConfig:
    base = PRESETS[name]
    if refresh == "per-bank" and (base.t_rfc_pb == 0
                                  or base.t_rfc_pb * base.banks * ranks >= base.t_refi):
        refresh = "all-bank"
    return replace(base, channels=1, ranks=ranks, page_policy=page, refresh=refresh,
                   read_queue=q, write_queue=q, write_high=max(1, q * 3 // 4),
                   write_low=q // 4)


requests = st.lists(
    st.tuples(
        st.booleans(),                                   # write
        st.integers(0, 1 << 22),                         # address / 64
        st.sampled_from([32, 64, 256, 2048, 8192]),       # bytes
        st.sampled_from([Pattern.STREAM, Pattern.STREAM, Pattern.RANDOM]),
        st.integers(0, 400),                             # arrival gap, ns
    ),
    min_size=1, max_size=30,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs, reqs=requests)
def test_no_command_violates_timing_and_every_request_completes_once(
        cfg: DramConfig, reqs: list[tuple[bool, int, int, Pattern, int]]) -> None:
    m = DetailedModel(cfg, log=True)
    t = 0
    bursts = 0
    for write, line, nbytes, pattern, gap in reqs:
        t += gap * NS
        before = sum(len(c.pending) for c in m.ctrls)
        m.submit(write, line * 64, nbytes, pattern, t)
        bursts += sum(len(c.pending) for c in m.ctrls) - before
    m.run()
    ids = [r for r, _, _ in m.completed]
    assert sorted(ids) == list(range(len(reqs)))
    assert m.bursts_read + m.bursts_written == bursts
    for r, start, end in m.completed:
        assert m.req_arrival[r] <= start < end
    for log in m.logs():
        assert check_log(cfg, log) == []
        assert refresh_debt(cfg, log, m.last_end) == 0


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cfg=configs, reqs=requests)
def test_transport_one_at_a_time_serves_each_request_after_it_arrives(
        cfg: DramConfig, reqs: list[tuple[bool, int, int, Pattern, int]]) -> None:
    m = DetailedModel(cfg, log=True)
    t = 0
    for write, line, nbytes, pattern, gap in reqs:
        t += gap * NS
        end = m.serve(write, line * 64, nbytes, pattern, t)
        assert end > t
    for log in m.logs():
        assert check_log(cfg, log) == []
