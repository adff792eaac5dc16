"""An event-driven model of stock MQSim's channel arbitration for 8 KiB random reads on
the mqsim-default device (8 channels x 4 chips x 2 dies, tR 75 us): a check, written
without tmhw's code, of the rule that loaded random reads under ``flash.compat =
"mqsim"`` depend on and ``flash.convoy`` implements (tmhw/validate/data/mqsim/README.md).

The rules, from MQSim's ``TSU_Base::issue_command_to_chip`` and ``NVM_PHY_ONFI_NVDDR2``:
a chip serves one die's read at a time (its dies never overlap: MQSim issued no
interleaved read in the run), and is busy until that read's data is out; a channel, when
idle, first drains the data-outs that wait (oldest first) and only then hands a command
to an idle chip with work (round robin). ``data_out_first=False`` swaps the last rule:
commands go before waiting data-outs, which is what a model that books every command when
its request arrives can do.

Each request is one event per phase, times in us, seeded; 60 lines with no tmhw code.
"""

from __future__ import annotations

import heapq
import random

CHANNELS, CHIPS = 8, 4
T_R, DATA_OUT, CMD, PCIE = 75.0, 24.63, 0.36, 2.05  # us: tR, 8 KiB at 333 MT/s, cmd, link


def mean_latency_us(data_out_first: bool = True, qd: int = 64, count: int = 40000,
                    seed: int = 1) -> float:
    rnd = random.Random(seed)
    events: list[tuple[float, int, str, int, int, float]] = []
    queued: list[list[list[float]]] = [[[] for _ in range(CHIPS)] for _ in range(CHANNELS)]
    chip_busy = [[False] * CHIPS for _ in range(CHANNELS)]
    ch_busy = [False] * CHANNELS
    waiting: list[list[tuple[float, int, float]]] = [[] for _ in range(CHANNELS)]
    turn = [0] * CHANNELS
    lat: list[float] = []
    state = {"issued": 0, "seq": 0}

    def push(t: float, kind: str, c: int, k: int, arr: float) -> None:
        state["seq"] += 1
        heapq.heappush(events, (t, state["seq"], kind, c, k, arr))

    def command(c: int, now: float) -> bool:
        for j in range(CHIPS):
            k = (turn[c] + j) % CHIPS
            if not chip_busy[c][k] and queued[c][k]:
                chip_busy[c][k] = ch_busy[c] = True
                turn[c] = (k + 1) % CHIPS
                push(now + CMD, "cmd", c, k, queued[c][k].pop(0))
                return True
        return False

    def data_out(c: int, now: float) -> bool:
        if not waiting[c]:
            return False
        waiting[c].sort()
        _, k, arr = waiting[c].pop(0)
        ch_busy[c] = True
        push(now + DATA_OUT, "out", c, k, arr)
        return True

    def schedule(c: int, now: float) -> None:
        if not ch_busy[c]:
            _ = (data_out(c, now) or command(c, now)) if data_out_first else \
                (command(c, now) or data_out(c, now))

    def submit(now: float) -> None:
        if state["issued"] < count:
            state["issued"] += 1
            c, k = rnd.randrange(CHANNELS), rnd.randrange(CHIPS)
            queued[c][k].append(now)
            schedule(c, now)

    for _ in range(qd):
        submit(0.0)
    while events:
        now, _, kind, c, k, arr = heapq.heappop(events)
        if kind == "cmd":
            ch_busy[c] = False
            push(now + T_R, "ready", c, k, arr)
        elif kind == "ready":
            waiting[c].append((now, k, arr))
        else:
            ch_busy[c] = chip_busy[c][k] = False
            lat.append(now + PCIE - arr)
            submit(now + PCIE)
        schedule(c, now)
    return sum(lat) / len(lat)
