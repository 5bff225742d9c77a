"""Random priors (simulation/dists.py): quantiles, clipped means, units, the one grammar and its load errors, and
the simulation drawing a throughput afresh for each pull, download and load."""

from __future__ import annotations

import math
import random
from statistics import NormalDist

import pytest

from simulation.dists import RATE_KINDS, Dist, parse_dist
from validation.fields import Section

from tests.simulation.test_cold_start import one_request


def _draws(d: Dist, n: int = 40_000) -> list[float]:
    rng = random.Random(7)
    return sorted(d.sample(rng) for _ in range(n))


@pytest.mark.parametrize("d", [Dist("uniform", 60, 180), Dist("lognormal", 2.0, 0.4), Dist("exponential", 30),
                               Dist("lognormal", 2.0, 0.4, cap=1.5), Dist("uniform", 60, 180, cap=150),
                               Dist("exponential", 30, cap=40)], ids=str)
def test_quantile_and_mean_match_the_draws(d):
    xs = _draws(d)
    for q in (0.05, 0.5, 0.95):
        assert xs[int(q * len(xs))] == pytest.approx(d.quantile(q), rel=0.03)
    assert sum(xs) / len(xs) == pytest.approx(d.mean, rel=0.02)
    assert not d.deterministic


def test_lognormal_quantile_is_the_closed_form():
    assert Dist("lognormal", 2.0, 0.4).quantile(0.05) == pytest.approx(2.0 * math.exp(0.4 * NormalDist().inv_cdf(0.05)))


@pytest.mark.parametrize("d", [Dist("fixed", 5), Dist("uniform", 5, 5), Dist("lognormal", 5, 0),
                               Dist("uniform", 60, 180, cap=50)], ids=str)
def test_no_spread_is_deterministic(d):
    assert d.deterministic and len(set(_draws(d, 100))) == 1


def test_a_fixed_value_draws_no_random_numbers():
    rng = random.Random(3)
    Dist("fixed", 5).sample(rng)
    assert rng.random() == random.Random(3).random()


def test_scaled_keeps_the_shape_in_other_units():
    mbps = Dist("lognormal", 80, 0.3, cap=120)
    mib = mbps.scaled(1e6 / 2**20)
    assert mib.b == 0.3 and mib.quantile(0.05) == pytest.approx(mbps.quantile(0.05) * 1e6 / 2**20)
    assert Dist("uniform", 20, 100).scaled(2).spec() == {"dist": "uniform", "low": 40, "high": 200}


@pytest.mark.parametrize("d", [Dist("fixed", 4), Dist("uniform", 1, 3), Dist("lognormal", 2, 0.5, cap=9),
                               Dist("exponential", 7)], ids=str)
def test_spec_reads_back_as_the_same_distribution(d):
    problems = []
    assert parse_dist(Section({"k": d.spec()}, "", problems), "k", Dist()) == d and problems == []
    assert Dist("fixed", 4).spec() == 4  # a fixed value stays a number in what the gate writes


def _problems(value, **kw) -> list[str]:
    problems = []
    s = Section({"imagePullMBps": value}, "coldStart", problems)
    parse_dist(s, "imagePullMBps", Dist("fixed", 60), **kw)
    s.done()
    return [str(p) for p in problems]


RATE = dict(minimum=1, unit="MB/s", kinds=RATE_KINDS)


@pytest.mark.parametrize("value, fragment", [
    ("fast", "coldStart.imagePullMBps: got 'fast'; expected a number >= 1 (MB/s), or a distribution "
             "{dist: fixed|uniform|lognormal, ...}"),
    (True, "expected a number >= 1 (MB/s)"),
    (0.5, "got 0.5; expected a number >= 1 (MB/s)"),
    (float("nan"), "expected a number >= 1"),
    ({"dist": "exponential", "mean": 60}, "coldStart.imagePullMBps.dist: got 'exponential'; expected one of "
                                          "'fixed', 'uniform', 'lognormal'"),
    ({"dist": "uniform", "low": 100, "high": 20}, "coldStart.imagePullMBps.high: got 20; expected >= low (100)"),
    ({"dist": "uniform", "low": 0, "high": 20}, "coldStart.imagePullMBps.low: got 0; expected a number >= 1"),
    ({"dist": "lognormal", "median": 60}, "coldStart.imagePullMBps.sigma: got None; this key is required"),
    ({"dist": "lognormal", "median": 60, "sigma": 9}, "coldStart.imagePullMBps.sigma: got 9; expected a number "
                                                      "between 0 and 5"),
    ({"dist": "uniform", "low": 40, "high": 90, "max": 30}, "coldStart.imagePullMBps.max: got 30; expected a "
                                                            "number >= 40"),
    ({"dist": "uniform", "low": 40, "hihg": 90}, "coldStart.imagePullMBps.hihg"),
    ({"median": 60, "sigma": 0.3}, "coldStart.imagePullMBps.dist: got None; this key is required"),
], ids=lambda v: str(v)[:40])
def test_a_bad_prior_names_key_value_and_what_is_allowed(value, fragment):
    problems = _problems(value, **RATE)
    assert any(fragment in p for p in problems), problems


@pytest.mark.parametrize("value", [60, 1, {"dist": "fixed", "value": 60}, {"dist": "uniform", "low": 20, "high": 100},
                                   {"dist": "lognormal", "median": 60, "sigma": 0.3, "max": 120}])
def test_good_priors_load_without_a_problem(value):
    assert _problems(value, **RATE) == []


def test_a_maximum_bounds_every_value():
    problems = []
    sec = Section({"a": 1e308, "b": {"dist": "lognormal", "median": 1e300, "sigma": 5}, "c": {"dist": "uniform",
                   "low": 1, "high": 90000}, "d": {"dist": "exponential", "mean": 10, "max": 1e9}, "e": 86400},
                  "", problems)
    for key in "abcde":
        parse_dist(sec, key, Dist(), maximum=86400)
    assert [p.path for p in problems] == ["a", "b.median", "c.high", "d.max"], problems
    assert "expected a number between 0 and 86400 (seconds)" in problems[0].allowed


def test_a_duration_may_be_zero_a_throughput_may_not():
    problems = []
    sec = Section({"a": 0, "b": 0, "c": {"dist": "uniform", "low": 0, "high": 2}}, "", problems)
    assert parse_dist(sec, "a", Dist()) == Dist("fixed", 0.0) and problems == []
    parse_dist(sec, "b", Dist(), positive=True, unit="MiB/s")
    parse_dist(sec, "c", Dist(), positive=True, unit="MiB/s")
    assert [p.path for p in problems] == ["b", "c.low"] and "expected a number > 0 (MiB/s)" in problems[0].allowed


def test_scenario_rates_take_a_distribution_and_each_cold_start_draws_its_own(tmp_path, scn):
    """A throughput given as a distribution is drawn per node's pull, per download, per container start: two
    cold starts on two new nodes differ; a fixed one still gives the closed-form phases (test_cold_start.py)."""
    spread = {"image_pull_mib_s": {"dist": "uniform", "low": 50, "high": 150},
              "model_download_mib_s": {"dist": "lognormal", "median": 500, "sigma": 0.5},
              "load_gib_s": {"dist": "uniform", "low": 1, "high": 3}}
    phases = []
    for seed in (1, 2, 3):
        m = one_request(tmp_path, scn, {"autoscaling.knative.dev/target-utilization-percentage": "100"},
                        cluster=spread)
        phases.append(scn.run(m, seed=seed)["cold_start_phases_mean_s"])
    for key, lo, hi in (("image_pull_s", 10 * 1024 / 150, 10 * 1024 / 50), ("load_s", 16 / 3, 16 / 1)):
        values = [p[key] for p in phases]
        assert len(set(values)) == 3 and all(lo <= v <= hi for v in values), (key, values)
    assert len({p["download_s"] for p in phases}) == 3


def test_a_scenario_rate_distribution_is_checked_at_load(tmp_path, scn):
    from simulation import load_scenario
    from validation.errors import InputError

    m = one_request(tmp_path, scn, cluster={"load_gib_s": {"dist": "exponential", "mean": 2}})
    with pytest.raises(InputError) as err:
        load_scenario(m)
    assert ("cluster.load_gib_s.dist: got 'exponential'; expected one of 'fixed', 'uniform', 'lognormal'"
            in str(err.value))
