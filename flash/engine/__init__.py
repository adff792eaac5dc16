"""The flash device's booking rules, each written once, as compiled kernels
(``tmhw.sim.jit``; plain Python under ``NUMBA_DISABLE_JIT=1``).

- ``dies``: the die lanes (``DieLanes`` and its kernels): a read with read priority,
  suspension and MQSim's chip batches; a program with multi-plane merging; a hold of
  the cache register; garbage-collection work and erases.
- ``gaps``: the gap-filling lanes of channels and the host link (``GapBank`` and its
  kernels): fit, book, cover, prune.
- ``chunks``: a chunk's pages grouped into commands per die, and a chunk's or one
  page's read or program booked on its dies and channels in one call.

The timing models (``flash.fast``, ``flash.detailed``), the MQSim-compatible mode and
the batch path (``flash.pages``) book through these kernels and nothing else.
"""
