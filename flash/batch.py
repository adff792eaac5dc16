"""The flash device's own best-case time for a batch of reads and writes: how long the
SSD model needs to serve ``read_bytes`` of reads and ``write_bytes`` of writes all
issued at time 0, in the order that suits it best. This is the device's term of the
iteration-time lower bound (``tmhw.placement.bounds.time_bound_ps``), evaluated on the
minimum traffic.

Where the data lies. Preconditioning maps the reads' range ``[0, read_bytes)`` (at
least; ``precondition`` may ask for more), as the system maps the workload's pages, so
every read hits data written before time 0 and costs a real page read. Writes go to a
range of their own, after the reads' one. The system writes a tensor back over its
home pages instead, but that takes the same time: the FTL allocates a logical page in
the plane at stripe position ``page % planes`` whatever it held before, and both ranges
start on a stripe boundary, so each transfer touches the same dies and channels with the
same page counts. Keeping them apart means no read ever lands on a page the batch
rewrote (the FTL would have moved it).

In what order. The fast model books a transfer's dies, channels and link direction as
one chunk, so its result depends on how the batch is cut, and no one cut is best
everywhere (measured on 1.7 GB each way): one transfer per direction books each
resource as one busy span and is best when the host link limits both directions (the
990 PRO-like device: 225 ms, the link's 224.7 ms); a die-bound write stream (the
PM1743-like device) finishes sooner in 16 MiB rounds, whose programs start as soon as
their data is in (295 ms against 352 ms whole); the MQSim-default device does best in
1 GiB rounds. Reads go before writes in every round: dies serve their commands in order
in the fast model, and a read booked behind a program waits out tPROG (10 x tR), while
programs booked behind reads lose only tR per multi-plane page (all writes first
doubles the 990 PRO-like device's time). So the batch is served by each of these
schedules, and the shortest time counts; it is the best order found, not a proven
optimum of the model:

- ``whole``: all reads as one transfer, then all writes as one;
- ``alt<C>``: rounds of one C-byte read then one C-byte write, C in ``CHUNKS``;
- ``prop<C>``: as many rounds as ``alt<C>`` has, each with the same share of the reads
  and of the writes, so both streams end together.

The search stops at the first schedule within ``GOOD_ENOUGH`` (0.5%) of ``floor_ps``,
the bandwidth floor no order can beat (link per direction, channels for both, dies
reading or programming); on the 990 PRO-like device ``whole`` is 0.2% above it, so one
schedule suffices.

The schedules run one after the other on one device, each starting when every die,
channel and link direction is idle again and writing stripes of its own; the fast model
is time-invariant and reads only preconditioned pages, so each sees what a fresh device
would, as long as their writes fit the spare blocks without garbage collection (they do
for any batch far smaller than the over-provisioned space; if not, a later schedule only
looks slower, never faster). Preconditioning once instead of once per schedule keeps a
batch of a few GB within about half a second. A batch too large for a range per
schedule runs each schedule on a fresh device instead.

Nothing reads what the batch writes, and no block is collected, so the devices' FTLs
only place the writes (``FTL.place_only``): the same pages as the whole FTL, without
its maps, which were most of the batch's time (five schedules of 259 GB, 79 M pages of
16 KiB, in the GPT-3 stack of ``tmhw bench --case e2e-gpt``: 6.2 s, then 1.1 s).

Independent of the rest of the system: this module uses only ``flash`` and
``tmhw.sim``.
"""

from __future__ import annotations

import math

from flash.config import FlashConfig
from flash.target import FlashTarget
from tmhw.sim import Component, Op, TmhwError, Transfer
from tmhw.sim.env import Environment
from tmhw.sim.units import MiB, S

#: Chunk sizes (bytes) of the interleaved schedules; each is tried while below the batch.
CHUNKS: tuple[int, ...] = (16 * MiB, 64 * MiB, 256 * MiB, 1024 * MiB)

#: A schedule within this fraction of ``floor_ps`` ends the search: no order can gain more.
GOOD_ENOUGH = 0.005

#: One transfer: (op, logical byte address, bytes).
Step = tuple[Op, int, int]


def floor_ps(cfg: FlashConfig, read_bytes: int, write_bytes: int, *,
             drain: bool = False) -> int:
    """No order serves the batch faster than this on the flash tier ``cfg`` (ps): each
    direction of the host links carries its bytes; the channels carry the reads and the
    writes not acknowledged from the write buffer; a die either reads or programs, so the
    dies' read time and program time add up. With ``drain`` every write is programmed
    within the batch."""
    n = cfg.devices
    # the last write_buffer_bytes of each device's writes are acknowledged from its
    # controller DRAM before they cross the channels or are programmed (unless the batch
    # counts until they are: ``drain``)
    nand_w = write_bytes if drain else max(0, write_bytes - n * cfg.write_buffer_bytes)
    return max(math.ceil(read_bytes * S / (n * cfg.host_read_bytes_per_s)),
               math.ceil(write_bytes * S / (n * cfg.host_write_bytes_per_s)),
               math.ceil((read_bytes + nand_w) * S / (n * cfg.channels_bytes_per_s)),
               math.ceil(read_bytes * S / (n * cfg.die_read_bytes_per_s)
                         + nand_w * S / (n * cfg.die_program_bytes_per_s)))


def schedules(read_bytes: int, write_bytes: int) -> dict[str, list[Step]]:
    """The orders a batch is tried in (module docstring), by name."""
    span = max(read_bytes, write_bytes)
    out: dict[str, list[Step]] = {
        "whole": [(op, 0, n) for op, n in ((Op.READ, read_bytes), (Op.WRITE, write_bytes))
                  if n]}
    for c in CHUNKS:
        if c >= span:
            break
        rounds = -(-span // c)
        out[f"alt{c // MiB}"] = _rounds(
            [min(read_bytes, (i + 1) * c) for i in range(rounds)],
            [min(write_bytes, (i + 1) * c) for i in range(rounds)])
        if read_bytes and write_bytes and read_bytes != write_bytes:
            out[f"prop{c // MiB}"] = _rounds(
                [read_bytes * (i + 1) // rounds for i in range(rounds)],
                [write_bytes * (i + 1) // rounds for i in range(rounds)])
    return out


def _rounds(read_ends: list[int], write_ends: list[int]) -> list[Step]:
    """Rounds of one read then one write, each stream up to the given end offsets."""
    steps: list[Step] = []
    r0 = w0 = 0
    for r1, w1 in zip(read_ends, write_ends, strict=True):
        if r1 > r0:
            steps.append((Op.READ, r0, r1 - r0))
            r0 = r1
        if w1 > w0:
            steps.append((Op.WRITE, w0, w1 - w0))
            w0 = w1
    return steps


def batch_times_ps(cfg: FlashConfig, read_bytes: int, write_bytes: int, *,
                   precondition: float = 0.0, seed: int = 0,
                   model: str = "fast", drain: bool = False) -> dict[str, int]:
    """Time in ps of each schedule (``schedules``) to serve the batch on device
    ``cfg``: from its first transfer's issue to its last completion. The schedules are
    tried in order until one comes within ``GOOD_ENOUGH`` of ``floor_ps``. ``precondition``
    is the least fraction of the logical space mapped before time 0; ``seed`` and
    ``model`` (``fast`` or ``detailed``) are the ``FlashTarget``'s. With ``drain`` a
    schedule ends when the device is idle again, every write programmed, not when the
    last write is acknowledged from the write buffer: the device's work for the batch,
    which a periodic steady state must fit in each period whatever its buffer."""
    if read_bytes < 0 or write_bytes < 0:
        raise TmhwError(f"flash batch: byte counts must be >= 0 (read {read_bytes}, "
                        f"write {write_bytes})")
    span = max(read_bytes, write_bytes)
    if span > cfg.total_capacity:
        raise TmhwError(f"flash batch: {span} bytes exceed the flash tier's logical "
                        f"capacity of {cfg.total_capacity} bytes")
    if span == 0:
        return {"whole": 0}
    plan = schedules(read_bytes, write_bytes)
    page = cfg.page_size
    # a stripe over every plane of every device
    stripe = (cfg.planes if cfg.devices == 1
              else math.lcm(cfg.planes, cfg.stripe_bytes // page) * cfg.devices)
    logical_pages = cfg.devices * cfg.logical_pages
    read_pages = _ceil(read_bytes, page)
    # ranges in whole stripes, so every range starts on the same plane as byte 0
    rp = _ceil(read_pages, stripe) * stripe
    wp = _ceil(_ceil(write_bytes, page), stripe) * stripe
    # the reads' range mapped; the half page absorbs float rounding in
    # FTL.precondition's int(fraction x pages)
    pre = max(precondition, min(1.0, (read_pages + 0.5) / logical_pages))
    good = floor_ps(cfg, read_bytes, write_bytes, drain=drain) * (1.0 + GOOD_ENOUGH)
    out: dict[str, int] = {}
    if rp + len(plan) * wp <= logical_pages:
        # one device: schedule k writes stripes of its own after the reads' range and
        # starts once the device is idle again
        dev = _device(cfg, pre, seed, model)
        t0 = 0
        for k, (name, steps) in enumerate(plan.items()):
            end = _serve(dev, steps, t0, (rp + k * wp) * page)
            idle = dev.idle_from()
            out[name] = (max(end, idle) if drain else end) - t0
            if out[name] <= good:
                break
            t0 = idle
        _check_mapped(dev)
        return out
    # too large to give each schedule its own range: a fresh device each
    woff = rp * page if rp + wp <= logical_pages else 0
    for name, steps in plan.items():
        dev = _device(cfg, pre, seed, model)
        end = _serve(dev, steps, 0, woff)
        out[name] = max(end, dev.idle_from()) if drain else end
        _check_mapped(dev)
        if out[name] <= good:
            break
    return out


def batch_time_ps(cfg: FlashConfig, read_bytes: int, write_bytes: int, *,
                  precondition: float = 0.0, seed: int = 0, model: str = "fast",
                  drain: bool = False) -> int:
    """The flash model's own best-case time in ps to serve ``read_bytes`` of reads and
    ``write_bytes`` of writes issued together at time 0 as sequential streams: the
    shortest of ``batch_times_ps`` (module docstring)."""
    return min(batch_times_ps(cfg, read_bytes, write_bytes, precondition=precondition,
                              seed=seed, model=model, drain=drain).values())


def _device(cfg: FlashConfig, precondition: float, seed: int, model: str) -> FlashTarget:
    root = Component(Environment(), "batch")
    dev = FlashTarget(root.env, "flash", root, cfg, model=model, seed=seed,
                      precondition=precondition)
    for d in dev.devices:  # the writes' maps are never read (module docstring)
        d.ftl.place_only()
    root.elaborate()
    root.start()
    return dev


def _serve(dev: FlashTarget, steps: list[Step], t0: int, write_offset: int) -> int:
    """Issue ``steps`` at ``t0`` (writes moved by ``write_offset`` bytes); the latest
    completion."""
    end = t0
    for op, address, nbytes in steps:
        if op is Op.WRITE:
            address += write_offset
        end = max(end, dev.transport(Transfer(op, address, nbytes, tag="batch"), t0))
    return end


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def _check_mapped(dev: FlashTarget) -> None:
    if dev.unmapped_reads:
        raise AssertionError(f"flash batch: {dev.unmapped_reads} reads missed the "
                             "preconditioned range")
