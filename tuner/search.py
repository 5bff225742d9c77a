"""The search: optuna's TPE sampler (seeded) over one service's knobs; cost = the node group's $/h, constraint =
every gate scenario's SLO.

Each trial writes its settings into the stack config (tuner/space.py) and runs the gate's scenarios one after the
other, steady first, each replicated until decided (gate/sequential.py) on the given executor (local processes,
Dask or Ray: simulation/executors.py). The first scenario with a failing service (judged as `pulumi up` would:
`Verdict.misses`, an undecided term settled by `gate.undecided`) prunes the trial
(`optuna.TrialPruned`), so an infeasible candidate costs one scenario, not five. A passing trial's value is the
node group's cost in the steady scenario: mean node GPU-hours per simulated hour over the replications ÷ GPUs
per node × the instance type's price (catalog/prices.py, on-demand or spot as the node group's capacityType).
Today's settings are evaluated the same way, as trial 0 (`enqueue_trial`), so the answer is either a cheaper
passing configuration or today's (the cheapest passing one the search found). Same stack, seed and trials →
the same answer: the sampler is seeded and every simulation is.

Every candidate is judged on the gate's own seeds, and minimising cost drives the search to the SLO's edge: the
cheapest pass is the one those seeds flattered most (the winner's curse), and `preflight check` would re-run the
very same seeds. So before the winner is proposed it is judged again on fresh seeds (`confirm`): replication i of
re-judgement k uses `SeedSequence(SeedSequence(gate.seed, spawn_key=(1, k)) state, spawn_key=(i,))`, never one of
the gate's `SeedSequence(gate.seed, spawn_key=(i,))`; if it fails, the next cheapest passing candidates are, up to
REJUDGE_MAX in all. Pass or fail is the verdicts' own (`Verdict.misses`), as for the search.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from catalog.prices import PRICES, Price
from gate import trials as gate_trials
from gate.sequential import decide
from simulation.replicate import replication_seeds, run_replications
from stackconfig.load import ROOT
from stackconfig.schema import StackConfig, parse_stack_config
from tuner.space import apply, as_params, changed, current, key, points, suggest
from validation.errors import InputError


@dataclass
class Candidate:
    """One evaluated configuration."""

    number: int
    settings: dict
    passed: bool = False
    failed: list[str] = field(default_factory=list)   # the first failing scenario's misses (or config errors)
    cost_per_hour: float | None = None
    metrics: dict = field(default_factory=dict)        # the tuned service's steady estimates (value, ci95)
    gate_seed: int | None = None                       # the base seed judged on (None: the stack's gate.seed)
    fresh: "Candidate | None" = None                   # the same settings re-judged on fresh seeds (`confirm`)


def node_group_cost(cfg: StackConfig, fleets: list[dict], prices: dict[str, Price]) -> float:
    """$/h of the node group in the steady runs: node GPU-hours per simulated hour ÷ GPUs per node × price."""
    ng = cfg.node_group
    report = next(iter(fleets[0]["services"].values()))
    hours = (report["duration_s"] - report["warmup_s"]) / 3600.0
    gpus_per_hour = sum(f["node_group"]["gpu_hours"] for f in fleets) / len(fleets) / hours
    return gpus_per_hour / ng.gpus_per_node * prices[ng.instance_types[0]].per_hour(ng.capacity_type)


def evaluate(values: dict, project: str, stack: str, service: str, settings: dict, prices: dict[str, Price],
             executor: Any = None, number: int = 0, gate_seed: int | None = None) -> Candidate:
    """Run the gate's scenarios on the candidate, stopping at the first scenario a service fails; `gate_seed`
    replaces the stack's gate.seed (re-judging on fresh seeds)."""
    cand = Candidate(number, settings, gate_seed=gate_seed)
    today = current(parse_stack_config(values, project, stack), service)
    try:
        cfg = parse_stack_config(apply(values, service, changed(settings, today)), project, stack)
    except InputError as err:
        cand.failed = [f"{p.path}: {p.allowed}" for p in err.problems]
        return cand
    if gate_seed is not None:
        cfg = replace(cfg, gate=replace(cfg.gate, seed=gate_seed))
    for kind in cfg.gate.scenarios:
        scenario = gate_trials(cfg, (kind,))
        verdicts = list(decide(scenario, cfg.gate, executor).values())
        misses = [m for v in verdicts for m in v.misses()]
        if misses:
            cand.failed = misses
            return cand
        if kind == "steady" and scenario:
            reps = verdicts[0].replications
            fleets = run_replications([scenario[0].scenario], replication_seeds(cfg.gate.seed, reps), executor,
                                      base_dir=ROOT)[0]
            cand.cost_per_hour = node_group_cost(cfg, fleets, prices)
            mine = next((v for v in verdicts if v.service == service), None)
            if mine is not None:
                cand.metrics = {k: e.to_dict() for k, e in mine.metrics.items()}
    cand.passed = cand.cost_per_hour is not None
    return cand


DRAWS_PER_TRIAL = 10  # the sampler's draws per --trials at most, duplicates included, before the search stops


def space_size(values: dict, project: str, stack: str, service: str, prices: dict[str, Price] | None = None,
               knobs: tuple[str, ...] | None = None, limit: int = 10000) -> int | None:
    """How many distinct settings the search can try: the points of the space (tuner/space.py `points`) and
    today's (trial 0, which may lie outside the space's ranges); None when more than `limit`."""
    cfg = parse_stack_config(values, project, stack)
    found = points(cfg, service, prices or PRICES, knobs, limit)
    if found is None:
        return None
    today = current(cfg, service)
    keys = {key(s) for s in found}
    size = len(keys) + (key({k: today.get(k) for k in found[0]}) not in keys)   # found: never empty
    return size if size <= limit else None


def tune(values: dict, project: str, stack: str, service: str, *, trials: int = 30, seed: int = 0,
         executor: Any = None, prices: dict[str, Price] | None = None, knobs: tuple[str, ...] | None = None,
         on_trial: Callable[[Candidate], None] | None = None) -> list[Candidate]:
    """Today's configuration (trial 0) and up to `trials` − 1 other distinct ones, in trial order.

    A setting is simulated once: a draw that repeats an earlier one is answered with that one's result (the
    optuna FAQ's way with duplicates) and does not count against `trials`. A space with at most `trials` points
    is searched exhaustively by optuna's BruteForceSampler (seeded order; the study stops when every point was
    tried); a larger one by the TPE sampler, which stops at `trials` distinct settings or after
    DRAWS_PER_TRIAL × `trials` draws."""
    import warnings

    import optuna

    prices = prices or PRICES
    cfg = parse_stack_config(values, project, stack)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    small = space_size(values, project, stack, service, prices, knobs, limit=trials) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.BruteForceSampler(seed=seed) if small else optuna.samplers.TPESampler(seed=seed)
    study = optuna.create_study(direction="minimize", sampler=sampler)
    today = current(cfg, service)
    study.enqueue_trial({k: v for k, v in as_params(today).items() if knobs is None or k in knobs},
                        skip_if_exists=True)
    out: list[Candidate] = []
    tried: dict[tuple, Candidate] = {}

    def objective(trial: Any) -> float:
        settings = suggest(trial, cfg, service, prices, knobs)
        cand = tried.get(key(settings))
        if cand is None:
            cand = evaluate(values, project, stack, service, settings, prices, executor, len(out))
            tried[key(settings)] = cand
            out.append(cand)
            if on_trial:
                on_trial(cand)
        else:
            trial.set_user_attr("same_as", cand.number)
        if not cand.passed:
            trial.set_user_attr("failed", cand.failed[:3])
            raise optuna.TrialPruned()
        return cand.cost_per_hour

    def enough(study: Any, _trial: Any) -> None:
        if len(out) >= trials:
            study.stop()

    study.optimize(objective, n_trials=trials * DRAWS_PER_TRIAL, catch=(), callbacks=[enough])
    return out


REJUDGE_MAX = 3  # passing candidates re-judged on fresh seeds, cheapest first, before none is proposed


def fresh_seed(gate_seed: int, attempt: int) -> int:
    """The base seed of re-judgement `attempt`: spawned apart from the gate's replication seeds (spawn_key (i,))."""
    return int(np.random.SeedSequence(gate_seed, spawn_key=(1, attempt)).generate_state(1)[0])


def confirm(values: dict, project: str, stack: str, service: str, candidates: list[Candidate],
            prices: dict[str, Price] | None = None, executor: Any = None, limit: int = REJUDGE_MAX,
            judge: Callable[..., Candidate] = evaluate) -> Candidate | None:
    """Re-judge the passing candidates on fresh seeds, cheapest first, until one passes again or `limit` were
    tried; each tried one gets `.fresh`. Returns the one to propose (None: none held up)."""
    prices = prices or PRICES
    seed = parse_stack_config(values, project, stack).gate.seed
    passing = sorted((c for c in candidates if c.passed), key=lambda c: (c.cost_per_hour, c.number))
    for attempt, cand in enumerate(passing[:limit]):
        cand.fresh = judge(values, project, stack, service, cand.settings, prices, executor, cand.number,
                           gate_seed=fresh_seed(seed, attempt))
        if cand.fresh.passed:
            return cand
    return None


def best(candidates: list[Candidate]) -> Candidate | None:
    """The cheapest passing on the gate's seeds (before re-judging: `confirm`)."""
    passing = [c for c in candidates if c.passed]
    return min(passing, key=lambda c: (c.cost_per_hour, c.number)) if passing else None


def pareto(candidates: list[Candidate], metric: str = "p99 latency (s)") -> list[Candidate]:
    """Passing candidates no other beats on both cost and the tuned service's steady `metric`."""
    pts = [(c.cost_per_hour, (c.metrics.get(metric) or {}).get("value") or 0.0, c) for c in candidates if c.passed]
    front = [c for cost, m, c in pts if not any((oc <= cost and om <= m) and (oc < cost or om < m)
                                                 for oc, om, _ in pts)]
    return sorted(front, key=lambda c: (c.cost_per_hour, c.number))
