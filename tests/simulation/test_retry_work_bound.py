"""Client retries are bounded at run time (review rev13-bounds finding 3): the request budget counts the
arrivals, and the client may retry as many times again; one retry more stops the run with an InputError naming
client.max_retries and max_requests. Before, a gateway answering 429 at once with max_retries 20 simulated 21×
the budgeted requests (4.2 M attempts for 199,180 budgeted requests)."""

from __future__ import annotations

import pytest

from simulation import load_scenario, run_simulation
from tests.small_scenario import simple_service
from validation.errors import InputError


def _storm(max_retries: int, max_requests: int) -> dict:
    """200 req/s for 10 s (≈ 2,000 requests) behind a gateway that lets 1 per second through: fast 429s."""
    sc = simple_service("storm", "storm", 1, 200.0, 0.05, 10.0)
    sc["client"] = {"max_retries": max_retries, "retry_on": [429], "backoff_base_s": 0.0, "jitter": "none"}
    sc["gateway"] = {"rate_limit": {"rate_per_s": 1.0, "burst": 1}}
    sc["max_requests"] = max_requests
    sc["drain_s"] = 10
    return sc


def test_retries_past_the_budget_stop_the_run_with_the_keys_named():
    with pytest.raises(InputError) as err:
        run_simulation(load_scenario(_storm(20, 5_000)), seed=1)   # ≈ 2,000 arrivals, up to 40,000 retries
    text = str(err.value)
    assert "client.max_retries: got 20" in text and "max_requests 5,000" in text
    assert "retried 5,000 failed attempts (status 429)" in text


def test_retries_within_the_budget_run_as_before():
    report = run_simulation(load_scenario(_storm(1, 5_000)), seed=1).to_dict()   # ≤ 2,000 retries
    assert report["attempts"]["count"] > report["requests"]


def test_the_cli_budget_flag_sets_the_retry_bound_too(tmp_path):
    import yaml

    from simulation.__main__ import main

    path = tmp_path / "storm.yaml"
    path.write_text(yaml.safe_dump(_storm(20, 10**9)))
    with pytest.raises(SystemExit) as exit_:
        main(["run", str(path), "--max-requests", "5000"])
    assert exit_.value.code == 2
