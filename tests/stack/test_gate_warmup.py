"""`gate.warmupS`: the steady run simulates that many seconds first and measures its terms over the `durationS`
after them (review rev13-stats finding 4: from a fresh deploy the steady terms include the first minutes' scale-up).
The warm-up counts against the run's request budget and moves the end a workload step must come before."""

from __future__ import annotations

import math

import pytest

from gate import stack_scenarios
from simulation.fleet import load_fleet, run_fleet
from tests.stack.test_gate_runs import _parse, _rate, _refused


def _gate(**gate):
    return lambda v: v.setdefault("gate", {}).update(gate)


def _steady(cfg) -> dict:
    return next(s for s in stack_scenarios(cfg, ("steady",))).fleet


def test_no_warm_up_by_default_and_the_steady_run_is_unchanged():
    cfg = _parse(lambda v: None)
    assert cfg.gate.warmup_s == 0.0
    fleet = _steady(cfg)
    assert fleet["duration_s"] == cfg.gate.duration_s and "warmup_s" not in fleet


def test_the_warm_up_comes_before_the_measured_window_of_the_steady_run_only():
    cfg = _parse(_gate(warmupS=600, durationS=300))
    fleet = _steady(cfg)
    assert (fleet["duration_s"], fleet["warmup_s"]) == (900.0, 600.0)
    assert all("warmup_s" not in s.fleet for s in stack_scenarios(cfg) if s.kind != "steady")
    # dev's chat at 0.5 req/s: its report counts the 300 measured seconds' requests, not the 900 simulated
    chat = run_fleet(load_fleet(fleet), seed=3)["services"][f"{cfg.stack}/chat"]
    assert abs(chat["requests"] - 150) < 5 * math.sqrt(150), chat["requests"]


@pytest.mark.parametrize("value", [-1, "10m", 86401])
def test_a_bad_warm_up_is_refused_naming_the_key(value):
    assert f"gate.warmupS: got {value!r}; expected a number between 0 and 86400" in _refused(_gate(warmupS=value))


def test_a_workload_step_may_come_after_durationS_within_the_warm_up_and_the_window():
    def step(at):   # the steady run only: a stress run lasts 600 s
        return lambda v: (v["services"][0]["workload"].update(kind="step", at_s=at, to_rate=2.0),
                          _gate(warmupS=300, durationS=900, scenarios=["steady"])(v))
    _parse(step(1000))
    assert ("services[0].workload.at_s: got 1200.0; expected less than gate.warmupS + gate.durationS (1200 s)"
            in _refused(step(1200)))


def test_the_warm_up_counts_against_the_request_budget():
    """1,800 req/s: 1,620,000 requests in a 900-s steady run fit the 2,000,000 budget (dev's 1,020-s rollout run
    too); 300 s of warm-up before them do not."""
    _parse(lambda v: (_rate(1800)(v), _gate(durationS=900)(v)))
    msg = _refused(lambda v: (_rate(1800)(v), _gate(durationS=900, warmupS=300)(v)))
    assert "the steady run (1200 s): chat 2,160,000 requests" in msg
    assert "lower gate.warmupS or raise gate.requestBudget" in msg


def test_a_rate_limit_is_judged_reachable_on_the_measured_window_requests():
    """Under `gate.undecided: fail` a steady rate limit below what error-free runs can reach is refused at load
    (stackconfig/platform.py `_rate_limits`). The runs' requests are those after the warm-up: 0.5 req/s rising to
    50 at 600 s gives ≈ 15,000 in [600, 900), enough for a 503 limit of 5e-5 in 20 runs; [0, 300) held 150."""
    def edit(v):
        v["services"][0]["workload"].update(kind="step", rate=0.5, at_s=600, to_rate=50.0)
        v["services"][0]["slo"]["max503Rate"] = 5e-5
        _gate(durationS=300, warmupS=600, undecided="fail", scenarios=["steady"])(v)
    _parse(edit)
    assert "max503Rate" in _refused(lambda v: (edit(v), _gate(warmupS=0)(v),
                                                v["services"][0]["workload"].update(at_s=299)))
    # a warm-up busier than the window (50 req/s dropping to 0.5 at 600 s): ≈ 150 requests in [600, 900), not
    # the ≈ 30,000 of the whole run (rev15-warmup finding 2: counting the whole run passed the tests above)
    assert "max503Rate" in _refused(lambda v: (edit(v), v["services"][0]["workload"].update(rate=50.0, to_rate=0.5)))


def test_saturation_figures_are_of_the_measured_window():
    """rev15-warmup finding 1: 'time at maxReplicas' and 'peak Pending pods' (the SATURATED line, the advice's
    saturated switch) read the whole run, so the warm-up's scale-up was blamed on the settled service."""
    from simulation.report_terms import peak_pending_pods, time_at_max_replicas

    report = {"service": {"max_replicas": 10}, "duration_s": 900.0,
              "replica_series": {"t": [0.0, 100.0, 700.0], "desired": [10, 10, 1]},
              "timeline": {"t": [0.0, 300.0, 700.0], "pending_pods": [3, 2, 0]}}
    assert (time_at_max_replicas(report), peak_pending_pods(report)) == (700.0 / 900.0, 3)   # no warm-up
    warm = {**report, "warmup_s": 600.0}
    assert (time_at_max_replicas(warm), peak_pending_pods(warm)) == (100.0 / 300.0, 0)
