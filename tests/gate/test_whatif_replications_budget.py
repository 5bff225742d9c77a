"""`whatif --replications` (up to 1,000 per side) held to the stack's gate.totalRequestBudget, as
gate.replications.max is at load (review rev-diff finding 9): refused with exit 2, before anything is simulated,
naming the most replications the budget allows."""

from __future__ import annotations

import pytest

from preflight import whatif, whatif_cli
from validation.errors import InputError
from tests.gate.cli_refusal import exit_2


@pytest.fixture
def no_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("whatif simulated before checking --replications against the budget")
    monkeypatch.setattr(whatif, "compare", refuse)


def test_replications_over_the_after_sides_budget_are_refused(no_simulation, capsys):
    """staging: 76,440 requests per round of scenarios and 3,120 simulated seconds of its 2 services' loops and 3
    Ready pods (0.033 CPU s ≈ 1,654 requests: stackconfig/gate_runs.py loop_cpu_s); 1,000 rounds ≈ 78 M, over a
    50 M budget set on the after side only (the before side keeps the default 200 M)."""
    err = exit_2(["whatif", "--stack", "staging", "--replications", "1000", "--set",
                  "gate.totalRequestBudget=50000000"], capsys)
    assert "--replications: got 1000; expected at most 640 for the after side of stack 'staging'" in err
    assert "1000 × (steady (900 s) " in err and "≈ 76,440,000 requests, plus the time-driven work" in err
    assert ("1000 × 3120 s (the steady run, its warm-up included, and the stress runs) × (2 × 5 µs + 3 × 0.2 µs) "
            "≈ 33 CPU-seconds") in err
    assert "over gate.totalRequestBudget 50,000,000" in err
    assert "the before side" not in err


def test_both_sides_over_the_default_budget_are_named(no_simulation, capsys):
    err = exit_2(["whatif", "--stack", "staging", "--replications", "1000", "--rate-scale", "3"], capsys)
    assert "expected at most 865 for the before side of stack 'staging'" in err
    assert "for the after side of stack 'staging'" in err
    assert "gate.totalRequestBudget 200,000,000 requests" in err


def test_the_most_the_budget_allows_is_accepted():
    before, after = whatif.sides("staging", ["gate.totalRequestBudget=50000000"], None, None, None, None)
    whatif_cli._check_replications(640, before, after)   # 640 × (76,440 + 1,654) ≈ 49.98 M
    with pytest.raises(InputError, match="--replications: got 641; expected at most 640"):
        whatif_cli._check_replications(641, before, after)
    whatif_cli._check_replications(1000, before, before)   # 76 M: within the default 200 M
