"""The tuner's winner is re-judged on fresh seeds before it is proposed (tuner/search.py confirm): the search
picks the cheapest pass on the gate's own seeds, the one those seeds flattered most."""

from __future__ import annotations

from types import SimpleNamespace

from rich.console import Console

from simulation.replicate import replication_seeds
from stackconfig.schema import parse_stack_config
from tuner.cli import print_summary, summary
from tuner.search import REJUDGE_MAX, Candidate, confirm, evaluate, fresh_seed

from tests.tuner.test_tune import _oversized_dev


def _candidates() -> list[Candidate]:
    costs = [4.0, 1.0, 2.0, 3.0, None, 1.5]
    return [Candidate(i, {"minReplicas": i}, passed=c is not None, cost_per_hour=c,
                      failed=[] if c else ["chat: p99 latency (s) 99 > SLO 60"]) for i, c in enumerate(costs)]


def _judge(fails: set[int], calls: list):
    def judge(values, project, stack, service, settings, prices, executor, number, gate_seed=None):
        calls.append((number, gate_seed))
        ok = number not in fails
        return Candidate(number, settings, passed=ok, cost_per_hour=1.0 if ok else None, gate_seed=gate_seed,
                         failed=[] if ok else ["chat: p99 latency (s) 61 > SLO 60"])
    return judge


def test_a_winner_that_fails_on_fresh_seeds_gives_way_to_the_next_cheapest():
    project, values = _oversized_dev()
    seed = parse_stack_config(values, project, "dev").gate.seed
    cands, calls = _candidates(), []
    win = confirm(values, project, "dev", "chat", cands, judge=_judge({1}, calls))
    assert win is cands[5]                                  # $1.5: the cheapest after trial 1 ($1) failed
    assert [n for n, _ in calls] == [1, 5]                  # cheapest first, stopping at the first that holds
    assert not cands[1].fresh.passed and cands[5].fresh.passed and cands[2].fresh is None
    # fresh seeds: none of the gate's replication seeds, and a new set for each re-judgement
    gate = set(replication_seeds(seed, 20))
    fresh = [set(replication_seeds(s, 20)) for _, s in calls]
    assert calls[0][1] == fresh_seed(seed, 0) != calls[1][1] == fresh_seed(seed, 1) != seed
    assert not (fresh[0] & gate) and not (fresh[1] & gate) and not (fresh[0] & fresh[1])


def test_re_judging_is_bounded_and_may_propose_nothing():
    project, values = _oversized_dev()
    cands, calls = _candidates(), []
    assert confirm(values, project, "dev", "chat", cands, judge=_judge(set(range(6)), calls)) is None
    assert len(calls) == REJUDGE_MAX and [n for n, _ in calls] == [1, 5, 2]


def test_a_candidate_judged_on_fresh_seeds_runs_other_replications():
    """The real judgement: the same settings on gate.seed and on fresh seeds give other estimates."""
    project, values = _oversized_dev()
    values["gate"]["scenarios"] = ["steady"]
    settings = {"minReplicas": 3}
    seed = parse_stack_config(values, project, "dev").gate.seed
    same = evaluate(values, project, "dev", "chat", settings, _prices())
    fresh = evaluate(values, project, "dev", "chat", settings, _prices(), gate_seed=fresh_seed(seed, 0))
    assert same.passed and fresh.passed and fresh.gate_seed == fresh_seed(seed, 0) and same.gate_seed is None
    assert same.metrics["p99 latency (s)"] != fresh.metrics["p99 latency (s)"]


def _prices():
    from catalog.prices import PRICES
    return PRICES


def test_the_output_reports_both_judgements():
    project, values = _oversized_dev()
    cands = _candidates()
    win = confirm(values, project, "dev", "chat", cands, judge=_judge({1}, []))
    args = SimpleNamespace(stack="dev", service="chat", seed=0)
    result = summary(args, project, cands, win)
    assert result["best"]["trial"] == 5 and result["search_best"]["trial"] == 1
    assert [r["trial"] for r in result["rejudged"]] == [1, 5]
    assert result["rejudged"][0]["fresh"]["passed"] is False and result["best"]["fresh"]["passed"] is True
    console = Console(width=200, record=True)
    print_summary(console, result)
    text = console.export_text()
    assert "re-judged trial 1 ($1.00/h on the gate's seeds) on fresh seeds" in text and "fails: chat: p99" in text
    assert "re-judged trial 5 ($1.50/h on the gate's seeds)" in text and "passes again" in text
    assert "winner (gate's seeds)" in text and "winner (fresh seeds)" in text
    none = summary(args, project, cands, None)
    console = Console(width=200, record=True)
    print_summary(console, none)
    assert "no configuration held up" in console.export_text()
