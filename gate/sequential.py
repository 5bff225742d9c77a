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
from simulation.replicate import replication_seeds, submit_replications
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
           on_round: Callable[[int, int], None] | None = None, cache: Any = None) -> dict[Hashable, Verdict]:
    """Every trial's verdict; `on_round(replications, open trials)` is called before each round; `cache`
    (simulation/result_cache.py) keeps replications on disk."""
    return Decision(trials, gate, executor, on_round, cache).result()


class Decision:
    """`decide` in two halves: creating it sends round 1 to the executor without waiting (input errors are
    raised here); `result()` waits for it and runs any further rounds."""

    def __init__(self, trials: Sequence[Trial], gate: GateConfig, executor: Any = None,
                 on_round: Callable[[int, int], None] | None = None, cache: Any = None) -> None:
        self.trials, self.gate, self.executor, self.on_round = list(trials), gate, executor, on_round
        self.cache = cache
        self.reports: dict[Hashable, list[dict]] = {t.key: [] for t in trials}
        self._pending = self.trials
        self._target = gate.min_replications
        self._round = self._submit() if self._pending else None
        self._verdicts: dict[Hashable, Verdict] = {}

    def _submit(self) -> Any:
        have = len(self.reports[self._pending[0].key])
        if self.on_round:
            self.on_round(self._target, len(self._pending))
        seeds = replication_seeds(self.gate.seed, self._target - have, start=have)
        return submit_replications([t.scenario for t in self._pending], seeds, self.executor, base_dir=ROOT,
                                   cache=self.cache)

    def result(self) -> dict[Hashable, Verdict]:
        verdicts = self._verdicts
        while self._round is not None:
            for trial, new in zip(self._pending, self._round.result()):
                self.reports[trial.key].extend(new)
                verdicts[trial.key] = trial.judge(self.reports[trial.key])
            self._round = None
            if self._target >= self.gate.max_replications:
                break
            self._pending = [t for t in self._pending if verdicts[t.key].undecided]
            self._target = min(self.gate.max_replications, 2 * self._target)
            if self._pending:
                self._round = self._submit()
        return {t.key: verdicts[t.key] for t in self.trials}
