"""The SimPy side of the HPA: its sync loop.

HPA (kubernetes, `horizontal.go`): every 15 s, per-pod metric over the last sync period (cpu = the cores a GPU
server uses, ~1 busy, 0.1 idle, over its CPU request — `HpaSpec.cpu_percent`, so a 4-core request peaks near
27 % and an 80 % target is never reached; concurrency = mean in-flight requests), then
`HpaCalculator` (tolerance, stabilization windows, behavior policies). A KEDA ScaledObject's HPA reads the
trigger's query on Prometheus' scraped samples instead (`prometheus.py`), as an External metric.
"""

from __future__ import annotations

from typing import Any

from simulation.autoscaler.hpa import HpaCalculator
from simulation.autoscaler.prometheus import PrometheusScraper
from simulation.pod import PENDING, STARTING


class HpaLoop:
    """The HPA controller's sync every period (`--horizontal-pod-autoscaler-sync-period`, 15 s). A KEDA
    ScaledObject's HPA reads the trigger's query on Prometheus' samples (`prometheus.py`); a plain HPA reads the
    pods' load over the last period directly (its adapter's or metrics-server's own lag is not modelled)."""

    def __init__(self, sim: Any, spec: Any) -> None:
        self.sim = sim
        self.env = sim.env
        self.spec = spec
        self.calc = HpaCalculator(spec)
        self.prometheus = PrometheusScraper(sim, spec.keda) if spec.keda is not None else None
        self.env.process(self._loop())

    def _loop(self):
        env = self.env
        period = self.spec.sync_period_s
        while True:
            yield env.timeout(period)
            sim = self.sim
            if self.prometheus is not None:   # horizontal.go computeStatusForExternalMetric (AverageValue)
                raw = self.calc.replicas_for_external(sim.n_live, self.prometheus.read(env.now))
                sim.set_replicas(self.calc.decide(env.now, sim.replicas, raw))
                continue
            pods = sim.endpoints
            ready = len(pods)
            # replica_calculator.go groupPods: a Pending pod is unready for every metric; a started pod that is not
            # Ready has no sample from its loading server: for CPU the readiness test makes it unready, for a Pods
            # metric (no readiness test there) it is missing — the target on a scale-down, 0 on a scale-up.
            pending = sum(1 for p in sim.pods if p.state == PENDING)
            starting = sum(1 for p in sim.pods if p.state == STARTING)
            if self.spec.metric == "cpu":
                total = sum(self.spec.cpu_percent(p.scrape(period)[1]) for p in pods)
                unready, missing = pending + starting, 0
            else:
                total = sum(p.scrape(period)[0] for p in pods)
                unready, missing = pending, starting
            cur = sim.replicas
            raw = self.calc.replicas_for_metric(cur, ready, unready, total, missing) if ready else cur
            sim.set_replicas(self.calc.decide(env.now, cur, raw))
