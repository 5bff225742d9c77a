"""`preflight whatif`: the SLO rows matched by term name (an edit may add or remove a term), and each side on
its own gate.seed (independent runs, unpaired differences, when the seeds differ)."""

from __future__ import annotations

import copy
import json

from rich.console import Console

from preflight import check as cli
from preflight.whatif import compare
from preflight.whatif_tables import NOT_A_TERM, slo_rows, tables
from simulation.estimates import independent_difference, paired_difference, rate_difference
from simulation.executor_protocol import SerialExecutor
from simulation.replicate import replication_seeds, run_replications
from simulation.report_terms import METRICS, difference, estimates, per_replication
from stackconfig.load import ROOT, project_values, stack_config_values
from stackconfig.schema import parse_stack_config
import gate

P99 = "p99 latency (s)"


def _dev(edit=None, **gate_keys):
    project, values = stack_config_values("dev")
    values = copy.deepcopy(project_values(values, project))
    values["gate"] = {**(values.get("gate") or {}), "durationS": 300, "scenarios": ["steady"], **gate_keys}
    if edit:
        edit(values["services"][0])
    return parse_stack_config(values, project, "dev", "test")


def _more_terms(svc):
    svc["slo"].update(p99TtftS=0.5, maxColdStartS=60)   # two terms dev's SLO does not have
    svc.update(containerConcurrency=2, scaleTarget=2)    # and a scenario change, so the table is drawn


def _text(result) -> str:
    console = Console(record=True, width=400)
    for table in tables(result):
        console.print(table)
    return console.export_text()


def _row(text: str, start: str) -> str:
    [line] = [ln for ln in text.splitlines() if ln.lstrip("│ ").startswith(start)]
    return line


def test_a_term_the_edit_adds_gets_its_own_row_not_another_terms_label():
    result = compare(_dev(), _dev(_more_terms), 5, SerialExecutor())
    [c] = result.comparisons
    names_b, names_a = [x.name for x in c.before.checks], [x.name for x in c.after.checks]
    added = [n for n in names_a if n not in names_b]
    assert len(added) == 2 and len(names_a) == len(names_b) + 2
    rows = slo_rows(c.before, c.after)
    assert [n for n, _, _ in rows] == names_b + added
    assert all(cb is None for n, cb, _ in rows if n in added) and all(ca is not None for _, _, ca in rows)
    text = _text(result)
    by_name = {x.name: x for x in c.after.checks}
    for name in names_a:   # every after term is in the table, with its own limit and status
        row = _row(text, f"SLO {name} ≤ {by_name[name].limit:g}")
        assert by_name[name].status in row
        if name in added:
            assert "— not a term here" in row
    assert not any("— not a term here" in ln for ln in text.splitlines()
                   if any(f"SLO {n} " in ln for n in names_b))


def test_a_term_the_edit_removes_shows_on_the_before_side_only():
    result = compare(_dev(_more_terms), _dev(), 5, SerialExecutor())
    [c] = result.comparisons
    gone = [x for x in c.before.checks if x.name not in {y.name for y in c.after.checks}]
    assert len(gone) == 2
    text = _text(result)
    for check in gone:
        row = _row(text, f"SLO {check.name} ≤ {check.limit:g}")
        assert check.status in row and row.count("— not a term here") == 1
    assert NOT_A_TERM.endswith("not a term here[/]")


def test_another_gate_seed_compares_each_side_on_its_own_runs_unpaired():
    before, after = _dev(seed=1), _dev(seed=2)
    result = compare(before, after, 5, SerialExecutor())
    [c] = result.comparisons
    assert not result.common_random_numbers and not c.common_random_numbers and not c.unchanged
    n = c.replications
    assert result.seeds == replication_seeds(1, n) and result.seeds_after == replication_seeds(2, n)
    trial = gate.trials(after)[0]
    own = [trial.report(r) for r in run_replications([trial.scenario], replication_seeds(2, n), base_dir=ROOT)[0]]
    assert json.dumps(c.reports[1], sort_keys=True) == json.dumps(own, sort_keys=True)
    # the after column and the after verdict rest on the same runs
    assert estimates(c.reports[1][:c.after.replications], METRICS)[P99] == c.after.metrics[P99]
    assert estimates(c.reports[0][:c.before.replications], METRICS)[P99] == c.before.metrics[P99]
    assert c.difference[P99] == difference(P99, c.reports[0], c.reports[1], paired=False)
    assert c.difference["p50 latency (s)"] == independent_difference(
        per_replication("p50 latency (s)", c.reports[0]), per_replication("p50 latency (s)", c.reports[1]))
    counts = [[METRICS["error rate"][1](r) for r in side] for side in c.reports]
    assert c.difference["error rate"] == rate_difference(*counts, paired=False)
    text = _text(result)
    assert "on independent runs (gate.seed 1 before, 2 after: no common random numbers)" in text
    assert "after − before (independent)" in text and "(paired)" not in text


def test_the_same_seed_still_pairs_and_an_untouched_scenario_is_unchanged():
    result = compare(_dev(), _dev(lambda s: s.update(containerConcurrency=2, scaleTarget=2)), 5, SerialExecutor())
    [c] = result.comparisons
    assert result.common_random_numbers and c.common_random_numbers and result.seeds == result.seeds_after
    assert c.difference[P99] == difference(P99, c.reports[0], c.reports[1], paired=True)
    assert c.difference["p50 latency (s)"] == paired_difference(per_replication("p50 latency (s)", c.reports[0]),
                                                                per_replication("p50 latency (s)", c.reports[1]))
    counts = [[METRICS["503 rate"][1](r) for r in side] for side in c.reports]
    assert c.difference["503 rate"] == rate_difference(*counts, paired=True)
    same = compare(_dev(), _dev(), 5, SerialExecutor())
    assert same.comparisons[0].unchanged
    assert not compare(_dev(seed=1), _dev(seed=2), 5, SerialExecutor()).comparisons[0].unchanged


def test_the_cli_json_says_when_the_sides_are_not_paired(capsys):
    assert cli.main(["whatif", "--stack", "dev", "--replications", "2", "--json", "--set", "gate.seed=2",
                     "--set", "gate.durationS=300", "--set", "gate.scenarios=[steady]"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    assert out["common_random_numbers"] is False and out["seeds_after"] != out["seeds"]
    assert out["seeds_after"] == replication_seeds(2, len(out["seeds_after"]))


def test_a_p99_difference_is_that_of_the_two_columns_pooled_p99s():
    """Each side's p99 column is the p99 of its runs' values pooled (simulation.estimates.pooled_quantile), so its
    difference is after − before of those figures (`pooled_quantile_difference`), not the mean of the runs' own
    p99 differences, which answered another question and could sit outside the columns' gap."""
    for after in (_dev(lambda s: s.update(containerConcurrency=2, scaleTarget=2)), _dev(seed=2)):
        [c] = compare(_dev(), after, 5, SerialExecutor()).comparisons
        for name in (P99, "p99 time to first token (s)", "p99 latency, all requests (s)"):
            d, (b, a) = c.difference[name], (m[name] for m in c.metrics)
            if b.value is None or a.value is None:
                continue
            assert abs(d.value - (a.value - b.value)) <= 1e-9 * max(1.0, abs(a.value)), (name, d, b, a)
            assert d.lo < d.value < d.hi
    same = compare(_dev(), _dev(), 5, SerialExecutor()).comparisons[0]
    assert same.difference[P99].value == 0.0 and same.difference[P99].lo == same.difference[P99].hi == 0.0
