"""Speed-up of independent replications from 1 to N local processes. Not a test: `python benchmarks/bench_replications.py`.

Runs the same R replications (the stack's gate scenarios, seeds from gate.seed) on `LocalExecutor(1)` (in this
process) and `LocalExecutor(N)` (a process pool), checks the results are identical, and prints:
- wall s: wall-clock time, pool start-up (fork) included — the real speed-up, but only on an idle machine;
- CPU s: CPU time of this process and its children (`resource.getrusage`): ≈ equal across N when the pool adds
  little overhead;
- CPU-bound speed-up: total job CPU / the busiest worker's job CPU (each job's `time.process_time()` in the worker
  that ran it) — the speed-up N free cores would give, which other work on a shared machine does not disturb.
Each configuration starts from an empty replication cache.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gate  # noqa: E402
from simulation.executors import LocalExecutor  # noqa: E402
from simulation.replicate import clear_cache, replication_seeds, simulate_job  # noqa: E402
from stackconfig.load import load_stack  # noqa: E402


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def timed_job(job: tuple) -> tuple[int, float, dict]:
    import os

    t0 = time.process_time()
    report = simulate_job(job)
    return os.getpid(), time.process_time() - t0, report


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
    jobs = [(json.dumps(s, sort_keys=True), seed, str(ROOT)) for s in scenarios for seed in seeds]
    print(f"{'workers':>7} {'wall s':>8} {'CPU s':>8} {'wall speed-up':>14} {'CPU-bound speed-up':>19}")
    base, first = None, None
    for n in args.workers:
        clear_cache()
        pool = LocalExecutor(n)
        t0, c0 = time.perf_counter(), _cpu()
        timed = pool.map(timed_job, jobs)
        pool.close()
        wall, cpu = time.perf_counter() - t0, _cpu() - c0
        results = [r for _, _, r in timed]
        first = first or results
        assert results == first, "results differ between executors"
        per_worker: dict[int, float] = {}
        for pid, secs, _ in timed:
            per_worker[pid] = per_worker.get(pid, 0.0) + secs
        bound = sum(per_worker.values()) / max(per_worker.values())
        base = base or wall
        print(f"{n:7d} {wall:8.2f} {cpu:8.2f} {base / wall:14.2f} {bound:19.2f}")


if __name__ == "__main__":
    main()
