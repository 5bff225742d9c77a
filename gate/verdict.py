"""SLO checks that hold statistically: each term is an estimate across replications with its 95 % interval.

A check passes only when the interval's upper end meets the SLO, fails when its lower end misses it, and is
undecided otherwise (the gate then runs more replications, `gate/sequential.py`). At an interim look (fewer
replications than `gate.replications.max`) a p99 or rate term decides only on its `INTERIM_LEVEL` interval
(Haybittle–Peto: `Check.interim`); the 95 % interval is the one reported and the one the last look decides
on. A check still undecided after
the replication budget is settled by `gate.undecided` (`UNDECIDED_POLICIES`): `estimate` (the default) fails it
when its point estimate misses the limit and passes it with a warning when the estimate meets it; `warn` passes
every one with a warning; `fail` fails every one.

`maxColdStartS` bounds every new pod's wait for Ready, a maximum: one slow pod in a run is a miss, however many
runs have none. Its term is the fraction of replications with a miss (a cold start, or a pod still waiting at the
horizon, longer than the limit: `simulation.report_terms.cold_start_misses`) with its Clopper–Pearson exact
interval, held to `COLD_START_MISS_FRACTION`: it passes when the interval shows fewer than 1 run in 5 misses (0
misses in `COLD_START_RUNS_TO_PASS` = 17 or more replications: with the default budget, 0 in 20), fails
when it shows more (at 5 replications: 4 or 5 misses), and is undecided between. With a `gate.replications.max`
below 17 it can never pass (`Check.can_pass`; the gate adds no replications for it, `gate.undecided` settles it).

The rollout scenario's term is of the same kind: the fraction of replications whose new revision was not Ready
within its progress deadline (Knative then fails the revision: a stalled rollout), k of r with its Clopper–Pearson
interval, held to the same `COLD_START_MISS_FRACTION` (`rollout_check`): 0 stalls pass from 17 runs, a stall is
one miss, not a failed gate. The mean time to Ready (over the runs that were Ready) is reported with its
interval beside it, in the verdict's metrics and the term's note, not judged: it is at most the deadline by
construction, so an interval of it against the deadline said only whether any run stalled.

A p99 term is the p99 of every replication's values pooled, with a jackknife interval over whole replications
(`simulation.estimates.pooled_quantile`): the runs are the independent units; the values within one are
autocorrelated (a queue's busy period), so a run's own p99 runs low and so did the mean of them this replaced.
A p99 of fewer than `MIN_P99_VALUES` values in all runs together gives no p99 worth the name (its 1 % tail holds
less than one value: an extrapolation), so such a term can fail but not pass (`Check.biased_low`). While more
replications could bring it to that many, it stays open (the gate adds them); when even `gate.replications.max`
runs would not, it stays undecided whatever the number of replications (`Check.can_pass`; the gate adds none for
it), and `gate.undecided` settles it — under `estimate` on its interval's upper end, not on its point estimate,
which runs low there, so it passes with a warning only when even the upper end meets the SLO.
Runs without a single value (no successful request) are left out of it, and its note says how many.
A rate term with no event in any run notes that its bound assumes independent requests
(`simulation.estimates.rate_interval`). A rate limit below the lowest upper end `rate_interval` can reach within
`gate.replications.max` runs (0 errors in all of them: `simulation.estimates.lowest_rate_upper`, ≈ 3.7 / the
requests of `max` runs) can never pass — a limit of 0 never — so it is marked like the p99 above (`can_pass`
false, no replications added for it), and its note says which limit could pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

from simulation.analytic import t975, zero_event_trials
from simulation.estimates import Estimate, lowest_rate_upper, passable_rate_limit
from simulation.report_terms import (METRICS, cold_start_misses, estimate, estimates, longest_cold_start,
                                     rollout_ready_time, rollout_stalls, without_tails)
from stackconfig.platform import (COLD_START_MISS_FRACTION, COLD_START_RUNS_TO_PASS, MAX_REPLICATIONS,
                                 UNDECIDED_POLICIES)
from stackconfig.schema import Slo

PASS, FAIL, UNDECIDED = "pass", "FAIL", "undecided"
COLD_START_TERM = "runs with a cold start over maxColdStartS (fraction)"
ROLLOUT_TERM = "rollouts not Ready by the progress deadline (fraction)"
READY_METRIC = "new revision Ready (s)"   # the rollout's mean time to Ready: a reported figure, not a term
INTERIM_LEVEL = 0.9973   # Haybittle–Peto: interim looks decide at 3 sigma (gate/sequential.py)
MIN_P99_VALUES = 100   # pooled values below which a p99 is an extrapolation (its 1 % tail holds < 1 value)
P99_SOURCES = {"p99 latency (s)": "latency_s", "p99 time to first token (s)": "ttfb_s"}   # report key per term


@dataclass(frozen=True)
class Check:
    """One SLO term: the estimate across replications against its limit."""

    name: str
    estimate: Estimate
    limit: float
    note: str = ""   # what the figure is made of, when its name does not say (the cold-start term)
    can_pass: bool = True   # False: no number of replications can pass it (`why_not` says why)
    why_not: str = ""   # why it cannot pass and what would let it (a p99 of too few values, a rate limit too low)
    biased_low: bool = False   # its estimate runs low (a p99 of too few values): no pass; settle on the upper end
    interim: Estimate | None = None   # an interim look's stricter interval (INTERIM_LEVEL): what the status uses

    @property
    def observed(self) -> float | None:
        return self.estimate.value

    @property
    def ci95(self) -> tuple[float, float] | None:
        e = self.estimate
        return None if e.lo is None or e.hi is None else (e.lo, e.hi)

    @property
    def status(self) -> str:
        """pass/FAIL/undecided on the 95 % interval — on the `interim` one at an interim look (Haybittle–Peto),
        also for a term that cannot pass: another term may keep its scenario open, and then it is looked at again
        (review rev14-diff F3)."""
        e = self.interim if self.interim is not None else self.estimate
        if e.value is None:  # e.g. no request succeeded, so there is no latency to meet the SLO with
            return FAIL
        if e.hi is not None and e.hi <= self.limit:
            return PASS if self.can_pass and not self.biased_low else UNDECIDED
        if e.lo is not None and e.lo > self.limit:
            return FAIL
        return UNDECIDED

    @property
    def ok(self) -> bool:
        return self.status == PASS

    @property
    def estimate_meets(self) -> bool:
        """What `gate.undecided: estimate` settles an undecided check on: its point estimate meets the limit — or,
        for a figure known to run low (`biased_low`: a p99 of too few values in all runs), its interval's upper end."""
        figure = self.estimate.hi if self.biased_low else self.observed
        return self.observed is not None and figure is not None and figure <= self.limit

    def fails(self, policy: str) -> bool:
        """This check fails the gate: a FAIL, or an undecided one under `policy` (gate.undecided)."""
        if self.status != UNDECIDED:
            return self.status == FAIL
        return policy == "fail" or (policy == "estimate" and not self.estimate_meets)

    def describe(self, service: str) -> str:
        ci = f" (95% CI {_fmt(self.estimate.lo)}–{_fmt(self.estimate.hi)}, {self.estimate.replications} " \
             "replications)" if self.ci95 else ""
        if identical_runs(self.estimate):
            ci = f" ({IDENTICAL.format(n=self.estimate.replications)})"
        relation = {PASS: "<=", FAIL: ">", UNDECIDED: "vs"}[self.status]
        note = f" [{self.note}]" if self.note else ""
        return f"{service}: {self.name} {_fmt(self.observed)} {relation} SLO {_fmt(self.limit)}{ci}{note}"

    def to_dict(self) -> dict:
        return {"name": self.name, **self.estimate.to_dict(), "observed": self.estimate.to_dict()["value"],
                "limit": self.limit, "status": self.status, "ok": self.ok, **({"note": self.note} if self.note else {})}


@dataclass(frozen=True)
class Verdict:
    """One service under one scenario, judged on `replications` independent replications."""

    service: str
    checks: tuple[Check, ...]
    report: dict  # replication 0's simulation JSON object (time series for plots, one run's counts)
    replications: int = 1
    scenario: str = "steady"
    undecided_policy: str = UNDECIDED_POLICIES[0]  # gate.undecided
    metrics: Mapping[str, Estimate] = field(default_factory=dict)  # every simulation.report_terms.METRICS figure

    @property
    def undecided(self) -> list[Check]:
        return [c for c in self.checks if c.status == UNDECIDED]

    @property
    def open(self) -> list[Check]:
        """The undecided checks more replications could decide (gate/sequential.py adds them only for these)."""
        return [c for c in self.undecided if c.can_pass]

    @property
    def passed(self) -> bool:
        return not any(c.fails(self.undecided_policy) for c in self.checks)

    @property
    def label(self) -> str:
        return self.service if self.scenario == "steady" else f"{self.service} [{self.scenario}]"

    def misses(self) -> list[str]:
        """One line per check that fails the gate (an undecided one too, as `gate.undecided` settles it)."""
        return [c.describe(self.label) + (self._undecided_why(c) if c.status == UNDECIDED else "")
                for c in self.checks if c.fails(self.undecided_policy)]

    def warnings(self) -> list[str]:
        """One line per undecided check that `gate.undecided` lets pass."""
        return [c.describe(self.label) + self._undecided_why(c)
                for c in self.undecided if not c.fails(self.undecided_policy)]

    def _undecided_why(self, c: Check) -> str:
        head = (f" — undecided after {self.replications} replications (gate.replications.max)" if c.can_pass else
                f" — cannot pass at any number of replications ({c.why_not})")
        if self.undecided_policy == "estimate":
            if c.biased_low:
                return head + (": even its interval's upper end meets the SLO, so it passes on that (gate.undecided: "
                               "estimate)" if c.estimate_meets else ": its interval's upper end misses the SLO, and "
                               "its estimate runs low (gate.undecided: estimate)")
            return head + (": its estimate meets the SLO, so it passes on the estimate alone (gate.undecided: "
                           "estimate)" if c.estimate_meets else ": its estimate misses the SLO (gate.undecided: "
                           "estimate)")
        return head + f" (gate.undecided: {self.undecided_policy})"

    def to_dict(self) -> dict:
        return {"service": self.service, "scenario": self.scenario, "passed": self.passed,
                "replications": self.replications, "checks": [c.to_dict() for c in self.checks],
                "metrics": {k: e.to_dict() for k, e in self.metrics.items()}}


def slo_checks(slo: Slo, reports: Sequence[Mapping], max_replications: int | None = None) -> tuple[Check, ...]:
    """The SLO's terms over the replications' reports (rates and p99s pooled: report_terms.py);
    `max_replications` (gate.replications.max; default: the runs given) bounds what a rate term can reach, and
    fewer reports than it make this an interim look (`INTERIM_LEVEL`)."""
    terms = [("p99 latency (s)", slo.p99_latency_s), ("error rate", slo.max_error_rate),
             ("503 rate", slo.max_503_rate)]
    if slo.p99_ttft_s is not None:
        terms.append(("p99 time to first token (s)", slo.p99_ttft_s))
    interim = max_replications is not None and len(reports) < max_replications
    checks = tuple(_interim(p99_check(name, limit, reports, max_replications) if name in P99_SOURCES else
                            rate_check(name, limit, reports, max_replications), reports, interim)
                   for name, limit in terms)
    if slo.max_cold_start_s is None:
        return checks
    return checks + (cold_start_check(slo.max_cold_start_s, reports, max_replications),)


def _interim(check: Check, reports: Sequence[Mapping], interim: bool) -> Check:
    """`check` with its `INTERIM_LEVEL` interval to decide on, at an interim look."""
    return replace(check, interim=estimate(check.name, reports, INTERIM_LEVEL)) if interim else check


def p99_check(name: str, limit: float, reports: Sequence[Mapping], max_replications: int | None = None) -> Check:
    """A p99 term: the p99 of all runs' values pooled; it cannot pass on fewer than `MIN_P99_VALUES` values in
    all (`biased_low`), and no number of replications can pass it when `max_replications` runs (default: those
    given) would not reach that many either, each run still to come as large as the largest seen (exact at
    `max_replications`). Its note counts runs left out for having none (module doc)."""
    summaries = [r.get(P99_SOURCES[name]) or {} for r in reports]
    counts = [s.get("count") or 0 for s in summaries]
    pooled, r = sum(counts), len(reports)
    reach = pooled + max(counts, default=0) * (max(r, max_replications or r) - r)
    empty = sum(1 for n in counts if not n)
    notes = [f"{empty} of {r} runs had no successful request: left out"] if empty else []
    few, hopeless = pooled < MIN_P99_VALUES, reach < MIN_P99_VALUES
    why_not = ""
    if without_tails(summaries):
        # Reports without values to pool (not the simulator's): the estimate is the mean of the runs' own p99s,
        # whose bias more runs do not shrink, so the count that matters is each run's (review rev14-diff F6).
        few = hopeless = pooled < MIN_P99_VALUES * max(1, r - empty)
        if hopeless:
            why_not = f"fewer than {MIN_P99_VALUES} values per run: a longer gate.durationS gives more"
            notes.append(f"{pooled} values in {r} runs, no values to pool: a mean of the runs' own p99s on fewer "
                         f"than {MIN_P99_VALUES} values each runs low, so this term cannot pass")
    elif hopeless:
        why_not = (f"fewer than {MIN_P99_VALUES} values in all runs, {reach} in gate.replications.max runs: a longer "
                   "gate.durationS or a larger gate.replications.max gives more")
        notes.append(f"{pooled} values in {r} runs: a p99 of fewer than {MIN_P99_VALUES} is an extrapolation "
                     "that runs low, so this term cannot pass (gate.undecided: estimate holds its upper end to the "
                     "SLO; a longer gate.durationS or a larger gate.replications.max gives it more values)")
    elif few:
        notes.append(f"{pooled} values in {r} runs: a p99 of fewer than {MIN_P99_VALUES} is an extrapolation that "
                     "runs low, so this term cannot pass yet (more replications give it more values)")
    return Check(name, estimate(name, reports), limit, "; ".join(notes), can_pass=not hopeless, biased_low=few,
                 why_not=why_not)


def rate_check(name: str, limit: float, reports: Sequence[Mapping], max_replications: int | None = None) -> Check:
    """A rate term; with no event in any run its note says what its bound assumes (estimates.rate_interval).

    It cannot pass when `limit` is below the lowest upper end `rate_interval` can give after `max_replications`
    runs (0 events in all: `lowest_rate_upper`), over an upper estimate of their requests: those seen, and each
    run still to come as large as the largest seen (exact at `max_replications`)."""
    counts = [METRICS[name][1](r) for r in reports]
    clean = not any(k for k, _ in counts)
    notes = [f"none in {len(reports)} runs: bound assumes independent requests"] if clean else []
    r, top = len(counts), max((n for _, n in counts), default=0)
    runs = max(r, max_replications or r)
    requests = sum(n for _, n in counts) + top * (runs - r)
    why_not = ""
    if requests > 0 and limit < lowest_rate_upper(requests):
        per_run = requests / runs
        need = math.ceil(zero_event_trials(limit) / per_run) if limit > 0 else None
        more = f", or about {need} runs of as many" if need and need <= MAX_REPLICATIONS else ""
        why_not = (f"limit {limit:g} is below {lowest_rate_upper(requests):.3g}, the lowest upper end {runs} "
                   f"event-free runs of ≈ {per_run:,.0f} requests reach; a limit of "
                   f"{passable_rate_limit(requests):g} "
                   "could pass")
        notes.append(f"cannot pass: {why_not}{more}")
    elif runs == 2 and not clean:
        notes.append(f"2 runs: its interval has 1 degree of freedom (Student t {t975(1):.1f}), so errors in them "
                     "seldom decide it; a gate.replications.max of 5 or more does")
    return Check(name, estimate(name, reports), limit, "; ".join(notes), can_pass=not why_not, why_not=why_not)


def _runs_too_few(max_replications: int | None) -> str:
    """Why a run-fraction term (cold starts, rollout stalls) can never pass: `gate.replications.max` below the
    runs a clean pass needs; "" when it can."""
    if max_replications is None or max_replications >= COLD_START_RUNS_TO_PASS:
        return ""
    return (f"0 of n passes only from {COLD_START_RUNS_TO_PASS} runs and gate.replications.max is "
            f"{max_replications}: raise it to {COLD_START_RUNS_TO_PASS} or more")


def cold_start_check(limit_s: float, reports: Sequence[Mapping], max_replications: int | None = None) -> Check:
    """maxColdStartS as the fraction of replications in which a new pod waited longer (module doc); it cannot
    pass when `max_replications` is below `COLD_START_RUNS_TO_PASS` (no replications are added for it)."""
    est = cold_start_misses(reports, limit_s)
    waits = [w for w in map(longest_cold_start, reports) if w is not None]
    misses = sum(1 for w in waits if w > limit_s)
    seen = f"longest {max(waits):.0f} s" if waits else "no cold start"
    short = f"; 0 over passes only from {COLD_START_RUNS_TO_PASS} runs" if est.replications < COLD_START_RUNS_TO_PASS \
        else ""
    why_not = _runs_too_few(max_replications)
    return Check(COLD_START_TERM, est, COLD_START_MISS_FRACTION,
                 f"maxColdStartS {limit_s:g} s: {misses} of {est.replications} runs over; {seen}{short}",
                 can_pass=not why_not, why_not=why_not)


def rollout_check(reports: Sequence[Mapping], deadline_s: float, max_replications: int | None = None) -> Check:
    """The rollout term: the fraction of runs whose new revision was not Ready within the progress deadline,
    held to `COLD_START_MISS_FRACTION` like the cold-start term (module doc); the note counts the stalls and
    gives the mean time to Ready with its interval."""
    est = rollout_stalls(reports, deadline_s)
    r = est.replications
    k = round((est.value or 0.0) * r)
    ready = rollout_ready_time(reports, deadline_s)
    mean = "never Ready" if ready.value is None else \
        f"mean Ready {format_estimate(ready, digits=3)} s" + (f" (the {r - k} runs Ready)" if k else "")
    short = f"; 0 stalled passes only from {COLD_START_RUNS_TO_PASS} runs" if r < COLD_START_RUNS_TO_PASS else ""
    why_not = _runs_too_few(max_replications)
    return Check(ROLLOUT_TERM, est, COLD_START_MISS_FRACTION,
                 f"progress deadline {deadline_s:g} s: {k} of {r} runs not Ready by then; {mean}{short}",
                 can_pass=not why_not, why_not=why_not)


def judge(service: str, slo: Slo, reports: Sequence[Mapping], *, scenario: str = "steady",
          undecided_policy: str = UNDECIDED_POLICIES[0], max_replications: int | None = None,
          progress_deadline_s: float | None = None) -> Verdict:
    """One service's verdict on its replications' reports; `progress_deadline_s` (a rollout) adds the rollout
    term and the mean time to Ready (`READY_METRIC`)."""
    checks, metrics = slo_checks(slo, reports, max_replications), estimates(reports, METRICS)
    if progress_deadline_s is not None:
        checks += (rollout_check(reports, progress_deadline_s, max_replications),)
        metrics[READY_METRIC] = rollout_ready_time(reports, progress_deadline_s)
    return Verdict(service, checks, dict(reports[0]), len(reports), scenario, undecided_policy, metrics)


def format_estimate(e: Estimate | None, pct: bool = False, digits: int = 4) -> str:
    """`value [lo, hi]` (percentages for rates); the value alone when there is no finite interval."""
    if e is None or e.value is None:
        return "n/a"
    f = (lambda x: f"{x:.3%}") if pct else (lambda x: f"{x:.{digits}g}")
    if e.lo is None or e.hi is None or e.hi == float("inf"):
        return f(e.value)
    if identical_runs(e):
        return f"{f(e.value)} ({IDENTICAL.format(n=e.replications)})"
    return f"{f(e.value)} [{f(e.lo)}, {f(e.hi)}]"


IDENTICAL = "same in all {n} runs, no interval"

STATUS_MARKUP = {"pass": "[bold green]pass[/]", "FAIL": "[bold red]FAIL[/]", "undecided": "[bold yellow]undecided[/]"}
"""A check's status as rich markup, for the tables of `preflight check` and `preflight whatif`."""


def identical_runs(e: Estimate) -> bool:
    """A zero-width interval over several replications: every run gave the same figure (nothing random reached
    it, e.g. a fixed cold-start prior), which is not a measured certainty; shown as such, not as [x, x]."""
    return e.replications > 1 and e.lo is not None and e.lo == e.hi


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"
