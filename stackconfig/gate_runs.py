"""What the gate will simulate, bounded when the stack loads: each of its runs within `gate.requestBudget`, the
whole gate (every scenario at `gate.replications.max` runs) within `gate.totalRequestBudget`, and a rollout's run at
most a day past its start.

The gate (gate/stress.py) runs every service of the stack together in each scenario: `steady` for
`gate.durationS`, the stress scenarios for STRESS_DURATION_S (600 s), a rollout until past the new revision's
progress deadline. A run is one simulation however many services it holds, so the budget (simulation/budget.py)
counts the whole fleet: every checked service's workload over the run plus each spike's extra stream (a service
without a workload or slo runs idle, a negligible stream). Checked here, so that a stack the gate could not run is
refused at load naming the stack's own keys, not the gate's internal ones.

The whole gate's total counts time as well as requests (review rev13-bounds finding 1: 100 quiet services × a day
× 1,000 replications held < 1 M requests and ran for CPU-hours): every service of the stack runs in every gate
run, idle or not, and its autoscaler loop (KPA ticks and scrapes) and its Ready pods cost CPU for each simulated
second. `loop_cpu_s` is that time-driven work at SERVICE_SECOND_CPU_S per service and POD_SECOND_CPU_S per Ready
pod (minReplicas) per simulated second, counted in requests at REQUESTS_PER_CPU_S.
"""

from __future__ import annotations

import math

from simulation.autoscaler.config import DEFAULT_PROGRESS_DEADLINE_S, PROGRESS_DEADLINE_KEY, progress_deadline_s
from simulation.budget import DEFAULT_REQUEST_BUDGET, expected_requests, run_problem, spike_requests
from simulation.workload import WorkloadSpec, parse_workload, timing_problem
from stackconfig.stress import STRESS_DURATION_S, judged_in, rollout_run_s, settings
from stackconfig.types import GateConfig, ServiceConfig
from validation.errors import Problem
from validation.fields import Section

# The longest progress deadline the gate simulates a rollout out to (the rollout run lasts until past it).
MAX_ROLLOUT_DEADLINE_S = 86400.0
GATE_STRESS = ("spike", "rollout", "scaleFromZero", "nodeLoss")   # gate/stress.py KINDS[1:]
DEFAULT_MAX_REPLICATIONS = 20   # gate.replications.max's default (stackconfig/platform.py parse_gate)
# The whole gate's simulated requests, every scenario it runs at gate.replications.max replications: each run is
# within gate.requestBudget, but 1,000 of them (`replications: {min: 1000}`) would run for CPU-days. The default is
# what the other defaults already allow: every one of the gate's scenarios (steady and GATE_STRESS), each run at
# most the default gate.requestBudget, at the default replications.max, so a stack whose every run fits the
# per-run budget at the default replications is not refused by the total's requests (review rev-diff finding 9:
# 50 M refused a one-service dev stack at 630-1,960 req/s), only by its time-driven work (`loop_cpu_s`: a few
# thousand requests' worth per round for the shipped stacks); beyond the defaults the total binds.
DEFAULT_TOTAL_REQUEST_BUDGET = DEFAULT_REQUEST_BUDGET * DEFAULT_MAX_REPLICATIONS * (1 + len(GATE_STRESS))   # 200 M
MAX_TOTAL_REQUEST_BUDGET = 1_000_000_000    # gate.totalRequestBudget's own bound: ≈ 5 CPU-hours
REQUESTS_PER_CPU_S = 50_000                  # for the message's CPU-time figure (simulation/budget.py)
# The time-driven work per simulated second (benchmarks/gate_idle_cost.py, 2026-12-03, this 2-core machine at load
# 4-9; dev's chat × 10-20, vLLM, 20,000-86,400 s): a service whose KPA never settles (a request every 5-50 s)
# costs 4.7-5.9 µs per simulated second beyond its requests, one settled between rare requests 0.9-1.0 µs (idle
# stretches skipped, simulation/autoscaler/quiet.py); each Ready pod past the first adds 0.0-0.17 µs. The bound
# takes the unsettled figure for every service: an idle stack is over-estimated (≈ 5×), never under.
SERVICE_SECOND_CPU_S = 5e-6
POD_SECOND_CPU_S = 0.2e-6


def check_gate_runs(services: list[ServiceConfig], gate: GateConfig, problems: list[Problem], root: str, *,
                    scale_to_zero: bool = True) -> None:
    """Problems for a run the gate could not make: a workload step or spike after the steady run's end, a rollout
    waiting more than a day, the requests of the largest run over the budget, those of every run the gate may make
    over the gate's budget. `root` resolves trace paths; `scale_to_zero`: whether config-autoscaler lets a service
    scale to zero (else the gate runs no scale-from-zero scenario)."""
    if not gate.enabled:
        return
    checked = [(i, svc, parse_workload(Section(svc.workload, "", []), base_dir=root)) for i, svc in enumerate(services)
               if svc.workload is not None and svc.slo is not None]
    if not checked:
        return
    steady_s = gate.steady_run_s
    # Every service runs in every scenario the gate makes: a step or spike must come within the shortest run
    # (the gate's fleets refuse one that would never happen), named here by the stack's keys.
    kind, shortest, _ = min(gate_requests(checked, gate, scale_to_zero), key=lambda run: run[1],
                            default=("steady", steady_s, 0.0))
    run = ("gate.warmupS + gate.durationS" if gate.warmup_s else "gate.durationS") if kind == "steady" else \
        f"the length of the gate's {kind} run"
    for i, _, spec in checked:
        late = timing_problem(spec, shortest, f"services[{i}].workload", run)
        if late:
            problems.append(late)
    if "nodeLoss" in gate.scenarios:
        _node_loss_times(checked, problems)
    runs: list[tuple[str, float, list]] = []      # (what, seconds, the spiking services)
    if "steady" in gate.scenarios:
        runs.append(("the steady run", steady_s, []))
    if {"spike", "scaleFromZero", "nodeLoss"} & set(gate.scenarios):
        spiking = [i for i, svc, _ in checked if "spike" in gate.scenarios and svc.stress.spike.enabled]
        runs.append(("the spike run" if spiking else "a stress run", STRESS_DURATION_S, spiking))
    rolling = [(i, svc) for i, svc, _ in checked if "rollout" in gate.scenarios and svc.stress.rollout.enabled
               and svc.deployment_mode == "Knative"]
    if rolling:
        end = STRESS_DURATION_S
        for i, svc in rolling:
            deadline = _deadline(svc)
            if deadline > MAX_ROLLOUT_DEADLINE_S:
                problems.append(Problem(f"services[{i}].annotations[{PROGRESS_DEADLINE_KEY}]",
                                        svc.annotations.get(PROGRESS_DEADLINE_KEY), f"expected at most "
                                        f"{MAX_ROLLOUT_DEADLINE_S:g}s (24h) while the gate simulates this service's "
                                        "rollout, which runs until the deadline; or turn the rollout scenario off "
                                        f"(services[{i}].stress.rollout: false)"))
                return
            end = max(end, rollout_run_s(settings("rollout", svc.stress.rollout.params)["at_s"], deadline))
        runs.append(("the rollout run, until past the progress deadline", end, []))
    worst = max(((what, seconds, _parts(checked, seconds, spiking)) for what, seconds, spiking in runs),
                key=lambda run: sum(part for part, _ in run[2].values()), default=None)
    if worst is None:
        return
    what, seconds, parts = worst
    key = max(parts.values())[1]   # the largest part's key
    hint = "lower gate.warmupS or raise gate.requestBudget" if what == "the steady run" and gate.warmup_s else \
        "raise gate.requestBudget"
    over = run_problem({name: n for name, (n, _) in parts.items()}, f"{what} ({seconds:g} s)", gate.request_budget,
                       key, hint)
    if over:
        problems.append(over)
    else:
        _total_problem(checked, services, gate, scale_to_zero, problems)


def gate_requests(checked: list[tuple[int, ServiceConfig, WorkloadSpec]], gate: GateConfig,
                  scale_to_zero: bool = True) -> list[tuple[str, float, float]]:
    """(scenario, seconds, mean requests of one run) for each scenario the gate runs, as gate/stress.py
    `gate_scenarios` builds them: a stress scenario only when it judges a service (a scale from zero only for a
    Knative service at minReplicas 0 that config-autoscaler lets scale to zero)."""
    out = []
    on = {kind: [(i, svc) for i, svc, _ in checked if judged_in(svc, kind)] for kind in GATE_STRESS}
    if "steady" in gate.scenarios:
        out.append(("steady", gate.steady_run_s, _sum(_parts(checked, gate.steady_run_s, []))))
    if "spike" in gate.scenarios and on["spike"]:
        spiking = [i for i, _ in on["spike"]]
        out.append(("spike", STRESS_DURATION_S, _sum(_parts(checked, STRESS_DURATION_S, spiking))))
    if "rollout" in gate.scenarios and on["rollout"]:
        end = max(rollout_run_s(settings("rollout", svc.stress.rollout.params)["at_s"], _deadline(svc))
                  for _, svc in on["rollout"])
        out.append(("rollout", end, _sum(_parts(checked, end, []))))
    zero = [i for i, svc in on["scaleFromZero"] if svc.min_replicas == 0 and svc.deployment_mode == "Knative"]
    if "scaleFromZero" in gate.scenarios and zero and scale_to_zero:
        out.append(("scaleFromZero", STRESS_DURATION_S, _sum(_parts(checked, STRESS_DURATION_S, []))))
    if "nodeLoss" in gate.scenarios and on["nodeLoss"]:
        out.append(("nodeLoss", STRESS_DURATION_S, _sum(_parts(checked, STRESS_DURATION_S, []))))
    return out


def _sum(parts: dict[str, tuple[float, str]]) -> float:
    return math.fsum(n for n, _ in parts.values())


def loop_cpu_s(services: list[ServiceConfig], seconds: float) -> float:
    """CPU seconds of one run's time-driven work: every service's autoscaler loop and its Ready pods (at least
    minReplicas) for `seconds` simulated seconds, whatever the requests (the module docstring)."""
    pods = sum(max(0, svc.min_replicas) for svc in services)
    return seconds * (len(services) * SERVICE_SECOND_CPU_S + pods * POD_SECOND_CPU_S)


def gate_work(services: list[ServiceConfig], gate: GateConfig, root: str,
              scale_to_zero: bool = True) -> tuple[list[tuple[str, float, float]], float, float]:
    """One round of the gate's scenarios (one run each): (gate_requests' runs, their mean requests, the CPU
    seconds of their time-driven work). The whole gate is gate.replications.max rounds at most."""
    checked = [(i, svc, parse_workload(Section(svc.workload, "", []), base_dir=root)) for i, svc in enumerate(services)
               if svc.workload is not None and svc.slo is not None]
    runs = gate_requests(checked, gate, scale_to_zero)
    return runs, math.fsum(n for _, _, n in runs), math.fsum(loop_cpu_s(services, t) for _, t, _ in runs)


def work_requests(requests: float, cpu_s: float) -> float:
    """Requests and time-driven CPU seconds as one figure in requests (what gate.totalRequestBudget counts)."""
    return requests + cpu_s * REQUESTS_PER_CPU_S


def _total_problem(checked: list[tuple[int, ServiceConfig, WorkloadSpec]], services: list[ServiceConfig],
                   gate: GateConfig, scale_to_zero: bool, problems: list[Problem]) -> None:
    """The whole gate's work at most: each scenario's mean requests per run and its time-driven work, × gate.
    replications.max (the gate doubles a scenario's replications up to it while a check is undecided,
    gate/sequential.py)."""
    runs = gate_requests(checked, gate, scale_to_zero)
    total = gate.max_replications * math.fsum(n for _, _, n in runs)
    loops = gate.max_replications * math.fsum(loop_cpu_s(services, t) for _, t, _ in runs)
    if work_requests(total, loops) <= gate.total_request_budget:
        return
    problems.append(Problem("gate.replications", {"min": gate.min_replications, "max": gate.max_replications},
                            f"expected the whole gate to simulate at most {budget_text(gate)}; it runs each scenario "
                            f"up to gate.replications.max times: {_shown(gate.max_replications, runs, total)}"
                            f"{_loops_shown(services, gate.max_replications, runs, total, loops)}. "
                            "Lower gate.replications.max, gate.durationS or gate.warmupS, a rate, the number of "
                            "services or gate.scenarios, or raise gate.totalRequestBudget "
                            f"(at most {MAX_TOTAL_REQUEST_BUDGET:,})"))


def replications_problem(services: list[ServiceConfig], gate: GateConfig, root: str, scale_to_zero: bool,
                         replications: int, key: str, what: str) -> Problem | None:
    """A problem when `replications` runs of every scenario the gate runs (for `whatif --replications`) would
    simulate more than gate.totalRequestBudget requests, time-driven work included; `what` names the side."""
    if gate.enabled and replications <= gate.max_replications:   # within what the stack's load check allowed
        return None
    runs, per_round, loops = gate_work(services, gate, root, scale_to_zero)
    total = replications * per_round
    if work_requests(total, replications * loops) <= gate.total_request_budget:
        return None
    most = max(gate.max_replications, int(gate.total_request_budget // work_requests(per_round, loops)))
    return Problem(key, replications, f"expected at most {most} for {what}: it would simulate every scenario the "
                   f"gate runs that many times, {_shown(replications, runs, total)}"
                   f"{_loops_shown(services, replications, runs, total, replications * loops)}, over "
                   f"{budget_text(gate)}; lower {key}, or raise gate.totalRequestBudget "
                   f"(--set gate.totalRequestBudget=N, at most {MAX_TOTAL_REQUEST_BUDGET:,})")


def _loops_shown(services: list[ServiceConfig], replications: int, runs: list[tuple[str, float, float]],
                 total: float, loops: float) -> str:
    """The time-driven part of the estimate, when it is more than a rounding of the requests'."""
    if loops * REQUESTS_PER_CPU_S < 0.001 * max(total, 1.0):
        return ""
    pods = sum(max(0, svc.min_replicas) for svc in services)
    seconds = math.fsum(t for _, t, _ in runs)
    minutes = (total / REQUESTS_PER_CPU_S + loops) / 60
    return (f", plus the time-driven work of the stack's {len(services)} services (its services list: each one's "
            f"autoscaler loop) and their {pods} Ready pods (minReplicas), requests or not: {replications} × "
            f"{seconds:g} s (the steady run, its warm-up included, and the stress runs) × ({len(services)} × "
            f"{SERVICE_SECOND_CPU_S * 1e6:g} µs + {pods} × {POD_SECOND_CPU_S * 1e6:g} µs) ≈ {loops:,.0f} "
            f"CPU-seconds, counted as {loops * REQUESTS_PER_CPU_S:,.0f} requests: ≈ {minutes:,.0f} CPU-minutes "
            "in all")


def budget_text(gate: GateConfig) -> str:
    """gate.totalRequestBudget and its CPU time, for a message (also `preflight tune --trials`)."""
    minutes = gate.total_request_budget / REQUESTS_PER_CPU_S / 60
    return (f"gate.totalRequestBudget {gate.total_request_budget:,} requests (≈ {minutes:,.0f} CPU-minutes at "
            f"{REQUESTS_PER_CPU_S:,} requests per CPU-second)")


def _shown(replications: int, runs: list[tuple[str, float, float]], total: float) -> str:
    shown = " + ".join(f"{kind} ({seconds:g} s) {n:,.0f}" for kind, seconds, n in runs)
    return f"{replications} × ({shown}) ≈ {total:,.0f} requests"


def _node_loss_times(checked: list[tuple[int, ServiceConfig, WorkloadSpec]], problems: list[Problem]) -> None:
    """The gate loses one node for all services, each nodeLoss setting from the last service that gives it
    (gate/stress.py): two services that each pass alone may still combine into replaceS before notReadyS."""
    merged: dict = {}
    source: dict = {}
    for i, svc, _ in checked:
        if svc.stress.node_loss.enabled:
            for key, value in svc.stress.node_loss.params.items():
                merged[key], source[key] = value, i
    s = settings("nodeLoss", merged)
    if s.get("replace_s") is not None and s["replace_s"] < s["not_ready_s"]:
        origin = f"services[{source['not_ready_s']}]" if "not_ready_s" in source else "the default"
        problems.append(Problem(f"services[{source['replace_s']}].stress.nodeLoss.replaceS", s["replace_s"],
                                f"expected at least notReadyS ({s['not_ready_s']:g}, from {origin}): the gate loses "
                                "one node for all services, each setting taken from the last service that gives it"))


def _deadline(svc: ServiceConfig) -> float:
    seconds, _ = progress_deadline_s(svc.annotations.get(PROGRESS_DEADLINE_KEY))  # refused earlier when malformed
    return seconds or DEFAULT_PROGRESS_DEADLINE_S


def _parts(checked: list[tuple[int, ServiceConfig, WorkloadSpec]], seconds: float,
           spiking: list[int]) -> dict[str, tuple[float, str]]:
    """Each service's mean requests in a run of `seconds`, and its spike's: name → (requests, key)."""
    parts = {}
    for i, svc, spec in checked:
        parts[svc.name] = (expected_requests(spec, seconds), f"services[{i}].workload")
        if i in spiking:
            s = settings("spike", svc.stress.spike.params)
            parts[f"{svc.name} spike"] = (spike_requests(spec, s["factor"], s["at_s"], s["duration_s"], seconds),
                                            f"services[{i}].stress.spike")
    return parts
