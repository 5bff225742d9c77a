"""Independent replications of a scenario, and estimates with 95 % intervals across them.

Seeds. Replication i of a run with base seed s uses the simulation seed
`numpy.random.SeedSequence(s, spawn_key=(i,)).generate_state(1)[0]` — the i-th child of `SeedSequence(s).spawn()`,
so replication i's seed depends on (s, i) alone: adding replications never changes the earlier ones, and the two
sides of a what-if (common random numbers) share seed i for replication i.

Each replication is a pure function of (scenario, seed) (`simulate_job`), so an executor
(`simulation.executors`) may run them anywhere in any order: the results are sorted back by index and are
identical on every executor. They are cached in this process by (scenario JSON, seed).

Intervals (Law & Kelton, *Simulation Modeling and Analysis*, §9.4: replications are i.i.d., so classical
statistics apply to per-replication figures):
- `mean_interval`: Student t over the replications' values (R − 1 degrees of freedom), clipped to the metric's
  range. Used for means and for percentiles: a percentile's estimate is the mean of the replications' own
  percentiles (e.g. p99), with the t-interval of that mean. With one replication there is no spread to estimate:
  the interval is the metric's whole range.
- `rate_interval`: the pooled rate Σkᵢ/Σnᵢ with the ratio-estimator t-interval (residuals kᵢ − p̂nᵢ), widened to
  contain the Clopper–Pearson exact interval of the pooled counts (`simulation.analytic.clopper_pearson`) — the
  t-interval collapses to a point when no replication saw the event, Clopper–Pearson does not. Clipped to [0, 1].
  With no event in any replication the bound is Clopper–Pearson's alone, which treats every request as
  independent (see `rate_interval`).
Both always contain their estimate and never leave the metric's range.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from simulation.analytic import clopper_pearson, t975


def replication_seed(base: int, index: int) -> int:
    """The simulation seed of replication `index` (0-based) of a run with base seed `base`."""
    return int(np.random.SeedSequence(base, spawn_key=(index,)).generate_state(1)[0])


def replication_seeds(base: int, count: int, start: int = 0) -> list[int]:
    return [replication_seed(base, i) for i in range(start, start + count)]


_CACHE: dict[tuple, dict] = {}  # (scenario JSON, seed, base dir) → report, in this process (first in, first out)
_CACHE_SIZE = 256


def simulate_job(job: tuple[str, int, str | None]) -> dict:
    """One replication: (scenario as sorted JSON, seed, base dir for relative paths) → the report dict."""
    report = _CACHE.get(job)
    if report is None:
        text, seed, base_dir = job
        report = _load(json.loads(text), base_dir)(seed)
        _remember(job, report)
    return report


def _load(mapping: Any, base_dir: str | None) -> Callable[[int], dict]:
    """Parse a scenario — or a fleet of them (simulation/fleet.py: a mapping with `services`) — into a function
    of the seed giving its JSON result; raises InputError for a mapping the parser rejects."""
    if isinstance(mapping, dict) and "services" in mapping:
        from simulation.fleet import load_fleet, run_fleet

        fleet = load_fleet(mapping, base_dir=base_dir)
        return lambda seed: run_fleet(fleet, seed)
    from simulation import load_scenario, run_simulation

    scenario = load_scenario(mapping, base_dir=base_dir)
    return lambda seed: run_simulation(scenario, seed=seed).to_dict()


def scenario_duration(mapping: Mapping) -> float:
    """Simulated seconds of a scenario or fleet mapping (1 when it does not say): what a job costs, roughly."""
    try:
        return float(mapping.get("duration_s") or 1.0)
    except (TypeError, ValueError):
        return 1.0


def _remember(job: tuple, report: dict) -> None:
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[job] = report


def clear_cache() -> None:
    _CACHE.clear()


def run_replications(scenarios: Sequence[Mapping], seeds: Sequence[int], executor: Any = None,
                     base_dir: Any = None, cache: Any = None) -> list[list[dict]]:
    """Every scenario × every seed; `result[s][r]` is scenario s's report for seeds[r].

    Jobs already in this process's cache (or in `cache`, on disk) are not sent again; the rest go to
    `executor` (default: this process). Raises `validation.errors.InputError` for a scenario the simulation's
    parser rejects.
    """
    return submit_replications(scenarios, seeds, executor, base_dir, cache).result()


def submit_replications(scenarios: Sequence[Mapping], seeds: Sequence[int], executor: Any = None,
                        base_dir: Any = None, cache: Any = None) -> Any:
    """`run_replications` started without waiting: returns a handle whose `result()` is its list.

    Input errors are raised here, before any job starts. The jobs go out longest first (by simulated
    duration), so the last ones to finish are short and the workers end together. `cache`
    (simulation/result_cache.py) answers the jobs it holds and stores the others' reports.
    """
    from simulation.executors import Later, SerialExecutor

    bd = None if base_dir is None else str(base_dir)
    texts = [json.dumps(s, sort_keys=True) for s in scenarios]
    jobs = [(text, seed, bd) for text in texts for seed in seeds]
    found = {job: _CACHE[job] for job in jobs if job in _CACHE}
    todo = list(dict.fromkeys(job for job in jobs if job not in found))
    if cache is not None and todo:
        for job in todo:
            report = cache.get(job)
            if report is not None:
                found[job] = report
                _remember(job, report)
        todo = [job for job in todo if job not in found]
    pending = None
    if todo:
        length = {t: 0.0 for t, _, _ in todo}
        for text, mapping in zip(texts, scenarios):
            if text in length and not length[text]:  # input errors here, before any process starts
                _load(json.loads(text), bd)
                length[text] = scenario_duration(mapping)
        todo.sort(key=lambda job: -length[job[0]])  # stable: seeds stay in order within a scenario
        executor = executor or SerialExecutor()
        submit = getattr(executor, "submit", None)
        pending = submit(simulate_job, todo) if submit else Later(lambda: executor.map(simulate_job, todo))

    def collect() -> list[list[dict]]:
        if pending is not None:
            reports = pending.result()
            for job, report in zip(todo, reports):
                _remember(job, report)
                found[job] = report
            if cache is not None:
                cache.put_all(zip(todo, reports))
        flat = [found[job] for job in jobs]
        return [flat[i * len(seeds):(i + 1) * len(seeds)] for i in range(len(scenarios))]
    if pending is None:  # every job answered from a cache: done now, so a waiting gate takes it first
        done = Later(collect)
        done.result()
        return done
    return Later(collect, pending.futures)


@dataclass(frozen=True)
class Estimate:
    """A figure across replications: the estimate, its 95 % interval [lo, hi] and how many replications."""

    value: float | None
    lo: float | None
    hi: float | None
    replications: int

    def to_dict(self) -> dict:
        def clean(x: float | None) -> float | None:
            return None if x is None or not math.isfinite(x) else float(f"{x:.6g}")

        return {"value": clean(self.value), "ci95": [clean(self.lo), clean(self.hi)],
                "replications": self.replications}


def mean_interval(values: Iterable[float | None], lower: float = 0.0, upper: float = math.inf) -> Estimate:
    """Mean of the replications' values with a Student-t 95 % interval, clipped to [lower, upper]."""
    vals = [float(v) for v in values if v is not None]
    r = len(vals)
    if r == 0:
        return Estimate(None, None, None, 0)
    m = sum(vals) / r
    if r < 2:
        return Estimate(m, lower, upper, 1)
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (r - 1))
    h = t975(r - 1) * sd / math.sqrt(r)
    return Estimate(m, max(lower, m - h), min(upper, m + h), r)


def rate_interval(counts: Sequence[tuple[int, int]]) -> Estimate:
    """Pooled rate Σk/Σn over replications' (events k, trials n): the ratio-estimator t-interval (which sees how
    much the replications disagree, so bursts that some runs had and others did not widen it) ∪ the
    Clopper–Pearson interval of the pooled counts.

    Limitation: when no replication saw an event, the t-interval is a point and the upper end is
    Clopper–Pearson's for 0 of Σn, ≈ 3.7/Σn — a bound that holds for independent requests. Errors in this
    simulator come in bursts within a run (a queue overflow while a pod cold-starts, a node loss, fails many
    requests at once). For a rate made of rare bursts, R clean runs bound only the chance that a run has one
    (Clopper–Pearson on 0 of R: 0.52 for R = 5, 0.17 for R = 20), and the rate by that chance times the share of
    a run's requests one burst fails — which runs without a burst cannot estimate, so no bound from them can be
    both honest and small. The gate says so in the check's note (`gate.verdict.slo_checks`)."""
    r = len(counts)
    k_tot = sum(k for k, _ in counts)
    n_tot = sum(n for _, n in counts)
    if n_tot == 0:
        return Estimate(0.0, 0.0, 1.0, r)
    p = k_tot / n_tot
    lo, hi = clopper_pearson(k_tot, n_tot)
    if r >= 2:
        n_bar = n_tot / r
        resid = sum((k - p * n) ** 2 for k, n in counts) / (r - 1)
        h = t975(r - 1) * math.sqrt(resid / r) / n_bar
        lo, hi = min(lo, p - h), max(hi, p + h)
    return Estimate(p, max(0.0, min(lo, p)), min(1.0, max(hi, p)), r)


# Per-replication figures of a report dict (simulation/report.py), by kind:
#   "rate": (events, requests); "mean": a number (None when undefined, e.g. no successful request).
def _status(report: Mapping, *codes: str) -> int:
    counts = report["status_counts"]
    return sum(counts.get(c, 0) for c in codes)


def served_errors(report: Mapping) -> int:
    """Requests answered with anything but 200 or an input-cap 400 (TGI's: 422) — the gate's error count."""
    return report["requests"] - _status(report, "200", "400", "422")


def _pct(key: str, q: str) -> Callable[[Mapping], float | None]:
    return lambda r: (r.get(key) or {}).get(q)


def time_at_max_replicas(report: Mapping) -> float:
    """Fraction of the run the autoscaler wanted maxReplicas or more (saturated); 0 when there is no maximum."""
    svc = report.get("service") or {}
    top = svc.get("max_scale") or svc.get("max_replicas") or 0
    series = report["replica_series"]
    t, desired = series["t"], series["desired"]
    if not top or len(t) < 2:
        return 0.0
    end = report["duration_s"]
    spans = [(min(b, end) - a) for a, b in zip(t, t[1:] + [end])]
    at_max = sum(span for span, d in zip(spans, desired) if d >= top)
    return at_max / sum(spans) if sum(spans) > 0 else 0.0


def longest_cold_start(report: Mapping) -> float | None:
    """The run's longest wait for a new pod to become Ready: its longest cold start, or the longest wait of a pod
    still not Ready at the horizon when that is longer (a censored cold start: at least that long); None when
    the run created no pod (never 0: a run without a cold start says nothing about how long one takes)."""
    waits = [(report.get("cold_start_s") or {}).get("max"), (report.get("cold_start_censored") or {}).get("max_s")]
    return max((w for w in waits if w is not None), default=None)


def cold_start_misses(reports: Sequence[Mapping], limit_s: float) -> Estimate:
    """The fraction of replications in which some new pod waited longer than `limit_s` for Ready (a cold start,
    or a wait still open at the horizon: `longest_cold_start`), with its Clopper–Pearson exact 95 % interval.

    One Bernoulli outcome per replication, and replications are independent, so the interval is the binomial one on
    (misses, replications) — the ratio-estimator term of `rate_interval` is for events clustered within runs."""
    r = len(reports)
    waits = [longest_cold_start(rep) for rep in reports]
    k = sum(1 for w in waits if w is not None and w > limit_s)
    if r == 0:
        return Estimate(None, None, None, 0)
    lo, hi = clopper_pearson(k, r)
    return Estimate(k / r, lo, hi, r)


def peak_pending_pods(report: Mapping) -> int:
    """Most pods waiting for a GPU node at once (Kubernetes' Pending phase), from the timeline samples."""
    return max((report.get("timeline") or {}).get("pending_pods") or [0])


METRICS: dict[str, tuple[str, Callable[[Mapping], Any]]] = {
    "error rate": ("rate", lambda r: (served_errors(r), r["requests"])),
    "503 rate": ("rate", lambda r: (_status(r, "503"), r["requests"])),
    "429 rate": ("rate", lambda r: (_status(r, "429"), r["requests"])),
    "504 rate": ("rate", lambda r: (_status(r, "504"), r["requests"])),
    "truncated-200 rate": ("rate", lambda r: (_status(r, "200-truncated"), r["requests"])),
    "502 rate": ("rate", lambda r: (_status(r, "502"), r["requests"])),
    "400 rate (input caps, excluded)": ("rate", lambda r: (_status(r, "400", "422"), r["requests"])),
    "p50 latency (s)": ("mean", _pct("latency_s", "p50")),  # successful requests
    "p99 latency (s)": ("mean", _pct("latency_s", "p99")),
    "p99 time to first token (s)": ("mean", _pct("ttfb_s", "p99")),
    "p99 latency, all requests (s)": ("mean", _pct("latency_all_s", "p99")),
    "throughput (req/s)": ("mean", lambda r: r["throughput_rps"]),
    "mean ready replicas": ("mean", lambda r: r["replicas"]["mean"]),
    "pod GPU-hours": ("mean", lambda r: r["pod_gpu_hours"]),
    "cold starts": ("mean", lambda r: r["cold_starts"]),
    "longest cold start (s)": ("mean", longest_cold_start),   # over the replications that had one
    "time at maxReplicas (fraction)": ("fraction", time_at_max_replicas),
    "peak Pending pods": ("mean", peak_pending_pods),
}


def estimate(name: str, reports: Sequence[Mapping]) -> Estimate:
    """The named METRICS figure over replications' reports, with its 95 % interval."""
    kind, get = METRICS[name]
    if kind == "rate":
        return rate_interval([get(r) for r in reports])
    return mean_interval((get(r) for r in reports), upper=1.0 if kind == "fraction" else math.inf)


def estimates(reports: Sequence[Mapping], names: Iterable[str] | None = None) -> dict[str, Estimate]:
    return {name: estimate(name, reports) for name in (names or METRICS)}


def paired_difference(before: Sequence[float | None], after: Sequence[float | None]) -> Estimate:
    """after − before on common random numbers: the mean paired difference with its t-interval (may be < 0)."""
    diffs = [a - b for b, a in zip(before, after) if a is not None and b is not None]
    return mean_interval(diffs, lower=-math.inf, upper=math.inf)


def per_replication(name: str, reports: Sequence[Mapping]) -> list[float | None]:
    """Each replication's own value of a METRICS figure (a rate as k/n), for paired comparisons."""
    kind, get = METRICS[name]
    if kind == "rate":
        return [k / n if n else 0.0 for k, n in (get(r) for r in reports)]
    return [get(r) for r in reports]


def independent_difference(before: Sequence[float | None], after: Sequence[float | None]) -> Estimate:
    """after − before from independent runs (no pairing): Welch's t-interval — what pairing is compared against."""
    b = [float(v) for v in before if v is not None]
    a = [float(v) for v in after if v is not None]
    if len(a) < 2 or len(b) < 2:
        return Estimate(None, None, None, min(len(a), len(b)))
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    va = sum((x - ma) ** 2 for x in a) / (len(a) - 1) / len(a)
    vb = sum((x - mb) ** 2 for x in b) / (len(b) - 1) / len(b)
    se = math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0.0) + (vb ** 2 / (len(b) - 1) if vb else 0.0) or 1.0)
    h = t975(max(1, int(df))) * se
    return Estimate(ma - mb, ma - mb - h, ma - mb + h, min(len(a), len(b)))
