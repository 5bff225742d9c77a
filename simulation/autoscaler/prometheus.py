"""Prometheus scraping a Standard-mode service's pods, and the value KEDA hands the HPA (the SimPy side).

What the HPA of a KEDA ScaledObject sees at a sync is the trigger's query evaluated on scraped samples
(`promql.py`), not the pods' load over the sync period:
- targets: Prometheus' Kubernetes discovery hands new target sets to the scrape manager at most every 5 s
  (`discovery/manager.go: updatert`); a pod created and gone in between is never scraped;
- each target is scraped every interval at a fixed offset of its own on the absolute clock, a hash of its
  labels (`scrape/target.go: Target.offset`), here drawn per pod from the seed;
- a scrape reads the runtime's gauges at that instant (vLLM `num_requests_running + waiting`, TGI queue + batch:
  the requests in the pod) or, for Triton, its cumulative request time (`nv_inference_request_duration_us`,
  here the pod's integral of requests in flight: a request is counted as it runs, not when it ends — the same for
  requests much shorter than the interval); only a pod whose server answers is scraped (Ready; the model server
  opens its port once the model is loaded, and stops taking connections on SIGTERM): at the first scrape when it
  does not, the series gets a staleness marker (`scrape/scrape.go`), at once for instant queries, while a `rate`
  window still holds its earlier samples; after that the pod gets no scrape events until it is Ready again
  (`Sim.on_pod_ready` → `on_ready`), then resumes on its grid: the same samples as trying every interval, at
  no cost for Pending or starting pods;
- the query runs at the HPA's request (KEDA `ExecutePromQuery`, time = now) or, with `useCachedMetrics`, at KEDA's
  polls; an empty result is 0 (`ignoreNullValues`).
Simplified: the counter does not reset when a container restarts (its samples go stale meanwhile); scrapes take
no time and never fail otherwise.
"""

from __future__ import annotations

import math
import random
from typing import Any

from simulation.autoscaler.keda import PrometheusMetric
from simulation.autoscaler.promql import extrapolated_rate, instant
from simulation.clock import call_later
from simulation.pod import GONE, READY

DISCOVERY_S = 5.0   # discovery/manager.go updatert


class Series:
    """One pod's scraped samples (time, value) and its staleness marker."""

    __slots__ = ("pod", "samples", "stale_at", "done", "at", "parked")

    def __init__(self, pod: Any, at: float) -> None:
        self.pod = pod
        self.samples: list[tuple[float, float]] = []
        self.stale_at: float | None = None
        self.done = False    # the pod is gone: no more scrapes
        self.at = at         # the pod's next scrape time on its grid
        self.parked = False  # not Ready at its last scrape: no scrape is scheduled until it is Ready again


class PrometheusScraper:
    """Scrapes the sim's pods per `PrometheusMetric`; `read(now)` is what the HPA gets from KEDA."""

    def __init__(self, sim: Any, metric: PrometheusMetric) -> None:
        self.sim = sim
        self.env = sim.env
        self.metric = metric
        self.series: list[Series] = []
        self.discovered = -1             # the highest pod id handed to the scrape manager
        self.cache = 0.0                 # KEDA's last polled value (useCachedMetrics)
        self.parked: dict[int, Series] = {}   # pod id → series of a pod that cannot answer
        sim.prometheus = self            # told when a pod becomes Ready (Sim.on_pod_ready)
        call_later(self.env, 0.0, self._discover)
        if metric.cached:
            call_later(self.env, 0.0, self._poll)

    # -- scraping -------------------------------------------------------------------------------------
    def offset(self, pod: Any) -> float:
        """The pod's scrape offset in [0, interval): fixed per target, deterministic from the seed."""
        return random.Random(f"{self.sim.seed}:scrape-offset:{pod.name}").random() * self.metric.scrape_interval_s

    def _discover(self) -> None:
        now = self.env._now
        interval = self.metric.scrape_interval_s
        new = []
        for pod in reversed(self.sim.pods):           # in creation order: the new ones are at the end
            if pod.id <= self.discovered:
                break
            new.append(pod)
        if new:
            self.discovered = new[0].id
        for pod in reversed(new):
            if pod.state != GONE:
                phase = self.offset(pod)
                first = phase + math.ceil((now - phase) / interval) * interval
                s = Series(pod, now + max(0.0, first - now))
                self.series.append(s)
                if pod.state == READY:
                    call_later(self.env, s.at - now, self._scrape, s)
                else:
                    s.parked = True
                    self.parked[pod.id] = s
        call_later(self.env, DISCOVERY_S, self._discover)

    def on_ready(self, pod: Any) -> None:
        """The pod became Ready: its series is scraped again from the next time on its grid (the times are
        advanced by the same additions as scraping each interval would make, so they are the same floats)."""
        s = self.parked.pop(pod.id, None)
        if s is None:
            return
        s.parked = False
        now = self.env._now
        interval = self.metric.scrape_interval_s
        while s.at < now:
            s.at += interval
        call_later(self.env, s.at - now, self._scrape, s)

    def _scrape(self, s: Series) -> None:
        pod = s.pod
        now = self.env._now
        s.at = now + self.metric.scrape_interval_s
        if pod.state == READY:
            if self.metric.kind == "gauge":
                s.samples = [(now, float(pod.n))]          # an instant query reads the latest sample only
            else:
                pod._acc()
                s.samples.append((now, pod.area_n))
                horizon = now - self.metric.window_s      # older samples leave every later window
                while len(s.samples) > 1 and s.samples[0][0] <= horizon:
                    s.samples.pop(0)
            s.stale_at = None
            call_later(self.env, self.metric.scrape_interval_s, self._scrape, s)
            return
        if s.samples and s.stale_at is None:
            s.stale_at = now
        if pod.state == GONE:
            s.done = True
        else:                                         # scraped again once Ready (`on_ready`)
            s.parked = True
            self.parked[pod.id] = s

    # -- querying -------------------------------------------------------------------------------------
    def query(self, t: float) -> float:
        """The trigger's query at t: the sum over the pods' series (nothing → 0, KEDA's `ignoreNullValues`)."""
        total = 0.0
        rate = self.metric.kind == "rate"
        keep = []
        for s in self.series:
            v = extrapolated_rate(s.samples, t, self.metric.window_s) if rate else instant(s.samples, s.stale_at, t)
            if v is not None:
                total += v
            done = s.done or (s.parked and s.pod.state == GONE)
            if done:
                self.parked.pop(s.pod.id, None)
            if not done or (rate and s.samples and s.samples[-1][0] > t - self.metric.window_s):
                keep.append(s)
        self.series = keep
        return total

    def _poll(self) -> None:
        self.cache = self.query(self.env._now)
        call_later(self.env, self.metric.polling_interval_s, self._poll)

    def read(self, now: float) -> float:
        """What KEDA's metrics adapter answers the HPA at `now`."""
        return self.cache if self.metric.cached else self.query(now)
