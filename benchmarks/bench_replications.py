"""Speed-up of independent replications from 1 to N local processes. Not a test: `python benchmarks/bench_replications.py`.

Runs the same R replications (prod/chat, the gate's scenario, seeds from gate.seed) on `LocalExecutor(1)` (in this
process) and `LocalExecutor(N)` (a process pool), checks the results are identical, and prints the wall-clock
time and the CPU time of this process and its children (`resource.getrusage`). A speed-up is a wall-clock figure,
so it is disturbed when other work shares the machine: compare the CPU seconds (which stay ≈ equal when the pool
adds little overhead) and rerun on an idle machine for a clean figure. Each configuration starts from an empty
replication cache; the pool's start-up (fork) is included.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gate  # noqa: E402
from simulation.executors import LocalExecutor  # noqa: E402
from simulation.replicate import clear_cache, replication_seeds, run_replications  # noqa: E402
from stackconfig.load import load_stack  # noqa: E402


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--replications", type=int, default=8)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    cfg = load_stack(args.stack)
    scenarios = [t.scenario for t in gate.trials(cfg)]
    seeds = replication_seeds(cfg.gate.seed, args.replications)
    print(f"{args.stack}: {len(scenarios)} scenario(s) × {len(seeds)} replications")
    print(f"{'workers':>7} {'wall s':>8} {'CPU s':>8} {'speed-up':>9}")
    base, first = None, None
    for n in args.workers:
        clear_cache()
        pool = LocalExecutor(n)
        t0, c0 = time.perf_counter(), _cpu()
        results = run_replications(scenarios, seeds, pool, base_dir=ROOT)
        pool.close()
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        first = first or results
        assert results == first, "results differ between executors"
        base = base or wall
        print(f"{n:7d} {wall:8.2f} {cpu:8.2f} {base / wall:9.2f}")


if __name__ == "__main__":
    main()
