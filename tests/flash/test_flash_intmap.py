"""The controller's sparse tables (``flash.intmap.IntMap``) answer as a dict: driven
with the same inserts, lookups and deletions, from Python and from the kernels in turn,
on tables small enough that keys collide, probe runs wrap around the end and
deletions move keys back, they hold the same pairs after every step."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from flash.intmap import (
    IntMap,
    im_get,
    im_get_many,
    im_pop,
    im_pop_range,
    im_put,
)

KEYS = 48  # keys drawn from [0, KEYS), a few far ones besides: many share a first row

key = st.one_of(st.integers(0, KEYS - 1), st.sampled_from([2**31 - 1, 2**31, 2**40 + 3]))
step = st.tuples(st.sampled_from(["set", "put", "popif", "pop", "get", "kset", "kpop",
                                  "kget", "many", "range"]), key, st.integers(-5, 10**6))


@settings(max_examples=200, deadline=None)
@given(steps=st.lists(step, min_size=1, max_size=120), rows=st.sampled_from([2, 4, 16]))
def test_intmap_answers_as_a_dict(steps: list[tuple[str, int, int]], rows: int) -> None:
    m, d = IntMap(rows), {}
    for kind, k, v in steps:
        if kind == "set":
            m[k] = v
            d[k] = v
        elif kind == "put":
            assert m.put(k, v) == (k not in d)
            d[k] = v
        elif kind == "popif":  # the entry goes only if its value is at most v
            m.pop_if(k, lambda e, v=v: e <= v)
            if d.get(k, v + 1) <= v:
                del d[k]
        elif kind == "pop":
            assert m.pop(k, -9) == d.pop(k, -9)
        elif kind == "get":
            assert m.get(k) == d.get(k)
            assert (k in m) == (k in d)
        elif kind == "kset":
            m.reserve(1)
            assert im_put(m.table, m.meta, k, v) == int(k not in d)
            d[k] = v
        elif kind == "kpop":
            assert im_pop(m.table, m.meta, k, -9) == d.pop(k, -9)
        elif kind == "kget":
            assert im_get(m.table, m.meta, k, -9) == d.get(k, -9)
        elif kind == "many":
            ks = np.arange(k, k + 5, dtype=np.int64)
            m.update(ks, ks + v)
            d.update(zip(ks.tolist(), (ks + v).tolist(), strict=True))
            got = np.empty(5, dtype=np.int64)
            im_get_many(m.table, m.meta, ks[::-1].copy(), -9, got)
            assert got.tolist() == [d[x] for x in ks[::-1].tolist()]
        else:
            got = np.empty(3, dtype=np.int64)
            im_pop_range(m.table, m.meta, k, k + 3, -9, got)
            assert got.tolist() == [d.pop(x, -9) for x in range(k, k + 3)]
        assert m.as_dict() == d
        assert len(m) == len(d) and bool(m) == bool(d)
        # every key is found from its own first row: no hole in a probe run
        assert all(m.get(x) == y for x, y in d.items())
