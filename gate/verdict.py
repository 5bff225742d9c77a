"""SLO checks that hold statistically: each term is an estimate across replications with its 95 % interval.

A check passes only when the interval's upper end meets the SLO, fails when its lower end misses it, and is
undecided otherwise (the gate then runs more replications, `gate/sequential.py`). A service with an undecided
check after the replication budget passes with a warning (`gate.undecided: warn`) or fails (`fail`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from simulation.replicate import METRICS, Estimate, estimate, estimates
from stackconfig.schema import Slo

PASS, FAIL, UNDECIDED = "pass", "FAIL", "undecided"


@dataclass(frozen=True)
class Check:
    """One SLO term: the estimate across replications against its limit."""

    name: str
    estimate: Estimate
    limit: float

    @property
    def observed(self) -> float | None:
        return self.estimate.value

    @property
    def ci95(self) -> tuple[float, float] | None:
        e = self.estimate
        return None if e.lo is None or e.hi is None else (e.lo, e.hi)

    @property
    def status(self) -> str:
        e = self.estimate
        if e.value is None:  # e.g. no request succeeded, so there is no latency to meet the SLO with
            return FAIL
        if e.hi is not None and e.hi <= self.limit:
            return PASS
        if e.lo is not None and e.lo > self.limit:
            return FAIL
        return UNDECIDED

    @property
    def ok(self) -> bool:
        return self.status == PASS

    def describe(self, service: str) -> str:
        ci = f" (95% CI {_fmt(self.estimate.lo)}–{_fmt(self.estimate.hi)}, {self.estimate.replications} " \
             "replications)" if self.ci95 else ""
        relation = {PASS: "<=", FAIL: ">", UNDECIDED: "vs"}[self.status]
        return f"{service}: {self.name} {_fmt(self.observed)} {relation} SLO {_fmt(self.limit)}{ci}"

    def to_dict(self) -> dict:
        return {"name": self.name, **self.estimate.to_dict(), "observed": self.estimate.to_dict()["value"],
                "limit": self.limit, "status": self.status, "ok": self.ok}


@dataclass(frozen=True)
class Verdict:
    """One service under one scenario, judged on `replications` independent replications."""

    service: str
    checks: tuple[Check, ...]
    report: dict  # replication 0's simulation JSON object (time series for plots, one run's counts)
    replications: int = 1
    scenario: str = "steady"
    undecided_policy: str = "warn"  # gate.undecided
    metrics: Mapping[str, Estimate] = field(default_factory=dict)  # every simulation.replicate.METRICS figure

    @property
    def undecided(self) -> list[Check]:
        return [c for c in self.checks if c.status == UNDECIDED]

    @property
    def passed(self) -> bool:
        failed = any(c.status == FAIL for c in self.checks)
        return not failed and (self.undecided_policy == "warn" or not self.undecided)

    @property
    def label(self) -> str:
        return self.service if self.scenario == "steady" else f"{self.service} [{self.scenario}]"

    def misses(self) -> list[str]:
        """One line per check that fails the gate (an undecided one too under `gate.undecided: fail`)."""
        bad = [c for c in self.checks
               if c.status == FAIL or (c.status == UNDECIDED and self.undecided_policy == "fail")]
        return [c.describe(self.label) + (" — undecided" if c.status == UNDECIDED else "") for c in bad]

    def warnings(self) -> list[str]:
        if self.undecided_policy != "warn":
            return []
        return [c.describe(self.label) + " — undecided after the replication budget (gate.replications.max)"
                for c in self.undecided]

    def to_dict(self) -> dict:
        return {"service": self.service, "scenario": self.scenario, "passed": self.passed,
                "replications": self.replications, "checks": [c.to_dict() for c in self.checks],
                "metrics": {k: e.to_dict() for k, e in self.metrics.items()}}


def slo_checks(slo: Slo, reports: Sequence[Mapping]) -> tuple[Check, ...]:
    """The SLO's terms over the replications' reports (rates pooled, percentiles averaged; simulation.replicate)."""
    terms = [("p99 latency (s)", slo.p99_latency_s), ("error rate", slo.max_error_rate),
             ("503 rate", slo.max_503_rate)]
    if slo.p99_ttft_s is not None:
        terms.append(("p99 time to first token (s)", slo.p99_ttft_s))
    if slo.max_cold_start_s is not None:
        terms.append(("longest cold start (s)", slo.max_cold_start_s))
    return tuple(Check(name, estimate(name, reports), limit) for name, limit in terms)


def judge(service: str, slo: Slo, reports: Sequence[Mapping], *, scenario: str = "steady",
          undecided_policy: str = "warn") -> Verdict:
    return Verdict(service, slo_checks(slo, reports), dict(reports[0]), len(reports), scenario, undecided_policy,
                   estimates(reports, METRICS))


def format_estimate(e: Estimate | None, pct: bool = False, digits: int = 4) -> str:
    """`value [lo, hi]` (percentages for rates); the value alone when there is no finite interval."""
    if e is None or e.value is None:
        return "n/a"
    f = (lambda x: f"{x:.3%}") if pct else (lambda x: f"{x:.{digits}g}")
    if e.lo is None or e.hi is None or e.hi == float("inf"):
        return f(e.value)
    return f"{f(e.value)} [{f(e.lo)}, {f(e.hi)}]"


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4g}"
