"""Wall-clock time of the SLO gate per shipped stack, and simulated requests per second through the LLM engine
models (vLLM-style continuous batching, the naive server). Not a test: `python benchmarks/bench_gate.py`.

The gate runs inside `pulumi preview`/`up` before anything is registered, so its time is added to every deploy.
Each stack is simulated from a cold replication cache (`simulation.replicate.clear_cache()` between repeats), with
every replication the gate decides on (gate.replications), on `--workers` local processes (default: what the
program uses, all cores). CPU s counts this process and its workers (`resource.getrusage`): on a machine other
work shares, compare CPU s; wall s is the deploy-time figure on an idle machine.
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
from simulation.replicate import clear_cache  # noqa: E402
from stackconfig.load import load_stack, stack_names  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    print(f"{'stack':10} {'scenarios':>9} {'replications':>12} {'best wall s':>11} {'best CPU s':>10}")
    total_wall = total_cpu = 0.0
    for stack in stack_names():
        cfg = load_stack(stack)
        best, best_cpu = float("inf"), float("inf")
        for _ in range(args.repeat):
            clear_cache()
            pool = LocalExecutor(args.workers)
            t0, c0 = time.perf_counter(), _cpu()
            verdicts = gate.check_stack(cfg, executor=pool)
            pool.close()
            best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, _cpu() - c0)
        reps = "/".join(str(v.replications) for v in verdicts)
        total_wall, total_cpu = total_wall + best, total_cpu + best_cpu
        print(f"{stack:10} {len(verdicts):9d} {reps:>12} {best:11.2f} {best_cpu:10.2f}")
    print(f"{'all':10} {'':9} {'':12} {total_wall:11.2f} {total_cpu:10.2f}")


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    main()
