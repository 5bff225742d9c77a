"""judge() hands gate.replications.max to the rollout term, as the gate calls it (gate/__init__.py): below the 17
clean runs the stall fraction needs to pass, the term can never pass, so it is not `open` and the gate adds no
replications for it. (17: the upper end for 0 stalls in r runs, 1 − 0.025^(1/r), is at most the 0.2 the term
allows only from r ≥ ln 0.025 / ln 0.8 = 16.53.) test_run_fraction_budget.py checks rollout_check called directly;
this is the path the gate takes."""

from __future__ import annotations

from gate.verdict import ROLLOUT_TERM, UNDECIDED, judge
from stackconfig.schema import Slo

SLO = Slo(p99_latency_s=60, max_error_rate=0.01, max_503_rate=0.01, max_cold_start_s=None, p99_ttft_s=None)


def run(ready_s: float) -> dict:
    return {"requests": 1000, "status_counts": {"200": 1000}, "latency_s": {"p99": 1.0, "count": 1000},
            "rollout": {"at_s": 60.0, "progress_deadline_s": 600.0, "ready_s": ready_s},
            "throughput_rps": 1.0, "replicas": {"mean": 1.0}, "pod_gpu_hours": 0.2, "cold_starts": 1,
            "replica_series": {"t": [0.0], "desired": [1]}, "duration_s": 720.0}


def _rollout_term(v):
    [term] = [c for c in v.checks if c.name == ROLLOUT_TERM]
    return term


def test_a_rollout_verdict_under_a_16_run_budget_adds_no_replications_for_the_stall_term():
    v = judge("chat", SLO, [run(300.0)] * 4, scenario="rollout", max_replications=16, progress_deadline_s=600.0)
    term = _rollout_term(v)
    assert term.status == UNDECIDED and not term.can_pass and "gate.replications.max is 16" in term.why_not
    assert v.open == []
    assert "cannot pass at any number of replications" in v.warnings()[0]


def test_from_17_runs_the_stall_term_stays_open():
    v = judge("chat", SLO, [run(300.0)] * 4, scenario="rollout", max_replications=17, progress_deadline_s=600.0)
    term = _rollout_term(v)
    assert term.status == UNDECIDED and term.can_pass and v.open == [term]
