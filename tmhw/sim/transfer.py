"""The transaction payload and the memory-target protocol (TLM-2.0's generic payload
and ``b_transport`` with an annotated delay).

A ``Transfer`` moves ``nbytes`` between an initiator and a memory tier. A
``MemoryTarget`` serves it loosely timed: ``transport(t, earliest)`` books the target's
internal timelines (channels, dies, banks) and returns the completion time in ps without
creating an event. The initiator yields once, to the latest completion of everything it
issued together.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt


class Op(Enum):
    READ = "read"
    WRITE = "write"
    #: The initiator declares the bytes dead (flash: unmap the pages; no data moves).
    TRIM = "trim"


class Pattern(Enum):
    """Address pattern of a chunk, for chunk-level (fast) timing models."""

    STREAM = "stream"
    STRIDED = "strided"
    RANDOM = "random"


@dataclass(slots=True)
class Transfer:
    """One transaction. ``address`` is a byte address in the target's space (for flash:
    a logical byte address; pages are ``address // page_size``). ``tag`` is free-form
    (tensor name, op index) and only used for tracing.

    ``wire_bytes`` > 0 marks a byte-addressed read through the target's PCIe BAR (MMIO)
    rather than a block (DMA) transfer: ``nbytes`` of data cross the link as
    ``wire_bytes`` (each cache line a completion with its own framing), and a flash
    device keeps every NAND page such a read brings in its DRAM cache."""

    op: Op
    address: int
    nbytes: int
    pattern: Pattern = Pattern.STREAM
    tag: str = ""
    wire_bytes: int = 0

    def __post_init__(self) -> None:
        if self.nbytes < 0 or self.address < 0:
            raise ValueError(f"Transfer with negative address/size: {self}")
        if self.wire_bytes and self.wire_bytes < self.nbytes:
            raise ValueError(f"Transfer with fewer wire bytes than data bytes: {self}")


@runtime_checkable
class Drifting(Protocol):
    """A target whose state drifts slowly across training iterations, repeated or not
    (an SSD's SLC cache filling): the run may skip the drift instead of simulating it
    (``tmhw.run.loop``)."""

    def drift(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per drifting quantity: its value, its upper bound (the lower is 0), and the
        work that moved it so far, in the same unit (pages written)."""
        ...

    def advance_drift(self, amount: np.ndarray) -> None:
        """Move each quantity by ``amount`` (kept within its bounds), as unsimulated
        work would."""
        ...

    def regime(self) -> np.ndarray:
        """Per drifting quantity, the work done so far in the regime its bound leads to
        (pages written past a full SLC cache, straight to TLC), in ``drift``'s unit.
        Near the bound the two regimes mix, and the mix settles over iterations (TLC
        writes leave less idle time to fold in, so more writes go to TLC): the run
        counts iterations as repeating only where this work per iteration repeats too."""
        ...


@runtime_checkable
class ChunkedOps(Protocol):
    """A memory tier that can book an NPU op's chunked reads, compute and writes in one
    call (``npu.core.NPU.book``'s loop), and several ops back to back in one
    (``serve_ops``): returns the (last) op's end, or None where it must be booked
    transfer by transfer (a trace drawing each, a command-level model)."""

    def serve_op(self, r_chunks: npt.NDArray[np.int64], w_chunks: npt.NDArray[np.int64],
                 c_chunks: npt.NDArray[np.int64], r_addr: int, w_addr: int,
                 start: int) -> int | None: ...

    def serve_ops(self, r_chunks: npt.NDArray[np.int64], w_chunks: npt.NDArray[np.int64],
                  c_chunks: npt.NDArray[np.int64], first: npt.NDArray[np.int64],
                  r_addrs: npt.NDArray[np.int64], w_addrs: npt.NDArray[np.int64], now: int,
                  out: npt.NDArray[np.int64]) -> int | None: ...

    def books_ops_at_once(self) -> bool:
        """Whether ``serve_op`` and ``serve_ops`` book (rather than return None)."""
        ...


@runtime_checkable
class MemoryTarget(Protocol):
    """What a memory tier offers an initiator (NPU, DMA engine)."""

    @property
    def path(self) -> str: ...

    def transport(self, t: Transfer, earliest: int) -> int:
        """Serve ``t`` no earlier than ``earliest`` ps; return its completion time in ps."""
        ...

    def peak_bandwidth(self) -> float:
        """Peak bytes per second this target can deliver (for planners)."""
        ...
