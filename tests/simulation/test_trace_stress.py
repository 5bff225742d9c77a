"""A stress spike over a user's own trace: its columns mapping, `start_s` and `limit` hold there as in the replay
(simulation/stress.py `base_rate`, `with_spike`; simulation/budget.py), and a trace that replays nothing is
refused at load."""

from __future__ import annotations

import random

import pytest

from simulation.budget import expected_requests, spike_requests
from simulation.stress import Spike, base_rate, with_spike
from simulation.workload import arrivals
from tests.simulation.test_workload import spec

COLUMNS = {"timestamp": "when", "input_tokens": "prompt", "output_tokens": "completion"}


@pytest.fixture
def trace(tmp_path):
    """120 rows one second apart with the user's own column names: the first 20 (t < 20 s) have 999-token
    prompts, the rest 100 + i; every 4th row of the rest has a second row at the same time."""
    lines = ["when,prompt,completion"]
    for i in range(120):
        lines.append(f"{i},{999 if i < 20 else 100 + i},7")
        if i >= 20 and i % 4 == 0:
            lines.append(f"{i},{100 + i},7")
    path = tmp_path / "mine.csv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def workload(trace: str, **extra):
    w, problems = spec({"kind": "trace", "path": trace, "columns": COLUMNS, **extra})
    assert not problems
    return w


def test_base_rate_is_the_replayed_rows_rate(trace):
    # rows at t >= 20: 100 seconds (20 … 119) and 125 rows over a span of 99 s
    assert base_rate(workload(trace, start_s=20), 0.0) == pytest.approx(125 / 99)
    # limit: the first 10 replayed rows, t = 20 … 27 (8 seconds, two of them doubled), span 7 s
    assert base_rate(workload(trace, start_s=20, limit=10), 0.0) == pytest.approx(10 / 7)
    # rate_scale and time_scale as the replay applies them
    assert base_rate(workload(trace, start_s=20, rate_scale=2, time_scale=0.5), 0.0) == pytest.approx(4 * 125 / 99)


def test_spike_over_a_mapped_trace_draws_only_replayed_rows(trace):
    w = workload(trace, start_s=20)
    rng = random.Random(5)
    base = list(arrivals(w, random.Random(4), 100.0))
    spike = Spike(factor=3.0, at_s=10.0, duration_s=60.0)
    merged = list(with_spike(iter(base), w, spike, rng, 100.0))
    extra = len(merged) - len(base)
    assert extra == pytest.approx(2 * 125 / 99 * 60, rel=0.35)   # Poisson, mean ≈ 152
    assert all(t == sorted(t) for t in [[a[0] for a in merged]])
    assert 999 not in {n for _, n, _ in merged}                 # rows before start_s are not replayed
    assert {n for _, n, _ in merged} <= {100 + i for i in range(20, 120)}


def test_budget_counts_the_mapped_trace(trace):
    w = workload(trace, start_s=20, limit=10)
    assert expected_requests(w, 1000.0) == 10
    assert expected_requests(w, 5.0) == 7        # t = 20 … 24 replayed at 0 … 4: five rows, two doubled
    assert spike_requests(w, 2.0, 0.0, 7.0, 100.0) == pytest.approx(10 / 7 * 7)


@pytest.mark.parametrize("extra,key,fragment", [
    ({"start_s": 500}, "workload.start_s", "last timestamp (119 s"),
    ({}, "workload.path", "at least one request row"),
], ids=["start-past-the-end", "empty"])
def test_a_trace_that_replays_nothing_is_refused(tmp_path, trace, extra, key, fragment):
    path = trace
    if not extra:
        path = str(tmp_path / "empty.csv")
        (tmp_path / "empty.csv").write_text("when,prompt,completion\n")
    _, problems = spec({"kind": "trace", "path": path, "columns": COLUMNS, **extra})
    assert [p.path for p in problems] == [key]
    assert fragment in problems[0].allowed
