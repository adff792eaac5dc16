"""``flash.runlru.RunLru`` keeps exactly the order of an ``OrderedDict`` of pages moved
to its end one at a time, the oldest leaving first."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from flash.runlru import RunLru

steps = st.lists(st.tuples(st.sampled_from(["push", "pages", "remove", "trim", "look"]),
                           st.integers(0, 400), st.integers(0, 120)),
                 min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(steps, st.sampled_from([2, 3, 64]))
def test_run_lru_orders_pages_as_a_map_one_page_at_a_time(
        ops: list[tuple[str, int, int]], rows: int) -> None:
    """Whatever the arrays' first size: from two rows they grow as segments come (a cut
    inside a segment, a push), and every order, look-up and count stays the map's."""
    lru = RunLru(rows)
    ref: OrderedDict[int, None] = OrderedDict()
    for kind, lo, n in ops:
        hi = lo + n
        if kind == "push":
            lru.push(lo, hi)
            for p in range(lo, hi):
                ref[p] = None
                ref.move_to_end(p)
        elif kind == "pages":  # a page order with stretches, steps back and repeats
            pages = [(lo + (3 * i) % (n + 1)) for i in range(n)] + list(range(lo, lo + n // 2))
            lru.push_pages(pages)
            for p in pages:
                ref[p] = None
                ref.move_to_end(p)
        elif kind == "remove":
            want = sum(1 for p in ref if lo <= p < hi)
            assert lru.remove(lo, hi) == want
            for p in [p for p in ref if lo <= p < hi]:
                del ref[p]
        elif kind == "trim":
            cap = n
            gone = [p for a, b in lru.trim(cap) for p in range(a, b)]
            want = []
            while len(ref) > cap:
                want.append(ref.popitem(last=False)[0])
            assert gone == want
        else:
            held = sorted(p for p in ref if lo <= p < hi)
            assert [p for a, b in lru.runs_in(lo, hi) for p in range(a, b)] == held
            assert lru.overlaps(lo, hi) == bool(held)
            assert all((p in lru) == (p in ref) for p in range(lo, hi + 1))
        lru.check()
        assert list(lru) == list(ref)
        assert len(lru) == len(ref)


def test_a_stream_of_runs_is_one_segment() -> None:
    """Runs that continue each other join the newest segment: a stream costs one."""
    lru = RunLru()
    for k in range(100):
        lru.push(64 * k, 64 * (k + 1))
    assert lru.segments() == [(0, 6400)]
    assert lru.trim(100) == [(0, 6300)]
    assert lru.segments() == [(6300, 6400)]
