"""The PromQL the KEDA trigger runs, on scraped samples: `rate()` replays Prometheus' own test cases
(`promql/promqltest/testdata/functions.test`), instant selectors honour lookback and staleness."""

from __future__ import annotations

import pytest

from manifests.keda import in_flight_query
from simulation.autoscaler.promql import LOOKBACK_S, extrapolated_rate, instant, query_kind

MIN = 60.0


def load(step_min: float, *values: float) -> list[tuple[float, float]]:
    """promqltest `load <step>`: one sample per step from t = 0."""
    return [(i * step_min * MIN, float(v)) for i, v in enumerate(values)]


def series(start: float, step: float, n: int) -> list[float]:
    """promqltest `start+stepxn`: n + 1 values."""
    return [start + step * i for i in range(n + 1)]


def test_rate_per_second_over_the_window():
    # load 5m calculate_rate_window_total 0+80x10; rate(...[50m]) at 50m = 0.2666…
    assert extrapolated_rate(load(5, *series(0, 80, 10)), 50 * MIN, 50 * MIN) == pytest.approx(0.26666666666666666)


def test_rate_handles_a_counter_reset_in_the_middle():
    # 0+27x4 0+27x5 at 5 m steps; rate(...[50m]) at 50m = 0.08
    assert extrapolated_rate(load(5, *series(0, 27, 4), *series(0, 27, 5)), 50 * MIN, 50 * MIN) == \
        pytest.approx(0.08)


def test_rate_needs_two_samples_in_its_window():
    # 0+10x9 0 10; [5m] at 50m holds one sample: no result; [6m] holds two (0 after 90 is a reset): 0
    counter = load(5, *series(0, 10, 9), 0, 10)
    assert extrapolated_rate(counter, 50 * MIN, 5 * MIN) is None
    assert extrapolated_rate(counter, 50 * MIN, 6 * MIN) == 0


@pytest.mark.parametrize("start_min, at_10m", [(0, 0.5), (1, 0.55), (2, 0.6), (3, 0.6), (5, 0.6)])
def test_rate_extrapolates_no_further_back_than_the_counters_zero(start_min, at_10m):
    # load 4m testcounter_zero_cutoff_total{start="Nm"} (60·N)+240x10; rate([20m]) at 10m and at 50m
    counter = load(4, *series(60 * start_min, 240, 10))
    assert extrapolated_rate(counter, 10 * MIN, 20 * MIN) == pytest.approx(at_10m)
    assert extrapolated_rate(counter, 50 * MIN, 20 * MIN) == pytest.approx(0.6)


def test_rate_window_is_open_on_the_left():
    # Samples at 0 and 30 s, window (0, 60]: only one sample → nothing; (−0.001, 59.999] holds both.
    assert extrapolated_rate([(0.0, 0.0), (30.0, 30.0)], 60.0, 60.0) is None
    assert extrapolated_rate([(0.0, 10.0), (30.0, 40.0)], 59.999, 60.0) == pytest.approx(1.0)


def test_instant_returns_the_latest_sample_within_the_lookback_unless_stale():
    samples = [(10.0, 3.0), (40.0, 5.0)]
    assert instant(samples, None, 39.0) == 3.0           # the sample at 40 s is not there yet
    assert instant(samples, None, 40.0 + LOOKBACK_S - 1) == 5.0
    assert instant(samples, None, 40.0 + LOOKBACK_S) is None     # (t − 5m, t] no longer holds it
    assert instant(samples, 70.0, 69.9) == 5.0 and instant(samples, 70.0, 70.0) is None
    assert instant([], None, 100.0) is None


def test_query_kind_of_the_rendered_queries():
    from dataclasses import replace

    from stackconfig.load import load_stack
    [vision] = [s for s in load_stack("staging").services if s.name == "vision"]
    assert query_kind(in_flight_query(vision)) == ("rate", 60.0)                       # Triton, 30 s scrapes
    assert query_kind(in_flight_query(replace(vision, prometheus_scrape_interval_s=60.0))) == ("rate", 120.0)
    for engine in ("vllm", "tgi"):
        assert query_kind(in_flight_query(replace(vision, engine=engine))) == ("gauge", 0.0)


SEL = '{namespace="ml",pod=~"chat-predictor-.*"}'


@pytest.mark.parametrize("query, kind", [
    (f"sum(vllm:num_requests_running{SEL}) + sum(vllm:num_requests_waiting{SEL})", ("gauge", 0.0)),
    ("sum( vllm:num_requests_waiting ) + sum(vllm:num_requests_running{pod!~'x', a = \"b\" ,})".replace("'x'", '"x"'),
     ("gauge", 0.0)),                                          # order, spacing and selectors may vary
    ("sum(tgi_batch_current_size{a=\"b\"}) + sum(tgi_queue_size)", ("gauge", 0.0)),
    (f"sum(rate(nv_inference_request_duration_us{SEL}[90s])) / 1e6", ("rate", 90.0)),
    ("sum(rate(nv_inference_request_duration_us[5m]))/1000000", ("rate", 300.0)),
])
def test_query_kind_accepts_the_rendered_forms_with_other_selectors_and_windows(query, kind):
    assert query_kind(query) == kind


@pytest.mark.parametrize("query, message", [
    ("avg(vllm:num_requests_running)", "expected one of the in-flight queries"),          # shape-alike gauges
    ("vector(5)", "expected one of the in-flight queries"),
    ("count(up)", "expected one of the in-flight queries"),
    ("sum(vllm:num_requests_running)", "expected one of the in-flight queries"),          # the queue left out
    ("sum(vllm:num_requests_running) + sum(tgi_queue_size)", "expected one of the in-flight queries"),
    ("sum(vllm:num_requests_running{a=\"b\" c=\"d\"}) + sum(vllm:num_requests_waiting)",
     "expected one of the in-flight queries"),                                         # a bad selector
    ("sum(rate(nv_inference_request_success[1m]))", "expected one of the in-flight queries"),  # a request rate
    ("sum(rate(nv_inference_request_duration_us[1m]))", "expected one of the in-flight queries"),  # µs, not s
    ("sum(rate(nv_inference_request_duration_us[5m:30s])) / 1e6", "expected one of the in-flight queries"),
    ("sum(irate(nv_inference_request_duration_us[1m])) / 1e6", "expected one of the in-flight queries"),
    ("sum(rate(nv_inference_request_duration_us[0s])) / 1e6", "expected a rate window like '1m', not '0s'"),
    ("sum(rate(nv_inference_request_duration_us[5d])) / 1e6", "expected a rate window like '1m', not '5d'"),
])
def test_query_kind_names_what_it_cannot_simulate(query, message):
    kind = query_kind(query)
    assert isinstance(kind, str) and message in kind
