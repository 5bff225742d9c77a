"""A zero-width interval over several replications means every run gave the same figure (nothing random reached
it), not a measured certainty: the output says so instead of printing [x, x]."""

from __future__ import annotations

from rich.console import Console

from gate.verdict import Check, Verdict, format_estimate
from preflight.check import slo_table
from simulation.estimates import Estimate

SAME = Estimate(344.218, 344.218, 344.218, 5)
SPREAD = Estimate(389.2, 355.0, 423.0, 5)


def test_an_estimate_every_run_agreed_on_is_shown_without_an_interval():
    assert format_estimate(SAME) == "344.2 (same in all 5 runs, no interval)"
    assert format_estimate(SPREAD) == "389.2 [355, 423]"                       # control: a measured interval
    assert format_estimate(Estimate(0.0, 0.0, 0.0, 1)) == "0 [0, 0]"          # one run: nothing to compare
    assert "344.218, 344.218" not in Check("new revision Ready (s)", SAME, 600).describe("chat")
    assert "(95% CI 355–423, 5 replications)" in Check("new revision Ready (s)", SPREAD, 600).describe("chat")


def test_the_slo_table_says_identical_runs_instead_of_a_zero_width_interval():
    v = Verdict("chat", (Check("new revision Ready (s)", SAME, 600), Check("p99 latency (s)", SPREAD, 600)),
                {"duration_s": 720}, 5, "rollout")
    console = Console(width=200, record=True)
    console.print(slo_table("prod", [v]))
    text = console.export_text()
    assert "none: identical runs" in text and "344–344" not in text
    assert "355–423" in text
