"""The whole gate's cost, bounded at load (review rev-fuzz, finding 5): every run was within gate.requestBudget,
but `gate.replications.min: 1000` (or requestBudget 1e9) made `preflight check` run for CPU-days. The estimate is
Σ over the scenarios the gate runs of gate.replications.max × one run's mean requests (stackconfig/gate_runs.py),
held to gate.totalRequestBudget."""

from __future__ import annotations

import copy
import time

import pytest

from gate import stack_scenarios
from simulation.workload import parse_workload
from stackconfig.gate_runs import DEFAULT_TOTAL_REQUEST_BUDGET, MAX_TOTAL_REQUEST_BUDGET, gate_requests
from stackconfig.load import ROOT, load_stack, project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError
from validation.fields import Section

PROJECT, VALUES = stack_config_values("dev")


def _dev(rate: float, **gate) -> dict:
    values = project_values(copy.deepcopy(VALUES), PROJECT)
    values["services"][0]["workload"]["rate"] = rate
    values["services"][0]["maxReplicas"] = 3
    values["gate"] = gate
    return values


def _refusal(values: dict):
    start = time.perf_counter()
    with pytest.raises(InputError) as err:
        parse_stack_config(values, PROJECT, "dev")
    assert time.perf_counter() - start < 5   # refused at load, not after simulating
    [problem] = [p for p in err.value.problems if p.path == f"{PROJECT}:gate.replications"]
    return problem


def test_a_thousand_day_long_replications_are_refused_at_load():
    """The reviewer's case: dev at 23 req/s for a day per run (1.99 M requests: within the per-run budget), 1,000
    replications: ≈ 15 CPU-hours for the steady scenario alone."""
    problem = _refusal(_dev(23, durationS=86400, replications={"min": 1000, "max": 1000}))
    assert problem.value == {"min": 1000, "max": 1000}
    assert "at most gate.totalRequestBudget 200,000,000 requests" in problem.allowed
    assert "up to gate.replications.max times: 1000 × (steady (86400 s) 1,987,200 + spike (600 s)" in problem.allowed
    assert "Lower gate.replications.max" in problem.allowed and "raise gate.totalRequestBudget" in problem.allowed


def test_a_huge_per_run_budget_does_not_lift_the_gates():
    problem = _refusal(_dev(10_000, requestBudget=10**9))
    assert "20 × (steady (900 s) 9,000,000 + " in problem.allowed


def test_the_total_is_every_scenarios_runs_at_max_replications():
    """60 req/s: steady 54,000 + spike 50,400 + rollout (1,020 s) 61,200 + scale from zero and node loss 36,000
    each = 237,600 per round of scenarios; × 1,000 replications ≈ 238 M, over the default 200 M."""
    problem = _refusal(_dev(60, replications={"max": 1000}))
    assert "≈ 237,600,000 requests" in problem.allowed
    raised = parse_stack_config(_dev(60, replications={"max": 1000}, totalRequestBudget=300_000_000), PROJECT, "dev")
    assert raised.gate.total_request_budget == 300_000_000   # raising the budget lets it through
    assert parse_stack_config(_dev(60, replications={"max": 500}), PROJECT, "dev")   # or fewer replications


@pytest.mark.parametrize("rate", [700, 1500, 1950])
def test_a_stack_whose_every_run_fits_the_per_run_budget_passes_at_the_default_replications(rate):
    """Review rev-diff finding 9: a one-service dev stack whose largest run (the 1,020-s rollout) is within the
    default 2 M per-run budget was refused by the old 50 M total from about 630 req/s; at 1,950 req/s the rollout
    run is 1.99 M."""
    cfg = parse_stack_config(_dev(rate), PROJECT, "dev")
    total = cfg.gate.max_replications * sum(n for _, _, n in _requests(cfg))
    assert max(n for _, _, n in _requests(cfg)) <= cfg.gate.request_budget
    assert 50_000_000 < total <= cfg.gate.total_request_budget   # over the old default total, within the new one
    with pytest.raises(InputError, match="expected at most the request budget of 2,000,000 requests per run"):
        parse_stack_config(_dev(2000), PROJECT, "dev")   # the per-run budget still binds first


@pytest.mark.parametrize("stack", ["staging", "prod"])
def test_every_service_at_the_per_run_limit_passes_the_total(stack):
    """Every service's rate scaled until the stack's largest run nearly fills the per-run budget: the default
    total (every scenario × the default replications.max × the per-run budget) still holds it."""
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    cfg = parse_stack_config(copy.deepcopy(values), project, stack)
    scale = 0.98 * cfg.gate.request_budget / max(n for _, _, n in _requests(cfg))
    for svc in values["services"]:
        if svc.get("workload") and "rate" in svc["workload"]:
            svc["workload"]["rate"] *= scale
    cfg = parse_stack_config(values, project, stack)
    assert max(n for _, _, n in _requests(cfg)) > 0.9 * cfg.gate.request_budget
    assert DEFAULT_TOTAL_REQUEST_BUDGET == cfg.gate.total_request_budget


@pytest.mark.parametrize("budget", [0, 999, MAX_TOTAL_REQUEST_BUDGET + 1, 1.5, "50M"])
def test_the_total_budget_is_bounded_itself(budget):
    with pytest.raises(InputError, match=r"gate\.totalRequestBudget: got .*; expected an integer between 1000 and "
                                         "1000000000"):
        parse_stack_config(_dev(0.5, totalRequestBudget=budget), PROJECT, "dev")


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_shipped_stacks_fit_with_a_wide_margin(stack):
    cfg = load_stack(stack)
    assert cfg.gate.total_request_budget == DEFAULT_TOTAL_REQUEST_BUDGET
    total = cfg.gate.max_replications * sum(n for _, _, n in _requests(cfg))
    assert 0 < total * 20 < DEFAULT_TOTAL_REQUEST_BUDGET   # staging, the largest, ≈ 1.5 M


def _requests(cfg):
    checked = [(i, s, parse_workload(Section(s.workload, "", []), base_dir=str(ROOT)))
               for i, s in enumerate(cfg.services) if s.workload is not None and s.slo is not None]
    return gate_requests(checked, cfg.gate, cfg.knative.autoscaler.enable_scale_to_zero)


@pytest.mark.parametrize("stack, edit", [
    ("dev", None), ("staging", None), ("prod", None),
    ("dev", lambda v: v.update(knative={"autoscaler": {"enable-scale-to-zero": "false"}})),
    ("dev", lambda v: v["services"][0].update(stress={"spike": False, "nodeLoss": False})),
    ("prod", lambda v: v.update(gate={"scenarios": ["steady", "rollout"]})),
])
def test_the_estimate_counts_the_scenarios_the_gate_runs(stack, edit):
    """The same scenarios, each as long, as gate/stress.py builds (a scale from zero only when a service can)."""
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    if edit:
        edit(values)
    cfg = parse_stack_config(values, project, stack)
    assert [(kind, seconds) for kind, seconds, _ in _requests(cfg)] == \
        [(s.kind, s.fleet["duration_s"]) for s in stack_scenarios(cfg, cfg.gate.scenarios)]


def _quiet_fleet(n: int, pods: int, **gate) -> dict:
    """dev's chat `n` times at 0.0001 req/s (8.64 requests per service-day), `pods` Ready pods each."""
    values = _dev(0.0001, **gate)
    chat = values["services"][0]
    values["services"] = [{**copy.deepcopy(chat), "name": f"chat{i}", "minReplicas": pods, "maxReplicas": pods + 1}
                          for i in range(n)]
    values["gpuNodeGroup"].update(maxSize=min(1000, (pods + 2) * n + 1), minSize=0, desiredSize=0)
    return values


def test_a_quiet_fleet_for_a_day_at_a_thousand_replications_is_refused_by_its_time_driven_work():
    """Review rev13-bounds finding 1: 100 services × 5 pods × 86,400 s × 1,000 replications held 888,600 requests
    (0.4 % of the total budget) and was accepted, yet one replication took 10.8 worker CPU s (≈ 3 CPU-hours for
    the steady scenario): the loops and pods cost CPU for every simulated second, requests or not."""
    problem = _refusal(_quiet_fleet(100, 5, durationS=86400, replications={"min": 1000, "max": 1000}))
    assert "≈ 888,600 requests, plus the time-driven work of the stack's 100 services" in problem.allowed
    assert "their 500 Ready pods (minReplicas)" in problem.allowed
    assert ("1000 × 88620 s (the steady run, its warm-up included, and the stress runs) × (100 × 5 µs + 500 × 0.2 µs)"
            in problem.allowed)
    assert "Lower gate.replications.max, gate.durationS or gate.warmupS, a rate, the number of services" \
        in problem.allowed


def test_the_same_quiet_fleet_at_the_default_replications_is_accepted():
    # 20 × 88,620 s × 600 µs ≈ 1,063 CPU s ≈ 53 M requests' worth, within the default 200 M
    assert parse_stack_config(_quiet_fleet(100, 5, durationS=86400), PROJECT, "dev")


def test_the_time_driven_work_is_what_benchmarks_gate_idle_cost_measures():
    """The constants bound the measured costs: ≈ 4.7-4.9 µs per unsettled service-second beyond the requests, 0.9
    µs settled, ≤ 0.17 µs per extra Ready pod-second (benchmarks/gate_idle_cost.py)."""
    from stackconfig.gate_runs import POD_SECOND_CPU_S, SERVICE_SECOND_CPU_S, loop_cpu_s

    cfg = parse_stack_config(_quiet_fleet(3, 2), PROJECT, "dev")
    assert loop_cpu_s(cfg.services, 1000.0) == pytest.approx(1000 * (3 * SERVICE_SECOND_CPU_S + 6 * POD_SECOND_CPU_S))
    assert 4.7e-6 <= SERVICE_SECOND_CPU_S <= 1e-5 and 0.17e-6 <= POD_SECOND_CPU_S <= 1e-6
