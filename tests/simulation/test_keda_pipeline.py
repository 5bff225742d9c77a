"""The HPA of a KEDA ScaledObject sees the runtime's gauge as Prometheus last scraped it: a step in load is seen
no earlier than the next scrape after it, then acted on at the next sync. Limit cases against the direct
(no-delay) reading, the External-metric arithmetic, and the ScaledObject reader's refusals."""

from __future__ import annotations

import math

import pytest
import simpy

from simulation.autoscaler.hpa import HpaCalculator, HpaSpec
from simulation.autoscaler.keda import PrometheusMetric
from simulation.autoscaler.hpa_loop import HpaLoop
from simulation.clock import call_later
from simulation.pod import READY

SYNC = 15.0


class FakePod:
    """A Ready pod holding `n` requests from `step_t` on (its load as the HPA and Prometheus read it)."""

    def __init__(self, sim, pid, step_t, n):
        self.id, self.name, self.state = pid, f"s-predictor-{pid:05d}", READY
        self.env, self.n, self.area_n, self.last = sim.env, 0, 0.0, 0.0
        self.mark = 0.0
        call_later(sim.env, step_t, self.set_n, n)

    def set_n(self, n):
        self._acc()
        self.n = n

    def _acc(self):
        now = self.env.now
        self.area_n += self.n * (now - self.last)
        self.last = now

    def scrape(self, period):   # the direct reading: mean requests over the last sync period
        self._acc()
        mean = (self.area_n - self.mark) / period
        self.mark = self.area_n
        return (mean, 1.0 if mean else 0.0, mean, 0)


def run_step(step_t: float, n: int, keda: PrometheusMetric | None, seed: int = 0, until: float = 400.0):
    """One Ready pod, load 0 → n at step_t, target 1 per pod; the times (and sizes) of the HPA's scale-ups."""
    sim = type("FakeSim", (), {})()
    sim.env, sim.seed, sim.replicas = simpy.Environment(), seed, 1
    pod = FakePod(sim, 0, step_t, n)
    sim.pods = sim.endpoints = [pod]
    sim.n_live = 1
    moves: list[tuple[float, int]] = []

    def set_replicas(k):
        if k != sim.replicas:
            moves.append((sim.env.now, k))
        sim.replicas = sim.n_live = k
    sim.set_replicas = set_replicas
    loop = HpaLoop(sim, HpaSpec(min_replicas=1, max_replicas=20, metric="concurrency", target=1.0, keda=keda))
    sim.env.run(until=until)
    return moves, loop, pod


def first_scrape_after(offset: float, interval: float, t: float) -> float:
    return offset + math.ceil((t - offset) / interval) * interval


@pytest.mark.parametrize("seed", range(8))
def test_a_step_is_acted_on_at_the_first_sync_after_the_first_scrape_after_it(seed):
    step = 100.0
    moves, loop, pod = run_step(step, 10, PrometheusMetric(scrape_interval_s=30.0), seed)
    seen = first_scrape_after(loop.prometheus.offset(pod), 30.0, step)
    assert moves[0][0] == pytest.approx(math.ceil(seen / SYNC) * SYNC)
    direct, _, _ = run_step(step, 10, None)
    assert direct[0][0] == 105.0 and moves[0][0] >= direct[0][0]   # the no-delay model: the next sync


def test_the_delay_is_visible_on_average():
    # Offsets uniform in [0, 30): the step at 100 s is seen at 100 + U(0, 30), acted on at the next 15 s sync;
    # the direct reading acts at 105 s. Over 40 seeds the mean delay is well past the direct model's.
    delays = [run_step(100.0, 10, PrometheusMetric(scrape_interval_s=30.0), seed)[0][0][0] - 105.0
              for seed in range(40)]
    assert min(delays) >= 0 and sum(delays) / len(delays) > 7.5
    assert any(d >= 15.0 for d in delays)


def test_tiny_scrape_interval_gives_the_direct_models_decisions():
    # A step just after a sync, constant load after it: the point sample equals the period's mean at every
    # later sync, so the External-metric path with 0.1 s scrapes scales exactly as the direct reading does.
    keda, _, _ = run_step(90.05, 10, PrometheusMetric(scrape_interval_s=0.1), until=200.0)
    direct, _, _ = run_step(90.05, 10, None, until=200.0)
    assert keda == direct == [(105.0, 5), (120.0, 10)]


def test_a_point_sample_misses_what_happened_between_scrapes():
    # A burst that comes and goes between two scrapes never reaches the HPA; the direct reading sees its mean.
    sim_moves = []
    for keda in (PrometheusMetric(scrape_interval_s=30.0), None):
        sim = type("FakeSim", (), {})()
        sim.env, sim.seed, sim.replicas, sim.n_live = simpy.Environment(), 3, 1, 1
        pod = FakePod(sim, 0, 0.0, 0)
        sim.pods = sim.endpoints = [pod]
        moves: list = []
        sim.set_replicas = lambda k, s=sim, m=moves: (m.append((s.env.now, k)) if k != s.replicas else None,
                                                      setattr(s, "replicas", k))
        loop = HpaLoop(sim, HpaSpec(min_replicas=1, max_replicas=20, metric="concurrency", target=1.0, keda=keda))
        off = loop.prometheus.offset(pod) if keda else 0.0
        burst = first_scrape_after(off, 30.0, 200.0) + 1.0     # starts 1 s after a scrape, lasts 10 s
        call_later(sim.env, burst, pod.set_n, 20)
        call_later(sim.env, burst + 10.0, pod.set_n, 0)
        sim.env.run(until=300.0)
        sim_moves.append(moves)
    assert sim_moves[0] == [] and sim_moves[1] != []


def test_rate_query_lags_by_its_window():
    # Triton's rate(request time[1m]): after a step to 10 in flight, two samples after the step are needed for
    # the full value; the first scale-up is never earlier than with the gauge.
    for seed in range(6):
        gauge, _, _ = run_step(100.0, 10, PrometheusMetric(scrape_interval_s=30.0), seed)
        rate, loop, pod = run_step(100.0, 10, PrometheusMetric(kind="rate", window_s=60.0, scrape_interval_s=30.0),
                                   seed)
        assert rate[0][0] >= gauge[0][0]
        assert loop.prometheus.query(399.0) == pytest.approx(10.0)   # Little's law: the mean number in flight


def test_cached_metrics_serve_kedas_last_poll():
    # useCachedMetrics: the value polled every 30 s from t = 0, so the HPA acts no earlier than the first poll
    # after the first scrape after the step.
    for seed in range(6):
        moves, loop, pod = run_step(100.0, 10, PrometheusMetric(scrape_interval_s=30.0, cached=True), seed)
        seen = first_scrape_after(loop.prometheus.offset(pod), 30.0, 100.0)
        polled = math.ceil(seen / 30.0) * 30.0
        assert moves[0][0] == pytest.approx(math.ceil(polled / SYNC) * SYNC)


def test_a_pod_scraped_never_or_gone_contributes_nothing():
    moves, loop, pod = run_step(0.0, 4, PrometheusMetric(scrape_interval_s=30.0), until=100.0)
    assert loop.prometheus.query(100.0) == 4.0
    pod.state = "Terminating"
    loop.prometheus.sim.env.run(until=131.0)   # one scrape later its series is stale
    assert loop.prometheus.query(131.0) == 0.0


def test_seeded_runs_are_identical():
    a = run_step(100.0, 10, PrometheusMetric(scrape_interval_s=30.0), seed=5)[0]
    b = run_step(100.0, 10, PrometheusMetric(scrape_interval_s=30.0), seed=5)[0]
    assert a == b


def test_external_metric_counts_every_pod_of_the_deployment():
    c = HpaCalculator(HpaSpec(min_replicas=1, max_replicas=20, target=2.0))
    # GetExternalPerPodMetricReplicas: 10 in flight over 5 status replicas (3 still starting) at target 2 → keep 5;
    # the Pods-metric path over 2 ready pods with 3 unready would rebalance differently.
    assert c.replicas_for_external(5, 10.0) == 5
    assert c.replicas_for_external(5, 10.9) == 5          # 1.09 within the 10 % tolerance
    assert c.replicas_for_external(5, 11.5) == 6          # ceil(11.5 / 2)
    assert c.replicas_for_external(4, 0.0) == 0           # (the HPA's minimum clamps it later)
    assert c.replicas_for_external(0, 3.0) == 2



def _keda_example(interval: str, seed: int) -> tuple[float, str]:
    """examples/scenarios/standard-keda.yaml with this scrape interval: (first scale-up after the spike at
    600 s, the report's JSON)."""
    import json
    from pathlib import Path

    import yaml

    from simulation import load_scenario, run_simulation
    from simulation.autoscaler.keda import SCRAPE_ANNOTATION

    root = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
    data = yaml.safe_load((root / "standard-keda.yaml").read_text())
    isvc, so = yaml.safe_load_all((root / data.pop("inferenceServiceFile")).read_text())
    so["metadata"]["annotations"][SCRAPE_ANNOTATION] = interval
    data.update(inferenceService=isvc, hpa=so, duration_s=900, series_interval_s=1.0)
    text = run_simulation(load_scenario(data, base_dir=root), seed=seed).to_json()
    rs = json.loads(text)["replica_series"]
    before = [k for t, k in zip(rs["t"], rs["desired"]) if t <= 600][-1]
    return next(t for t, k in zip(rs["t"], rs["desired"]) if t > 600 and k > before), text


def test_the_whole_simulation_reacts_later_with_slower_scrapes():
    seeds = range(4)
    slow = [_keda_example("1m", s)[0] for s in seeds]
    fast = [_keda_example("1s", s)[0] for s in seeds]
    assert all(t >= 615.0 for t in fast) and sum(slow) / 4 - sum(fast) / 4 >= 10.0, (slow, fast)
    assert _keda_example("30s", 1)[1] == _keda_example("30s", 1)[1]     # seeded runs are byte-identical


def test_a_rate_window_of_one_scrape_interval_never_scales():
    # rate(x[1m]) with 1 m scrapes holds one sample per window: empty, read as 0 — the HPA never sees the load
    # (why the stack widens Triton's window to two intervals). Two intervals: the load is seen.
    one = PrometheusMetric(kind="rate", window_s=60.0, scrape_interval_s=60.0)
    moves, loop, _ = run_step(100.0, 10, one, seed=1)
    assert moves == [] and loop.prometheus.query(399.0) == 0.0
    two = PrometheusMetric(kind="rate", window_s=120.0, scrape_interval_s=60.0)
    assert run_step(100.0, 10, two, seed=1)[0] != []


def test_only_pods_that_can_answer_are_scraped(monkeypatch):
    # standard-keda's spike at 40 req/s on one 4-GPU node: up to 6 pods, 2 wait Pending for GPUs.
    # A scrape event runs only for a
    # Ready pod or, once, for a pod that just stopped answering (its staleness marker); each pod is scraped on
    # its own grid (offset + k × interval), also after it is Ready again.
    import yaml
    from pathlib import Path

    from simulation import load_scenario, run_simulation
    from simulation.autoscaler.keda import SCRAPE_ANNOTATION
    from simulation.autoscaler import prometheus
    from simulation.autoscaler.prometheus import PrometheusScraper

    seen: dict = {}
    scrape = PrometheusScraper._scrape

    def counting(self, s):
        seen.setdefault(s.pod.id, []).append((self.env.now, s.pod.state, self.offset(s.pod)))
        scrape(self, s)
    monkeypatch.setattr(PrometheusScraper, "_scrape", counting)
    root = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
    data = yaml.safe_load((root / "standard-keda.yaml").read_text())
    isvc, so = yaml.safe_load_all((root / data.pop("inferenceServiceFile")).read_text())
    so["metadata"]["annotations"][SCRAPE_ANNOTATION] = "1s"
    data.update(inferenceService=isvc, hpa=so, duration_s=1200)
    data["workload"].update(peak_rate=40.0)
    data["cluster"].update(max_nodes=1)
    discovered: list = []
    series_init = prometheus.Series.__init__

    def collecting(self, pod, *rest):
        discovered.append(pod)
        series_init(self, pod, *rest)
    monkeypatch.setattr(prometheus.Series, "__init__", collecting)
    run_simulation(load_scenario(data, base_dir=root), seed=0)
    never_ready = [p for p in discovered if p.ready_t < 0]
    assert never_ready and not any(p.id in seen for p in never_ready)     # Pending to the end: never scraped
    for p in discovered:
        assert all(t >= p.ready_t for t, _, _ in seen.get(p.id, []))      # nothing before it is Ready
    for pid, scrapes in seen.items():
        unready = [i for i, (_, state, _) in enumerate(scrapes) if state != READY]
        assert all(i == len(scrapes) - 1 or scrapes[i + 1][1] == READY for i in unready), (pid, scrapes)
        for t, _, offset in scrapes:
            k = (t - offset) / 1.0
            assert abs(k - round(k)) < 1e-6
