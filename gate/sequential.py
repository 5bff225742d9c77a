"""Sequential replication: run each scenario until every SLO check is decided or the budget is spent.

Round 1 runs `gate.replications.min` replications of every scenario; each later round doubles the count (up to
`gate.replications.max`) for the scenarios that still have an undecided check; a scenario's next round is sent
to the executor as soon as its own replications are judged. Replication i always uses seed
`simulation.replicate.replication_seed(gate.seed, i)`, so the same
config and seed give the same verdict on any machine and any executor.

Looking at the interval after each round and stopping when it decides is a sequential test; with doubling there
are at most log2(max/min) + 1 looks (3 with the defaults 5 and 20), and the budget keeps the gate's time bounded.
The looks follow Haybittle–Peto (Haybittle, *Br. J. Radiol.* 44, 1971; Peto et al., *Br. J. Cancer* 34, 1976):
at an interim look (fewer than `max` replications) a p99 or rate term decides only on its 99.73 % interval
(`gate.verdict.INTERIM_LEVEL`, 3 sigma), the last look on the 95 % one, so three looks give about the error of
one. Three 95 % looks passed a term exactly at its limit 6.5 % of the time (over-dispersed rates; 14 % for the
pooled p99 of short queueing runs, 12–17 % for the old skewed mean-of-p99s figures) where one look allows 2.5 %;
with the strict interim looks 2.0 % (the p99: 5.6 %, its last look's interval; README "How often the gate is
wrong"), for more replications on borderline terms (they rarely decide before `max`). The
cold-start and rollout terms keep their exact binomial rule at every look (0 of 17 runs to pass). A scenario
gets more replications only while one of its trials has a check more replications could decide
(`Verdict.open`: not a term no number of replications can pass — a p99 of under 100 values even in `max` runs, a rate
limit below what error-free runs can show; the rollout and cold-start terms need 17 clean runs, so a rollout
scenario whose runs all go clean takes `max` replications, 20 with the defaults).
"""

from __future__ import annotations

import json
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Sequence

from gate.verdict import Verdict
from simulation.replicate import replication_seeds, scenario_duration, submit_replications
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
    """Every trial's verdict; `on_round(replications, open trials)` is called as each scenario's round is sent
    (its replication total; scenarios move on alone); `cache` (simulation/result_cache.py) keeps replications on
    disk."""
    return Decision(trials, gate, executor, on_round, cache).result()


class _Scenario:
    """The trials that share one scenario (a fleet run judges each service in it) and their next round."""

    def __init__(self, trials: list[Trial], target: int) -> None:
        self.trials, self.target, self.handle = trials, target, None


class Decision:
    """`decide` in two halves: creating it sends round 1 to the executor without waiting (input errors are
    raised here); `result()` waits and runs any further rounds.

    Each scenario moves on alone: as soon as its replications are in, its trials are judged and the undecided
    ones' next round is sent, while other scenarios still run (no barrier between rounds). A trial sees the same
    seeds and the same looks (min, 2·min, … max) as with rounds in lockstep, so its verdict is the same.
    """

    def __init__(self, trials: Sequence[Trial], gate: GateConfig, executor: Any = None,
                 on_round: Callable[[int, int], None] | None = None, cache: Any = None) -> None:
        self.trials, self.gate, self.executor, self.on_round = list(trials), gate, executor, on_round
        self.cache = cache
        self.reports: dict[Hashable, list[dict]] = {t.key: [] for t in trials}
        self._verdicts: dict[Hashable, Verdict] = {}
        by_text: dict[str, list[Trial]] = {}
        for t in self.trials:
            by_text.setdefault(json.dumps(t.scenario, sort_keys=True), []).append(t)
        groups = [_Scenario(ts, gate.min_replications) for ts in by_text.values()]
        groups.sort(key=lambda g: -scenario_duration(g.trials[0].scenario))  # the pool takes the longest first
        self._open: list[_Scenario] = []
        for g in groups:
            self._submit(g)

    def _submit(self, g: _Scenario) -> None:
        have = len(self.reports[g.trials[0].key])
        self._open.append(g)
        if self.on_round:
            self.on_round(g.target, sum(len(o.trials) for o in self._open))
        seeds = replication_seeds(self.gate.seed, g.target - have, start=have)
        g.handle = submit_replications([g.trials[0].scenario], seeds, self.executor, base_dir=ROOT, cache=self.cache)

    def _next_done(self) -> _Scenario:
        """The first open scenario whose replications are all in (one answered from a cache is in at
        once), else the first in order when nothing runs elsewhere (serial work starts only when asked for)."""
        while True:
            for g in self._open:
                if g.handle.done():
                    return g
            running = [f for g in self._open for f in g.handle.futures if not f.done()]
            if not running:
                return self._open[0]
            wait(running, return_when=FIRST_COMPLETED)

    def result(self) -> dict[Hashable, Verdict]:
        verdicts = self._verdicts
        while self._open:
            g = self._next_done()
            self._open.remove(g)
            [new] = g.handle.result()
            for trial in g.trials:
                self.reports[trial.key].extend(new)
                verdicts[trial.key] = trial.judge(self.reports[trial.key])
            g.trials = [t for t in g.trials if verdicts[t.key].open]
            if g.trials and g.target < self.gate.max_replications:
                g.target = min(self.gate.max_replications, 2 * g.target)
                self._submit(g)
        return {t.key: verdicts[t.key] for t in self.trials}
