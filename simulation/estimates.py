"""Estimates across independent replications, with 95 % intervals: the statistics, on plain numbers.

Intervals (Law & Kelton, *Simulation Modeling and Analysis*, §9.4: replications are i.i.d., so classical
statistics apply to per-replication figures):
- `mean_interval`: Student t over the replications' values (R − 1 degrees of freedom), clipped to the metric's
  range. Used for means (and the p50). With one replication there is no spread to estimate: the interval is the
  metric's whole range.
- `pooled_quantile`: a tail percentile (the p99 terms) as the percentile of every replication's values pooled
  (`simulation.quantiles.pooled_percentile`), with a Student-t interval (R − 1 degrees of freedom) on the log
  scale, from a standard error over whole replications (the runs are the independent units; the values within
  one are not): the larger of the leave-one-run-out jackknife's (Shao & Wu, *Ann. Statist.* 17(3), 1989:
  consistent for a quantile when a deleted group is a fixed share of the data) and sectioning's, the spread of
  the runs' own percentiles / √R (Asmussen & Glynn, *Stochastic Simulation*, §III.5a). A tail percentile of a
  few clustered values is right-skewed, so the log scale reaches further up than down. On short M/M/1/11 runs
  (ρ = 0.9, ~130 values each) either error alone on the linear scale covered the stationary p99 81–91 % of the
  time, the larger on the log scale 92–97 % (README "How often the gate is wrong"). The mean of the runs' own
  p99s it replaces is an average of order statistics of short, autocorrelated windows: for a queueing service it
  ran 15–20 % under the stationary p99, and more replications narrowed its interval around the low figure.
- `rate_interval`: the pooled rate Σkᵢ/Σnᵢ with the ratio-estimator t-interval (residuals kᵢ − p̂nᵢ), widened to
  contain the Clopper–Pearson exact interval of the pooled counts (`simulation.analytic.clopper_pearson`) — the
  t-interval collapses to a point when no replication saw the event, Clopper–Pearson does not — and Korn & Graubard's
  Clopper–Pearson on the effective number of trials the runs' spread shows, for errors that come in bursts. Clipped to
  [0, 1]. With no event in any replication the bound is Clopper–Pearson's alone, which treats every request as
  independent (see `rate_interval`).
Both always contain their estimate and never leave the metric's range. `lowest_rate_upper` is the lowest upper
end `rate_interval` can reach on a number of trials (what a rate limit needs to be able to pass;
`passable_rate_limit`: it rounded up).
Differences between two configurations: `paired_difference` on common random numbers (seed i on both sides),
`independent_difference` (Welch) for unpaired runs — what pairing is compared against; for the pooled p99s
`pooled_quantile_difference` (the difference of the two sides' pooled figures, paired or Welch); for the pooled
rates `rate_difference` (MOVER on the two sides' `rate_interval`s, with the pairs' correlation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Iterable, Sequence

from simulation.analytic import clopper_pearson, t975, t_multiplier
from simulation.quantiles import pooled_percentile, tail_arrays


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


def mean_interval(values: Iterable[float | None], lower: float = 0.0, upper: float = math.inf,
                  level: float = 0.95) -> Estimate:
    """Mean of the replications' values with a Student-t 95 % interval (`level`: another confidence), clipped to
    [lower, upper]."""
    vals = [float(v) for v in values if v is not None]
    r = len(vals)
    if r == 0:
        return Estimate(None, None, None, 0)
    m = sum(vals) / r
    if r < 2:
        return Estimate(m, lower, upper, 1)
    sd = math.sqrt(sum((v - m) ** 2 for v in vals) / (r - 1))
    h = t_multiplier(level, r - 1) * sd / math.sqrt(r)
    return Estimate(m, max(lower, m - h), min(upper, m + h), r)


_MAX_EXP = 700.0   # math.exp overflows a float past ≈ 709.78


def pooled_quantile(runs: Sequence[tuple[int, dict]], q: float = 99.0, level: float = 0.95) -> Estimate:
    """The q-percentile of all runs' values pooled, from each run's (value count, `Quantiles.tail()`), times
    exp(± Student t (R − 1 degrees of freedom) × the larger of two standard errors of its log over whole
    replications (module doc): the leave-one-run-out jackknife's and sectioning's (the spread of the runs' own
    log percentiles / √R)); runs without a value are left out. One run: the interval is [0, ∞), as
    `mean_interval` gives. `level`: the interval's confidence (the gate's interim looks use a stricter one:
    gate/sequential.py)."""
    runs = tail_arrays([(n, t) for n, t in runs if n])
    r = len(runs)
    value = pooled_percentile(runs, q)
    if value is None:
        return Estimate(None, None, None, 0)
    if r < 2:
        return Estimate(value, 0.0, math.inf, 1)
    leave_out, own = _by_run(runs, q)
    t = t_multiplier(level, r - 1)
    if min(leave_out + own) <= 0.0:   # a percentile of zeros has no log: the same errors on the linear scale
        h = t * _run_error(leave_out, own)
        return Estimate(value, max(0.0, value - h), value + h, r)
    h = t * _run_error([math.log(v) for v in leave_out], [math.log(v) for v in own])
    # Two runs at a strict interim look (t ≈ 236 on 1 degree of freedom) can put h past exp's range: unbounded.
    return Estimate(value, value * math.exp(-h), value * math.exp(h) if h < _MAX_EXP else math.inf, r)


def pooled_quantile_difference(before: Sequence[tuple[int, dict]], after: Sequence[tuple[int, dict]],
                               paired: bool = True, q: float = 99.0, level: float = 0.95) -> Estimate:
    """after − before of `pooled_quantile`'s percentile (each side's runs as (value count, `Quantiles.tail()`)),
    so the difference is that of the two sides' figures, with a Student-t interval on the linear scale.

    `paired` (common random numbers: run i of both sides on seed i): the runs are the pairs, the standard error
    the larger of the leave-one-pair-out jackknife's (a pair leaves both sides at once, so what the seeds share
    cancels) and sectioning's (the spread of the pairs' own differences / √R), R − 1 degrees of freedom over the
    R pairs with a value on either side. Unpaired: each side's own larger error (as `pooled_quantile`, on the
    linear scale), combined as Welch's. Fewer than two runs (pairs) on a side: the interval is unbounded."""
    before, after = tail_arrays(before), tail_arrays(after)
    value_b = pooled_percentile([(n, t) for n, t in before if n], q)
    value_a = pooled_percentile([(n, t) for n, t in after if n], q)
    if value_b is None or value_a is None:
        return Estimate(None, None, None, 0)
    d = value_a - value_b
    if paired:
        pairs = [(b, a) for b, a in zip(before, after) if b[0] or a[0]]
        r = len(pairs)
        if r < 2:
            return Estimate(d, -math.inf, math.inf, r)
        leave_out = [_pooled_or(pairs[:i] + pairs[i + 1:], 1, q, value_a)
                     - _pooled_or(pairs[:i] + pairs[i + 1:], 0, q, value_b) for i in range(r)]
        own = [pooled_percentile([a], q) - pooled_percentile([b], q) for b, a in pairs if b[0] and a[0]]
        h = t_multiplier(level, r - 1) * _run_error(leave_out, own)
        return Estimate(d, d - h, d + h, r)
    sides = [[(n, t) for n, t in runs if n] for runs in (before, after)]
    if min(map(len, sides)) < 2:
        return Estimate(d, -math.inf, math.inf, min(map(len, sides)))
    var = [_run_error(*_by_run(runs, q)) ** 2 for runs in sides]
    dfs = [len(runs) - 1 for runs in sides]
    denominator = sum(v * v / df for v, df in zip(var, dfs))
    df = sum(var) ** 2 / denominator if denominator else float(min(dfs))
    h = t_multiplier(level, max(1, int(df))) * math.sqrt(sum(var))
    return Estimate(d, d - h, d + h, min(map(len, sides)))


def _pooled_or(pairs: Sequence[tuple[tuple[int, dict], tuple[int, dict]]], side: int, q: float,
               whole: float) -> float:
    """The pooled percentile of one side of `pairs`; `whole` (the side's figure over all pairs) when none of
    them holds a value on that side."""
    value = pooled_percentile([p[side] for p in pairs if p[side][0]], q)
    return whole if value is None else value


def _by_run(runs: Sequence[tuple[int, dict]], q: float) -> tuple[list[float], list[float]]:
    """The pooled percentile of `runs` (all holding values) leaving out each run in turn, and each run's own."""
    runs = list(runs)
    return ([pooled_percentile(runs[:i] + runs[i + 1:], q) for i in range(len(runs))],
            [pooled_percentile([run], q) for run in runs])


def _run_error(leave_out: list[float], own: list[float]) -> float:
    """The larger of the leave-one-run-out jackknife's standard error (from the leave-out figures) and
    sectioning's (the spread of the runs' own figures / √R; none from fewer than two)."""
    jackknife = _spread(leave_out) * (len(leave_out) - 1) / math.sqrt(len(leave_out))
    return max(jackknife, _spread(own) / math.sqrt(len(own)) if len(own) > 1 else 0.0)


def _spread(values: Iterable[float | None]) -> float:
    """The sample standard deviation (n − 1 in the denominator)."""
    vals = [float(v) for v in values if v is not None]
    m = sum(vals) / len(vals)
    return math.sqrt(sum((v - m) ** 2 for v in vals) / (len(vals) - 1))


def rate_interval(counts: Sequence[tuple[int, int]], level: float = 0.95) -> Estimate:
    """Pooled rate Σk/Σn over replications' (events k, trials n): the union of three intervals.

    - The ratio-estimator t-interval, which sees how much the replications disagree.
    - The Clopper–Pearson interval of the pooled counts, which does not collapse when they agree.
    - Korn & Graubard's (*Survey Methodology* 24(2), 1998): Clopper–Pearson on the effective number of trials
      n* = min(Σn, p̂(1 − p̂)/v̂) · (z/t_{R−1})² (v̂ the ratio estimator's variance, the runs as clusters;
      the factor for the R − 1 degrees of freedom v̂ has, 0.50 at 5 runs, 0.88 at 20, applied also where the runs
      look no more spread than independent requests: 5 runs cannot tell that they are not). Errors come in
      bursts within a run (a queue-full episode refuses several arrivals in a row), so a few runs hold most
      of them: over 5 runs of a rare, clustered 503 (M/M/1/11 at ρ = 0.6, ~2.6 per run) the two others put
      the interval below the rate 11 % of the time; with this one 3 % (README "How often the gate is wrong").

    Limitation: when no replication saw an event, the t-interval is a point and the upper end is
    Clopper–Pearson's for 0 of Σn, ≈ 3.7/Σn — a bound that holds for independent requests. For a rate made of
    rare bursts, R clean runs bound only the chance that a run has one (Clopper–Pearson on 0 of R: 0.52 for
    R = 5, 0.17 for R = 20), and the rate by that chance times the share of a run's requests one burst fails —
    which runs without a burst cannot estimate, so no bound from them can be both honest and small. The gate
    says so in the check's note (`gate.verdict.slo_checks`). `level`: every interval's confidence (the gate's
    interim looks use a stricter one: gate/sequential.py)."""
    r = len(counts)
    k_tot = sum(k for k, _ in counts)
    n_tot = sum(n for _, n in counts)
    if n_tot == 0:
        return Estimate(0.0, 0.0, 1.0, r)
    p = k_tot / n_tot
    lo, hi = clopper_pearson(k_tot, n_tot, level)
    if r >= 2:
        n_bar = n_tot / r
        resid = sum((k - p * n) ** 2 for k, n in counts) / (r - 1)
        h = t_multiplier(level, r - 1) * math.sqrt(resid / r) / n_bar
        lo, hi = min(lo, p - h), max(hi, p + h)
        if 0 < k_tot < n_tot:
            var = resid / r / n_bar ** 2
            trials = min(n_tot, p * (1 - p) / var) if var > 0 else n_tot
            trials *= (NormalDist().inv_cdf((1 + level) / 2) / t_multiplier(level, r - 1)) ** 2
            kg_lo, kg_hi = clopper_pearson(p * trials, trials, level)
            lo, hi = min(lo, kg_lo), max(hi, kg_hi)
    return Estimate(p, max(0.0, min(lo, p)), min(1.0, max(hi, p)), r)


def rate_difference(before: Sequence[tuple[int, int]], after: Sequence[tuple[int, int]], paired: bool = True,
                    level: float = 0.95) -> Estimate:
    """after − before of two pooled rates (`rate_interval` of each side's (events, trials) per run), by MOVER
    (Zou & Donner, *Stat. Med.* 27(10), 2008; Newcombe, *Stat. Med.* 17(22), 1998 for proportions): each end
    recovers a variance from the sides' own interval ends, lower = d − √(ℓₐ² + u_b² − 2r·ℓₐu_b) with ℓ the
    distance from an estimate down to its lower end and u up to its upper end (upper end alike, with uₐ and ℓ_b),
    r the correlation of the pairs' ratio residuals kᵢ − p̂nᵢ on common random numbers (run i of both sides on
    seed i), 0 for independent runs.

    A t-interval over the runs' own differences misses when errors come in bursts: the per-run differences are
    skewed and 5–20 runs seldom hold the large ones. For 503 rates of M/M/1/11 at ρ 0.60 → 0.66, 0.60 → 0.61
    and 0.90 → 0.92 (300 sets of 20 paired runs, benchmarks/whatif_coverage.py), it lay wholly below the true
    rise 3–15 % of the time (nominal 2.5 %), and in the second case said "fell" up to 2 % of the time; these
    intervals 0–3 %, never on the wrong side of 0 (README "What-if"). The price is width where the sides'
    intervals are skewed and the pairs agree, which MOVER cannot net out (up to 5.8× the t-interval's at 5 runs).

    Pairs whose counts are all equal do not give exactly 0 (as one rate with no event is not bounded by 0):
    equal runs bound the difference only as far as their intervals' skew allows. No trials on a side, no estimate.
    Few runs make it wide: `rate_interval`'s Korn–Graubard term has R − 1 degrees of freedom (at 2 runs, a rise
    from 1 % to 3 % in bursts shows about 1 time in 12)."""
    if paired:
        pairs = list(zip(before, after))
        before, after = [b for b, _ in pairs], [a for _, a in pairs]
    if not sum(n for _, n in before) or not sum(n for _, n in after):
        return Estimate(None, None, None, 0)
    eb, ea = rate_interval(before, level), rate_interval(after, level)
    r = _residual_correlation(before, after) if paired else 0.0
    d = ea.value - eb.value
    a_lo, a_hi, b_lo, b_hi = ea.value - ea.lo, ea.hi - ea.value, eb.value - eb.lo, eb.hi - eb.value
    lo = d - math.sqrt(max(0.0, a_lo * a_lo + b_hi * b_hi - 2.0 * r * a_lo * b_hi))
    hi = d + math.sqrt(max(0.0, a_hi * a_hi + b_lo * b_lo - 2.0 * r * a_hi * b_lo))
    return Estimate(d, max(-1.0, min(lo, d)), min(1.0, max(hi, d)), min(len(before), len(after)))


def _residual_correlation(before: Sequence[tuple[int, int]], after: Sequence[tuple[int, int]]) -> float:
    """Pearson's correlation of the pairs' ratio residuals kᵢ − p̂nᵢ (0 when a side's do not vary: counts in
    proportion to the trials leave residuals of rounding alone, ~1e-16 of the events, which must not count)."""
    def residuals(counts: Sequence[tuple[int, int]]) -> tuple[list[float], float]:
        k, n = sum(k for k, _ in counts), sum(t for _, t in counts)
        return [e - k / n * t for e, t in counts], (1e-9 * max(1.0, k)) ** 2

    (x, x_tol), (y, y_tol) = residuals(before), residuals(after)
    mx, my = sum(x) / len(x), sum(y) / len(y)
    sxx = sum((v - mx) ** 2 for v in x)
    syy = sum((v - my) ** 2 for v in y)
    if sxx <= x_tol * len(x) or syy <= y_tol * len(y):
        return 0.0
    return max(-1.0, min(1.0, sum((u - mx) * (v - my) for u, v in zip(x, y)) / math.sqrt(sxx * syy)))


def lowest_rate_upper(trials: float) -> float:
    """The lowest upper end `rate_interval` can give over `trials` pooled trials: the one of no event in any
    replication (its t-term is then 0, and Clopper–Pearson's upper end for 0 of Σn, 1 − 0.025^(1/Σn) ≈ 3.69/Σn,
    is all that is left; any event raises it). A rate limit below it cannot pass on that many trials; 1 when
    there is none."""
    return clopper_pearson(0, trials)[1] if trials > 0 else 1.0


def passable_rate_limit(trials: float, digits: int = 2) -> float:
    """`lowest_rate_upper(trials)` rounded up to `digits` significant digits: a round limit that can pass (the
    figure to suggest, where rounding to nearest could name one just below the bound)."""
    bound = lowest_rate_upper(trials)
    if bound >= 1.0:
        return 1.0
    scale = 10.0 ** (math.floor(math.log10(bound)) - digits + 1)
    return min(1.0, math.ceil(bound / scale * (1 - 1e-12)) * scale)


def paired_difference(before: Sequence[float | None], after: Sequence[float | None]) -> Estimate:
    """after − before on common random numbers: the mean paired difference with its t-interval (may be < 0)."""
    diffs = [a - b for b, a in zip(before, after) if a is not None and b is not None]
    return mean_interval(diffs, lower=-math.inf, upper=math.inf)


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
