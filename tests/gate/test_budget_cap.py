"""gate.replications.max caps the doubling, not only stops it: from a min that no power of two takes to max
(3 → 6 → 12 with max 10) the last round is cut to max. The shipped stacks' budgets (2/8, 2/4, 5/20) are all
min·2^k, where a doubling without the cap lands on max anyway, so only such a budget shows the cap.

The scenario runs are replaced by a stub that records the seeds each round asks for (no simulation), and the
trial's one check is the rollout term with every run Ready: undecided and passable below 17 runs (every budget
here is below that), so the scenario stays open for as long as the budget lets it."""

from __future__ import annotations

import pytest

from gate import sequential
from gate.sequential import Trial, decide
from gate.verdict import Verdict, rollout_check
from simulation.replicate import replication_seeds
from stackconfig.types import GateConfig


class _Done:
    """A finished batch: one scenario, one report per seed."""

    def __init__(self, n: int) -> None:
        self.futures, self._result = [], [[{"rollout": {"ready_s": 100.0}}] * n]

    def done(self) -> bool:
        return True

    def result(self) -> list:
        return self._result


def _rounds(monkeypatch, lo: int, hi: int) -> tuple[list[int], list[list[int]], Verdict]:
    sent: list[list[int]] = []

    def submit(scenarios, seeds, executor=None, base_dir=None, cache=None):
        sent.append(list(seeds))
        return _Done(len(seeds))

    monkeypatch.setattr(sequential, "submit_replications", submit)
    targets: list[int] = []
    gate = GateConfig(enabled=True, enforce=True, duration_s=300.0, seed=7, min_replications=lo,
                      max_replications=hi, undecided="warn")
    trial = Trial("chat", {"duration_s": 300.0},
                  lambda reports: Verdict("chat", (rollout_check(reports, 600.0),), {}, len(reports),
                                          undecided_policy="warn"))
    [v] = decide([trial], gate, on_round=lambda n, _open: targets.append(n)).values()
    return targets, sent, v


@pytest.mark.parametrize("lo, hi, looks", [
    (3, 10, [3, 6, 10]),      # 3, 2·3 = 6, 2·6 = 12 > 10 → 10
    (5, 12, [5, 10, 12]),     # 5, 10, 20 > 12 → 12
    (3, 7, [3, 6, 7]),        # 3, 6, 12 > 7 → 7
    (2, 8, [2, 4, 8]),        # dev's budget: 2, 4, 8 (min·2^k reaches max)
    (4, 4, [4]),              # min = max: one round
])
def test_each_round_doubles_up_to_the_budget_and_no_further(monkeypatch, lo, hi, looks):
    targets, sent, v = _rounds(monkeypatch, lo, hi)
    assert targets == looks
    # each round asks only for the runs it adds, on the next seeds: replications 0 .. max − 1, once each
    assert [len(s) for s in sent] == [b - a for a, b in zip([0] + looks, looks)]
    assert [seed for s in sent for seed in s] == replication_seeds(7, hi)
    assert v.replications == hi and v.checks[0].status == "undecided"
    assert f"undecided after {hi} replications (gate.replications.max)" in v.warnings()[0]
