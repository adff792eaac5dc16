"""The DMA engine's chunk sizes, derived from the flash tier where the configuration
leaves them 0 (``chunk_sizes``). Pure: no SimPy."""

from __future__ import annotations

import math

from flash import FlashConfig
from tmhw.config import DmaConfig


def _pow2_floor(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def _pow2_ceil(n: int) -> int:
    return 1 << (max(1, n) - 1).bit_length()


def chunk_sizes(dma: DmaConfig, flash: FlashConfig, hbm_bytes: int) -> tuple[int, int]:
    """(fetch, write-back) chunk bytes: ``dma.chunk_bytes`` and
    ``dma.writeback_chunk_bytes`` where set, else derived from the flash tier.

    A chunk is striped over the devices (``flash.stripe_bytes``) and, within a device,
    its pages over the dies channel first, in the order they were written; so it
    reaches every plane of every die of every device only if it spans at least
    ``stripe = devices x dies x planes_per_die x page_size`` (990pro: 2 MiB; one
    PM1743-like device: 4 MiB, two: 8 MiB).

    - **Fetch.** On a die that is programming, a burst of reads pays one program
      suspend (``t_suspend_program``) and then holds the die about ``tR`` per page per
      plane. A chunk of ``k`` pages per plane makes each die's burst ``k x tR`` long;
      ``k = ceil(2 x t_suspend_program / tR)`` keeps the suspend within a third of the
      die's time for the burst (``k = 1`` without program suspend). PM1743-like, two
      devices, GPT-2 large 4 layers s256 b8 at 50% HBM, TM-Training (iterations 4,
      warm-up 2): 2, 4, 8, 16, 32 MiB chunks give 248.1, 190.6, 165.9, 156.9, 153.7 ms
      per iteration, program suspends 333.8k, 170.5k, 89.6k, 47.3k, 31.4k; on the 990pro
      (link-bound) 2 against 8 MiB changes the same cell by 0.1%.
    - **Write-back.** Four pages per plane (the 8 MiB measured on the 990pro, see
      ``tmhw.config``): a die's programs are multi-plane when each of its planes has a
      page waiting.

    Both are rounded down to a power of two, never below the stripe (rounded up to a
    power of two), and capped so that a window of ``dma.max_outstanding`` chunks in
    flight takes at most half of HBM (fetches, which need free space to land in) or
    all of it (write-backs, which free it).
    The cap counts where HBM is small: GPT-2 small 12 layers s128 b4 at 12.5% HBM (248
    MiB) on the 990pro, TM-Training takes 315.1, 311.7 and 322.8 ms with 2, 4 and 8 MiB
    fetch chunks (Sentinel 317.0, 316.4, 317.5)."""
    stripe = _pow2_ceil(flash.devices * flash.planes * flash.page_size)
    window = max(1, dma.max_outstanding)
    k = 1
    if flash.program_suspend and flash.t_suspend_program > 0 and flash.t_r_mean > 0:
        k = max(1, math.ceil(2 * flash.t_suspend_program / flash.t_r_mean))

    def derive(per_plane: int, cap: int) -> int:
        return max(stripe, _pow2_floor(min(cap, stripe * per_plane)))

    return (dma.chunk_bytes or derive(k, hbm_bytes // (2 * window)),
            dma.writeback_chunk_bytes or derive(4, hbm_bytes // window))
