"""How often the what-if's rate difference misses: `python3 benchmarks/rate_difference.py [--sets 300]`.

Not a test and not a speed figure: the coverage behind the README's what-if paragraph. For each pair of
M/M/1/11 services (one pod, CC 1, queue-proxy depth 10 × CC, exponential 1-s service; the blocking probability
of each side exact from `simulation.analytic.mmck`), `--sets` sets of `--runs` 3,000-s runs per side on common
random numbers (run i of set b on `replication_seed(seed + b, i)` on both sides), then for 5, 10 and 20 runs
how often each interval of after − before of the 503 rate lies wholly below the true rise, wholly above it,
wholly below 0 (the wrong sign: "fell" for a rate that rose), and how often it excludes 0 (detects the rise):

- `t`: the old interval, a t-interval over the runs' own differences of k/n (Welch's for unpaired runs);
- `MOVER`: `simulation.estimates.rate_difference`, what `preflight whatif` shows.

Then the same for unpaired runs: set b of one side against set b + 1 of the other (no common random numbers;
`t` is Welch's there). The runs go to
`--workers` processes (default: every core); 300 sets of 20 runs are 36,000 runs, ≈ 4 CPU minutes.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulation import load_scenario, run_simulation  # noqa: E402
from simulation.analytic import mmck  # noqa: E402
from simulation.estimates import independent_difference, paired_difference, rate_difference  # noqa: E402
from simulation.replicate import replication_seed  # noqa: E402
from simulation.report_terms import METRICS  # noqa: E402

PAIRS = ((0.60, 0.66), (0.60, 0.61), (0.90, 0.92))   # λ before → after (ρ, with a 1-s service)
DURATION_S = 3000.0


def _scenario(lam: float) -> dict:
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "mm1k", "annotations": {"autoscaling.knative.dev/target-burst-capacity": "0"}},
            "spec": {"predictor": {"containerConcurrency": 1, "minReplicas": 1, "maxReplicas": 1,
                                   "model": {"modelFormat": {"name": "sklearn"}}}}}
    return {"inferenceService": isvc, "workload": {"kind": "poisson", "rate": lam},
            "server": {"kind": "simple", "base_s": 1.0, "distribution": "exponential"},
            "what_if": {"queue_depth_factor": 10}, "duration_s": DURATION_S}


def _counts(job: tuple[float, int, int]) -> list[tuple[int, int]]:
    """(503s, requests) of each of `runs` runs of set `base` at arrival rate `lam`."""
    lam, base, runs = job
    sc = load_scenario(_scenario(lam), base_dir=ROOT)
    reports = [run_simulation(sc, seed=replication_seed(base, i)).to_dict() for i in range(runs)]
    return [METRICS["503 rate"][1](r) for r in reports]


def _row(sets_b: list, sets_a: list, truth: float, runs: int, paired: bool) -> dict[str, str]:
    n = len(sets_b)
    out = {}
    for name in ("t", "MOVER"):
        below = above = wrong = rise = 0
        for i in range(n):
            b, a = sets_b[i][:runs], sets_a[i if paired else (i + 1) % n][:runs]
            if name == "MOVER":
                e = rate_difference(b, a, paired=paired)
            else:
                e = (paired_difference if paired else independent_difference)([k / m for k, m in b],
                                                                                [k / m for k, m in a])
            below += e.hi < truth
            above += e.lo > truth
            wrong += e.hi < 0
            rise += e.lo > 0
        out[name] = f"{below / n:6.1%} {above / n:6.1%} {wrong / n:6.1%} {rise / n:6.1%}"
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=300)
    ap.add_argument("--runs", type=int, default=20, help="runs per set and side (the largest R shown)")
    ap.add_argument("--seed", type=int, default=7000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    rates = sorted({lam for pair in PAIRS for lam in pair})
    jobs = [(lam, args.seed + b, args.runs) for lam in rates for b in range(args.sets)]
    with ProcessPoolExecutor(args.workers) as pool:
        done = list(pool.map(_counts, jobs, chunksize=4))
    sets = {lam: done[i * args.sets:(i + 1) * args.sets] for i, lam in enumerate(rates)}
    print(f"{args.sets} sets of {args.runs} runs of {DURATION_S:g} s per side; columns: the interval lies below the "
          "true rise, above it, below 0 (the wrong sign), above 0 (the rise detected)")
    for paired in (True, False):
        print(f"\n## {'common random numbers (paired)' if paired else 'independent runs (unpaired)'}")
        for lb, la in PAIRS:
            before, after = mmck(lb, 1.0, 1, 11).p_block, mmck(la, 1.0, 1, 11).p_block
            print(f"ρ {lb:g} → {la:g}: 503 rate {before:.3%} → {after:.3%}")
            print(f"{'runs':>4}  {'t: below  above  wrong   rise':30}  MOVER: below  above  wrong   rise")
            for runs in (r for r in (5, 10, 20) if r <= args.runs):
                row = _row(sets[lb], sets[la], after - before, runs, paired)
                print(f"{runs:>4}  {row['t']:30}  {row['MOVER']}")


if __name__ == "__main__":
    main()
