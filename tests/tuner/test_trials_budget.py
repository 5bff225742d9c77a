"""`preflight tune --trials N` held to the stack's gate.totalRequestBudget (review rev13-bounds finding 2): each
trial is a whole gate, so `--trials 10000` on prod (≈ 20 s a trial) was accepted for ≈ 55 hours. Refused with exit
2 before any trial runs, naming the most trials the budget allows; the default 30 fits every shipped stack."""

from __future__ import annotations

import pytest

from stackconfig.gate_runs import gate_work, work_requests
from stackconfig.load import ROOT, load_stack
from tests.gate.cli_refusal import exit_2, refuse_work
from tuner.cli import trials_problem
from tuner.search import REJUDGE_MAX


def test_ten_thousand_trials_on_prod_are_refused_before_any_trial(monkeypatch, capsys):
    refuse_work(monkeypatch, "sides")
    err = exit_2(["tune", "--stack", "prod", "--service", "chat", "--trials", "10000"], capsys)
    assert "--trials: got 10000; expected at most 239 for stack 'prod'" in err
    assert "(10000 + 3) × 823,740 ≈ 8,239,871,220 requests, over gate.totalRequestBudget 200,000,000" in err
    assert "gate.durationS or gate.warmupS in the stack" in err   # every knob that shortens a gate's runs


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_most_trials_the_budget_allows_is_accepted_and_one_more_refused(stack):
    cfg = load_stack(stack)
    _, requests, loops = gate_work(cfg.services, cfg.gate, str(ROOT), cfg.knative.autoscaler.enable_scale_to_zero)
    most = int(cfg.gate.total_request_budget // (cfg.gate.max_replications * work_requests(requests, loops))) \
        - REJUDGE_MAX
    assert trials_problem(cfg, 30) is None   # the default
    if most < 10000:
        assert trials_problem(cfg, most) is None
        assert trials_problem(cfg, most + 1).path == "--trials"
