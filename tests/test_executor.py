"""The executor as a state machine: random small training iterations, HBM capacities and
policies (every name in the registry, so a new policy is checked as soon as it is
registered), run event by event, with every invariant checked after each step:

- HBM occupancy never exceeds the capacity, now or at its peak;
- the residency's books balance and no live page is lost (each is in HBM or on flash);
- every operand of the op the NPU is computing is held in HBM;
- simulated time never goes back, and iterations follow one another;
- at the end, the bytes between the tiers are conserved: flash read what the DMA engine
  fetched and was written what it wrote back.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tmhw.config import PAPER, with_overrides
from tmhw.placement.base import op_working_set_pages
from tmhw.placement.registry import POLICIES
from tmhw.sim.errors import TmhwError
from tmhw.system import System
from tmhw.workload.builder import WorkloadBuilder
from tmhw.workload.graph import Workload


@st.composite
def workloads(draw: st.DrawFn) -> Workload:
    """A few linear and element-wise layers (random widths, residual reads, saved
    tensors): a forward pass, its backward and an Adam or SGD step, in 4 KiB pages."""
    batch = draw(st.integers(1, 4))
    tokens = batch * draw(st.sampled_from([16, 64, 256]))
    b = WorkloadBuilder("tiny", batch=batch, optimizer=draw(st.sampled_from(["adam", "sgd"])))
    d = draw(st.sampled_from([32, 128, 512]))
    x = b.input("x", tokens * d)
    for i in range(draw(st.integers(2, 6))):
        kind = draw(st.sampled_from(["linear", "eltwise", "residual"]))
        if kind == "linear":
            d_out = draw(st.sampled_from([32, 128, 512]))
            x = b.linear(f"l{i}", x, tokens, d, d_out)
            d = d_out
        elif kind == "eltwise":
            x = b.eltwise(f"e{i}", (x,), tokens * d, 1.0,
                          saves=draw(st.sampled_from(["input", "output", "none"])))
        else:
            y = b.linear(f"l{i}", x, tokens, d, d)
            x = b.eltwise(f"r{i}", (x, y), tokens * d, 1.0)
    return b.finish(x)


class ExecutorMachine(RuleBasedStateMachine):
    """One System stepped through its SimPy events; ``system`` is None when the policy
    refuses the capacity (FlashNeuron's "does not fit", a one-line TmhwError)."""

    system: System | None

    @initialize(wl=workloads(), frac=st.floats(0.0, 1.0), policy=st.sampled_from(
        sorted(POLICIES)), iterations=st.integers(1, 3),
        chunk_kib=st.sampled_from([16, 64, 2048]))
    def build(self, wl: Workload, frac: float, policy: str, iterations: int,
              chunk_kib: int) -> None:
        ws = int(op_working_set_pages(wl).max())
        foot = -(-wl.peak_live_bytes() // wl.page_size)
        lo = (ws + 1) / foot
        ratio = min(1.0, lo + frac * (1.0 - lo))
        cfg = with_overrides(PAPER, [f'policy.name="{policy}"', f"policy.hbm_ratio={ratio}",
                                     f"run.iterations={iterations}", "run.warmup_iterations=1",
                                     f"dma.chunk_bytes={chunk_kib * 1024}"])
        try:
            self.system = System(cfg, workload=wl)
        except TmhwError as e:
            # a capacity it refuses, or a policy that builds its own iteration from the
            # config (recomputation) and so cannot run a hand-built one
            rebuilds = f"policy.name: {policy} rebuilds the workload"
            assert str(e).startswith(("policy.hbm_ratio", rebuilds)) and "\n" not in str(e), e
            self.system = None
            return
        s = self.system
        self.page = wl.page_size
        self.computing: int | None = None
        self.last_now = 0
        op_of = {id(t): i for i, t in enumerate(s.executor.tasks)}
        execute = s.executor.npu.execute

        def watched(task: Any) -> Generator[Any, Any, Any]:
            self.computing = op_of.get(id(task))
            self._operands_held()
            result = yield from execute(task)
            self._operands_held()
            self.computing = None
            return result

        s.executor.npu.execute = watched  # type: ignore[method-assign]
        s.root.elaborate()
        s.root.start()

    def _running(self) -> bool:
        s = self.system
        return s is not None and s.executor.done is not None and not s.executor.done.processed

    def _operands_held(self) -> None:
        s = self.system
        assert s is not None
        op = self.computing
        if op is None or s.executor.streamed[op]:
            return              # a streamed op holds a window of its operands, by design
        res = s.res
        for t in s.workload.ops[op].tensors:
            if t in s.executor.in_place_operands:
                continue        # FlatFlash reads it from the SSD, by design
            p0, p1 = s.executor.ranges[t]
            assert res.in_hbm[p0:p1].all(), \
                f"{s.workload.ops[op].name} computes without {s.workload.tensors[t].name}"

    @rule(events=st.integers(1, 400))
    def step(self, events: int) -> None:
        """Process up to ``events`` events (none once the run is over or was refused)."""
        for _ in range(events):
            if not self._running():
                break
            assert self.system is not None
            self.system.env.step()

    @precondition(lambda self: self._running())
    @rule()
    def finish(self) -> None:
        """Run to the end and check that the bytes between the tiers are conserved."""
        s = self.system
        assert s is not None and s.executor.done is not None
        s.env.run(until=s.executor.done)
        s.root.finalize(int(s.env.now))
        rep = s.root.report()
        dma, fl = rep["dma"], rep["flash"]
        # flash serves what the DMA engine fetched and what the NPU read in place
        assert (fl["bytes_read"], fl["bytes_written"]) == (
            dma["fetch_bytes"] + dma["inplace_bytes"], dma["writeback_bytes"])
        recs = s.executor.metrics.records
        assert len(recs) == s.cfg.run.iterations
        assert all(a.end_ps <= b.start_ps for a, b in zip(recs, recs[1:], strict=False))

    @invariant()
    def hbm_within_capacity(self) -> None:
        if self.system is None:
            return
        res = self.system.res
        assert res.occupied_pages <= res.capacity
        assert res.level.peak <= res.capacity * self.page

    @invariant()
    def books_balance_and_no_page_is_lost(self) -> None:
        if self.system is not None:
            self.system.res.check()

    @invariant()
    def operands_of_the_computing_op_are_held(self) -> None:
        if self.system is not None:
            self._operands_held()

    @invariant()
    def time_is_monotone(self) -> None:
        s = self.system
        if s is None:
            return
        now = int(s.env.now)
        assert now >= self.last_now
        self.last_now = now
        assert all(r.start_ps <= r.end_ps <= now for r in s.executor.metrics.records)


ExecutorMachine.TestCase.settings = settings(
    max_examples=12, stateful_step_count=8, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_executor_state_machine = ExecutorMachine.TestCase
