"""Limit cases against closed forms (reference queueing.md): M/M/c/K with K = 11·c, Erlang B, Little's law."""

from __future__ import annotations

import pytest

from simulation.analytic import erlang_b, mmck


def test_closed_forms_match_reference_values():
    q = mmck(0.9, 1.0, 1, 11)
    assert q.p_block == pytest.approx(0.04373, abs=1e-5)
    assert q.Wq == pytest.approx(3.969, abs=1e-3)
    assert erlang_b(10, 9.0) == pytest.approx(0.16796, abs=1e-5)
    assert mmck(9.0, 1.0, 10, 10).p_block == pytest.approx(erlang_b(10, 9.0))


def assert_in(value: float, ci: list[float], what: str) -> None:
    lo, hi = ci
    assert lo <= value <= hi, f"{what}: closed form {value:.5g} outside the simulation's 95 % CI [{lo:.5g}, {hi:.5g}]"


@pytest.mark.parametrize("c,lam,duration", [(1, 0.9, 40000.0), (4, 3.4, 15000.0)], ids=["M/M/1/11", "M/M/4/44"])
def test_queue_proxy_is_mmck(scn, c, lam, duration):
    d = scn.run(scn.mmck_scenario(lam, c, duration))
    q = mmck(lam, 1.0, c, 11 * c)
    p503 = d["error_rates"].get("503", {"rate": 0.0, "ci95": [0.0, 0.0]})
    assert_in(q.p_block, p503["ci95"], "503 fraction")
    assert set(d["errors_by_component"].get("503", {})) <= {"queue-proxy"}
    assert_in(q.Wq, d["queue_wait_s"]["ci95"], "mean queue wait")
    ll = d["littles_law"]
    assert_in(ll["lambda_W"], ll["L_ci95"], "Little's law")
    assert ll["rel_diff"] < 0.02 and ll["bookkeeping_rel_diff"] < 1e-6


@pytest.mark.parametrize("dist", ["exponential", "deterministic"])
def test_no_queue_is_erlang_b(scn, dist):
    # what_if.queue_depth_factor 0: CC = 10 slots and no queue → M/G/10/10, blocking insensitive to service law
    d = scn.run(scn.mmck_scenario(9.0, 10, 3000.0, depth_factor=0, dist=dist))
    assert_in(erlang_b(10, 9.0), d["error_rates"]["503"]["ci95"], "Erlang B blocking")
    assert d["queue_wait_s"]["mean"] == pytest.approx(0.0, abs=1e-12)


def test_littles_law_holds_with_autoscaling_and_retries(scn):
    m = scn.mmck_scenario(3.0, 1, 1500.0)
    m["inferenceService"]["spec"]["predictor"]["maxReplicas"] = 5
    m["client"] = {"max_retries": 2, "backoff_base_s": 0.2}
    d = scn.run(m)
    ll = d["littles_law"]
    assert d["attempts"]["retries"] > 0
    assert_in(ll["lambda_W"], ll["L_ci95"], "Little's law")


@pytest.mark.parametrize("name", ["llm-knative-cc1", "standard-hpa"])
def test_littles_law_on_example_scenarios(scn, name):
    import yaml
    data = yaml.safe_load((scn.root / "examples" / "scenarios" / f"{name}.yaml").read_text())
    data["duration_s"] = 900
    data["warmup_s"] = 0
    from simulation import load_scenario, run_simulation
    d = run_simulation(load_scenario(data, base_dir=scn.root / "examples" / "scenarios"), seed=2).to_dict()
    ll = d["littles_law"]
    assert d["incomplete"] == 0
    assert ll["bookkeeping_rel_diff"] < 1e-6, ll      # the window form holds exactly on every run
    assert ll["rel_diff"] < 0.15, ll                  # λW̄ ≈ L up to the edge effect W̄/T
                                                      # (overload: W̄ ≈ 120 s)


def test_server_parallelism_one_is_mm1_erlang_c(scn):
    # CC 0 (no breaker) and a server that serves one at a time with an unbounded queue: M/M/1, W = 1/(μ − λ)
    from simulation.analytic import erlang_c
    m = scn.mmck_scenario(0.6, 1, 20000.0)
    m["inferenceService"]["spec"]["predictor"]["containerConcurrency"] = 0
    m["server"]["parallelism"] = 1
    d = scn.run(m)
    w = erlang_c(1, 0.6) / (1.0 - 0.6) + 1.0
    assert_in(w, d["latency_s"]["mean_ci95"], "M/M/1 sojourn")
    assert "503" not in d["status_counts"]
