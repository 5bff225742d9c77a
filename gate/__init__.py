"""The SLO gate: simulate every service exactly as it is about to be deployed and compare with its SLO.

Each service's scenario is built from the stack config alone: the InferenceService (and HPA) dicts that the
components will hand to Pulumi, the service's `workload` and `client`, a cluster profile from the GPU node group
and `coldStart`, and the model from the catalog. The simulation reads the model-server settings (engine, caps,
`--max-num-seqs`, `--gpu-memory-utilization` …) from the manifest itself, so no knob is copied.

Verdicts hold statistically: every scenario runs as independent seeded replications, each SLO term is an
estimate with its 95 % interval, and replications are added until every term is decided (gate/verdict.py,
gate/sequential.py, simulation/replicate.py, simulation/estimates.py).

All services of the stack run together in one simulation on the node group (simulation/fleet.py), so they
compete for its GPUs; beside the steady run the gate runs stress scenarios generated from each service's config
(a traffic spike, a rollout, scale from zero, the loss of a node: gate/stress.py). Each scenario is one fleet
simulation per replication; every service it checks is judged on its own report in it. `scenario_for`
(gate/scenario.py) still gives one service's standalone scenario (the node group less the others' minimum
replicas) for what-if files.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from validation.errors import InputError, Problem
from stackconfig.load import ROOT
from stackconfig.schema import ServiceConfig, StackConfig
from gate.scenario import cluster_profile, scenario_for
from gate.startup import server_key
from gate.verdict import Check, Verdict, judge
from gate.sequential import Decision, Trial, decide
from gate.stress import GateScenario, gate_scenarios

__all__ = ["Check", "Verdict", "trials", "check_stack", "start_check", "check_service", "gate_failure", "gate_warnings",
           "scenario_for", "cluster_profile", "stack_scenarios"]


def stack_scenarios(cfg: StackConfig, kinds: tuple[str, ...] | None = None) -> list[GateScenario]:
    """The stack's gate scenarios (steady + stress), each a fleet of every service on the node group."""
    args = (cfg, scenario_for, cluster_profile(cfg))
    return gate_scenarios(*args) if kinds is None else gate_scenarios(*args, kinds=kinds)


def _validate(cfg: StackConfig, scenario: GateScenario) -> None:
    """A fleet's `services[i].scenario.<path>` problems, re-anchored on the stack config's key paths: a server
    setting at the stack key that set it (gate/startup.py `server_key`), anything else under `services[i]/`."""
    from simulation.fleet import load_fleet

    try:
        load_fleet(scenario.fleet, base_dir=ROOT)
    except InputError as err:
        problems = []
        for p in err.problems:
            head, sep, rest = p.path.partition(".scenario.")
            index = re.fullmatch(r"services\[(\d+)\]", head) if sep else None
            if index is None or int(index.group(1)) >= len(cfg.services):
                problems.append(Problem(f"{cfg.project}:{head}/{rest}" if sep else p.path, p.value, p.allowed))
                continue
            mapped = server_key(cfg, int(index.group(1)), Problem(rest, p.value, p.allowed))
            problems.append(Problem(f"{cfg.project}:{mapped.path}", mapped.value, mapped.allowed))
        raise InputError(problems, f"the gate's {scenario.kind} scenario") from None


def _fleet_judge(cfg: StackConfig, scenario: GateScenario, svc: ServiceConfig):
    key = f"{cfg.stack}/{svc.name}"
    slo = scenario.slos[svc.name]
    deadline = scenario.extra.get(svc.name, {}).get("progress_deadline_s")   # a rollout: its term (verdict.py)

    def judge_fleet(fleets: list[dict]) -> Verdict:
        return judge(svc.name, slo, [f["services"][key] for f in fleets], scenario=scenario.kind,
                     undecided_policy=cfg.gate.undecided, max_replications=cfg.gate.max_replications,
                     progress_deadline_s=deadline)
    return judge_fleet


def _trials(cfg: StackConfig, kinds: tuple[str, ...] | None = None) -> list[Trial]:
    """One trial per (scenario, checked service); a scenario's trials share its fleet runs (one per seed)."""
    trials = []
    for scenario in stack_scenarios(cfg, kinds):
        _validate(cfg, scenario)
        for svc in cfg.services:
            if svc.name in scenario.slos:
                key = f"{cfg.stack}/{svc.name}"
                trials.append(Trial((svc.name, scenario.kind), scenario.fleet, _fleet_judge(cfg, scenario, svc),
                                    lambda run, key=key: run["services"][key]))
    return trials


def trials(cfg: StackConfig, kinds: tuple[str, ...] | None = None) -> list[Trial]:
    """Every scenario the gate decides, in order: each (service, scenario) of `gate.scenarios` (or `kinds`) for
    the services that declare a workload and an SLO. A trial's runs are fleet results; `trial.report(run)` is
    the service's own report in one.

    Raises `validation.errors.InputError` when a workload (or client) mapping is not a valid scenario part.
    """
    return _trials(cfg, cfg.gate.scenarios if kinds is None else kinds)


def check_stack(cfg: StackConfig, executor: Any = None,
                on_round: Callable[[int, int], None] | None = None) -> list[Verdict]:
    """Every trial replicated until decided (gate/sequential.py), in `trials(cfg)` order (steady first)."""
    return start_check(cfg, executor, on_round)()


def start_check(cfg: StackConfig, executor: Any = None, on_round: Callable[[int, int], None] | None = None,
                cache: Any = None) -> Callable[[], list[Verdict]]:
    """`check_stack` started without waiting (input errors are raised here): round 1 is on the executor while
    the caller does other work; the returned function waits for the verdicts. `cache`: a
    simulation.result_cache.ResultCache for the replications, or None."""
    decision = Decision(trials(cfg), cfg.gate, executor, on_round, cache)
    return lambda: list(decision.result().values())


def check_service(cfg: StackConfig, svc: ServiceConfig, executor: Any = None) -> Verdict | None:
    """One service's steady verdict (simulated beside the stack's other services); None when it declares no
    workload or no SLO."""
    if svc.workload is None or svc.slo is None:
        return None
    return decide(_trials(cfg, ("steady",)), cfg.gate, executor)[(svc.name, "steady")]


def gate_failure(verdicts: list[Verdict], stack: str = "<stack>") -> str | None:
    """The message `pulumi up` fails with, or None when every simulated service meets its SLO."""
    misses = [m for v in verdicts for m in v.misses()]
    if not misses:
        return None
    return ("SLO gate: the simulation predicts that this configuration misses its SLO:\n"
            + "\n".join(f"  - {m}" for m in misses)
            + f"\nRun `python -m preflight check --stack {stack}` for the full report, change the service "
              "(replicas, containerConcurrency, caps, scale-down delay) or its SLO, or set gate.enforce: false.")


def gate_warnings(verdicts: list[Verdict]) -> list[str]:
    """Checks still undecided after the replication budget that `gate.undecided` lets pass (with a warning)."""
    return [w for v in verdicts for w in v.warnings()]
