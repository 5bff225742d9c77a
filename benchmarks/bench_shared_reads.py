"""CPU time of the model cache's shared reads (simulation/shared_reads.py) with many pods loading at once.
Not a test: `python benchmarks/bench_shared_reads.py [--pods 100 400 1000 4000]`.

Scenario (review rev-diff finding 8): n pods each read 15 GiB at up to 1.5 GiB/s, one starting every 0.1 s, from
a file system that reads 0.3 GiB/s in all (EFS bursting): every pod loads at the equal share, so every start and
end moves every reader. The reads layer alone (a stand-in pod that schedules its own end), timed with
`time.process_time`; `load_moved` calls printed beside (at most 2 per pod; the old every-reader rebalance made
n² / 2 calls and took 7.4 s at n = 1,000).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import simpy  # noqa: E402

from simulation.clock import call_later  # noqa: E402
from simulation.shared_reads import SharedReads  # noqa: E402


class Pod:
    __slots__ = ("env", "call")

    def __init__(self, env, reads: SharedReads) -> None:
        self.env, self.call = env, None
        d = reads.start(self, 15.0, 1.5)
        if d is not None:
            self.call = call_later(env, d, lambda: None)

    def load_moved(self, end: float | None) -> None:
        if self.call is not None:
            self.call.cancel()
        self.call = None if end is None else call_later(self.env, end - self.env.now, lambda: None)


def run(pods: int) -> tuple[float, int]:
    env = simpy.Environment()
    reads = SharedReads(env, 0.3)
    for i in range(pods):
        call_later(env, i * 0.1, Pod, env, reads)
    c = time.process_time()
    env.run()
    return time.process_time() - c, reads.moves


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pods", type=int, nargs="+", default=[100, 400, 1000, 4000])
    for n in ap.parse_args().pods:
        cpu, moves = run(n)
        print(f"{n:>6} pods loading at once: {cpu:.3f} CPU s, {moves:,} load_moved calls")


if __name__ == "__main__":
    main()
