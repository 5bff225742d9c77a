"""Wall-clock time of the SLO gate per shipped stack, and simulated requests per second through the LLM engine
models (vLLM-style continuous batching, the naive server). Not a test: `python benchmarks/bench_gate.py`.

The gate runs inside `pulumi preview`/`up` before anything is registered, so its time is added to every deploy.
Each stack is simulated from a cold process cache (`simulation.replicate.clear_cache()` between repeats).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import gate  # noqa: E402
from simulation.replicate import clear_cache  # noqa: E402
from stackconfig.load import load_stack, stack_names  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'stack':10} {'services':>8} {'requests':>9} {'best wall s':>11} {'requests/s':>11}")
    for stack in stack_names():
        cfg = load_stack(stack)
        best, requests = float("inf"), 0
        for _ in range(args.repeat):
            clear_cache()
            t0 = time.perf_counter()
            verdicts = gate.check_stack(cfg)
            best = min(best, time.perf_counter() - t0)
            requests = sum(v.report["requests"] for v in verdicts)
        print(f"{stack:10} {len(verdicts):8d} {requests:9d} {best:11.2f} {requests / best:11.0f}")


if __name__ == "__main__":
    main()
