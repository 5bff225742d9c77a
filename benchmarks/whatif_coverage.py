"""How often the what-if's differences miss: `python3 benchmarks/whatif_coverage.py [--sets 300] [--runs 20]`.

Not a test and not a speed figure: the coverage behind the README's what-if paragraph. For each pair of M/M/1/11
services (one pod, CC 1, queue-proxy depth 10 × CC, exponential 1-s service; each side's 503 rate and accepted
requests' p99 latency exact from `simulation.analytic`), `--sets` sets of `--runs` 3,000-s runs per side on
common random numbers (run i of set b on `replication_seed(seed + b, i)` on both sides), then for 5, 10 and 20
runs how often each 95 % interval of after − before lies wholly below the true rise, wholly above it, wholly
below 0 (the wrong sign: "fell" for a figure that rose), how often it excludes 0 (detects the rise), and for the
503 rate MOVER's mean width over the t-interval's:

- 503 rate, `t`: the old interval, a t-interval over the runs' own differences of k/n (Welch's for unpaired runs);
  `MOVER`: `simulation.estimates.rate_difference`, what `preflight whatif` shows;
- p99 latency: `simulation.report_terms.difference`, the pooled p99s' difference `preflight whatif` shows.

Then the same for unpaired runs: set b of one side against set b + 1 of the other (no common random numbers).
The runs go to `--workers` processes (default: every core); 300 sets of 20 runs of the 5 rates are 30,000 runs,
≈ 20–25 CPU minutes.
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
from simulation.analytic import mm1k_sojourn_quantile, mmck  # noqa: E402
from simulation.estimates import Estimate, independent_difference, paired_difference, rate_difference  # noqa: E402
from simulation.replicate import replication_seed  # noqa: E402
from simulation.report_terms import METRICS, difference  # noqa: E402

PAIRS = ((0.60, 0.66), (0.60, 0.61), (0.90, 0.92))   # λ before → after (ρ, with a 1-s service)
DURATION_S, K = 3000.0, 11
RATE, P99 = "503 rate", "p99 latency (s)"


def _scenario(lam: float) -> dict:
    isvc = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "mm1k", "annotations": {"autoscaling.knative.dev/target-burst-capacity": "0"}},
            "spec": {"predictor": {"containerConcurrency": 1, "minReplicas": 1, "maxReplicas": 1,
                                   "model": {"modelFormat": {"name": "sklearn"}}}}}
    return {"inferenceService": isvc, "workload": {"kind": "poisson", "rate": lam},
            "server": {"kind": "simple", "base_s": 1.0, "distribution": "exponential"},
            "what_if": {"queue_depth_factor": K - 1}, "duration_s": DURATION_S}


def _runs(job: tuple[float, int, int]) -> list[dict]:
    """Each of `runs` runs of set `base` at arrival rate `lam`, cut to what the two figures read."""
    lam, base, runs = job
    sc = load_scenario(_scenario(lam), base_dir=ROOT)
    out = []
    for i in range(runs):
        report = run_simulation(sc, seed=replication_seed(base, i)).to_dict()
        out.append({"status_counts": {"503": METRICS[RATE][1](report)[0]}, "requests": report["requests"],
                    "latency_s": METRICS[P99][1](report)})
    return out


def _old_rate(before: list[dict], after: list[dict], paired: bool) -> Estimate:
    rates = [[k / n if n else 0.0 for k, n in (METRICS[RATE][1](r) for r in side)] for side in (before, after)]
    return (paired_difference if paired else independent_difference)(*rates)


def _new_rate(before: list[dict], after: list[dict], paired: bool) -> Estimate:
    return rate_difference(*([METRICS[RATE][1](r) for r in side] for side in (before, after)), paired=paired)


def _p99(before: list[dict], after: list[dict], paired: bool) -> Estimate:
    return difference(P99, before, after, paired=paired)


def _cells(sets_b: list, sets_a: list, truth: float, runs: int, paired: bool, interval) -> tuple[str, float]:
    """The four shares, and the intervals' total width."""
    n = len(sets_b)
    below = above = wrong = rise = 0
    width = 0.0
    for i in range(n):
        e = interval(sets_b[i][:runs], sets_a[i if paired else (i + 1) % n][:runs], paired)
        below += e.hi < truth
        above += e.lo > truth
        wrong += e.hi < 0
        rise += e.lo > 0
        width += e.hi - e.lo
    return f"{below / n:6.1%} {above / n:6.1%} {wrong / n:6.1%} {rise / n:6.1%}", width


def _table(sets: dict, runs_max: int, paired: bool) -> None:
    head = "below  above  wrong   rise"
    for lb, la in PAIRS:
        rate_b, rate_a = mmck(lb, 1.0, 1, K).p_block, mmck(la, 1.0, 1, K).p_block
        p99_b, p99_a = (mm1k_sojourn_quantile(0.99, lam, 1.0, K) for lam in (lb, la))
        print(f"ρ {lb:g} → {la:g}: 503 rate {rate_b:.3%} → {rate_a:.3%}, p99 {p99_b:.2f} → {p99_a:.2f} s")
        print(f"{'runs':>4}  {'503 t: ' + head:34} {'503 MOVER: ' + head:38} width  p99: {head}")
        for runs in (r for r in (5, 10, 20) if r <= runs_max):
            args = (sets[lb], sets[la], rate_a - rate_b, runs, paired)
            (t, t_width), (mover, m_width) = _cells(*args, _old_rate), _cells(*args, _new_rate)
            p99, _ = _cells(sets[lb], sets[la], p99_a - p99_b, runs, paired, _p99)
            ratio = f"{m_width / t_width:5.2f}×" if t_width > 0 else "    –"
            print(f"{runs:>4}  {'     ' + t:34} {'          ' + mover:38} {ratio}      {p99}")


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
        done = list(pool.map(_runs, jobs, chunksize=4))
    sets = {lam: done[i * args.sets:(i + 1) * args.sets] for i, lam in enumerate(rates)}
    print(f"{args.sets} sets of {args.runs} runs of {DURATION_S:g} s per side; the 95 % interval of after − before "
          "lies below the true rise, above it, below 0 (the wrong sign), above 0 (the rise detected); MOVER's mean "
          "width ÷ t's")
    for paired in (True, False):
        print(f"\n## {'common random numbers (paired)' if paired else 'independent runs (unpaired)'}")
        _table(sets, args.runs, paired)


if __name__ == "__main__":
    main()
