"""Sequential replication: run each scenario until every SLO check is decided or the budget is spent.

Round 1 runs `gate.replications.min` replications of every scenario; each later round doubles the count (up to
`gate.replications.max`) for the scenarios that still have an undecided check, all of them in one batch on the
executor. Replication i always uses seed `simulation.replicate.replication_seed(gate.seed, i)`, so the same
config and seed give the same verdict on any machine and any executor.

Looking at the interval after each round and stopping when it decides is a sequential test; with doubling there
are at most log2(max/min) + 1 looks (3 with the defaults 5 and 20), which keeps the extra chance of a wrong
decision small; the budget keeps the gate's time bounded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Sequence

from gate.verdict import Verdict
from simulation.replicate import replication_seeds, run_replications
from stackconfig.load import ROOT
from stackconfig.schema import GateConfig


@dataclass(frozen=True)
class Trial:
    """A scenario to decide: `judge(reports)` turns its replications' reports into a verdict."""

    key: Hashable
    scenario: Mapping
    judge: Callable[[Sequence[dict]], Verdict]
    report: Callable[[dict], dict] = lambda run: run   # a run's report of this trial's service (fleets hold many)


def decide(trials: Sequence[Trial], gate: GateConfig, executor: Any = None,
           on_round: Callable[[int, int], None] | None = None) -> dict[Hashable, Verdict]:
    """Every trial's verdict; `on_round(replications, open trials)` is called before each round."""
    reports: dict[Hashable, list[dict]] = {t.key: [] for t in trials}
    verdicts: dict[Hashable, Verdict] = {}
    pending = list(trials)
    target = gate.min_replications
    while pending:
        have = len(reports[pending[0].key])
        if on_round:
            on_round(target, len(pending))
        seeds = replication_seeds(gate.seed, target - have, start=have)
        runs = run_replications([t.scenario for t in pending], seeds, executor, base_dir=ROOT)
        for trial, new in zip(pending, runs):
            reports[trial.key].extend(new)
            verdicts[trial.key] = trial.judge(reports[trial.key])
        if target >= gate.max_replications:
            break
        pending = [t for t in pending if verdicts[t.key].undecided]
        target = min(gate.max_replications, 2 * target)
    return {t.key: verdicts[t.key] for t in trials}
