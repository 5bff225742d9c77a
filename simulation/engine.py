"""Composes the request path and runs one scenario: `run_simulation(scenario, seed) -> Report`.

Request path (Knative mode):  client → gateway (token bucket, route timeout) → [activator when the SKS is in
Proxy mode or no pod is Ready] → queue-proxy (breaker CC / 10·CC queue, timeoutSeconds) → model server.
Standard (raw) mode: client → gateway → a Ready pod chosen at random (kube-proxy iptables mode) → model server
(no activator, no queue-proxy; no Ready pod → 503 from the gateway, Envoy's "no healthy upstream").
In Serve mode the ingress balances round-robin over Ready pods (its real default depends on the ingress —
reference knative-kserve.md §2, unverified there).

Everything random draws from `random.Random` streams seeded from (seed, purpose), so equal inputs and seed
give identical results. The run stops admitting arrivals at `duration_s` and continues (up to `drain_s`) until
every request has been answered.
"""

from __future__ import annotations

import math
import random
from typing import Any, Callable

import simpy

from simulation.activator import Activator
from simulation.autoscaler.hpa_loop import HpaLoop
from simulation.autoscaler.loop import KpaLoop
from simulation.client import Client
from simulation.clock import call_later, run_until
from simulation.cluster import Cluster
from simulation.deadlines import deadline_queue
from simulation.fused import FusedPath
from simulation.gateway import Gateway
from simulation.metrics import Recorder
from simulation.timeline import Timeline
from simulation.pod import PENDING, Pod
from simulation.replica_set import ReplicaSet
from simulation.report import Report, build_report
from simulation.request import (ACTIVATOR, CLIENT_TIMEOUT, GATEWAY, QUEUE_PROXY, TIMEOUT, TRUNCATED, UNAVAILABLE,
                                Request)
from simulation import horizon, queue_proxy
from simulation.server import get_server
from simulation.workload import NextArrival, arrivals

BATCHES = 20


class Sim(ReplicaSet):
    """One service's request path and control loops. `env` and `cluster` may be shared by several services'
    Sims (simulation/fleet.py: services sharing a node group compete for its GPUs)."""

    route: "Sim | None" = None   # a fleet's Route may send new requests to a newer revision (fleet.py)

    def __init__(self, scenario: Any, seed: int, env: Any = None, cluster: Cluster | None = None) -> None:
        self.scenario = sc = scenario
        self.seed = seed
        self.env = env = env if env is not None else simpy.Environment()
        self.knative = sc.serving.mode == "Knative"
        self.cc = sc.serving.container_concurrency
        self.rng_arrivals = random.Random(f"{seed}:arrivals")
        self.rng_infra = random.Random(f"{seed}:infra")
        self.rng_client = random.Random(f"{seed}:client")
        self.rng_lb = random.Random(f"{seed}:lb")
        self.rng_scrape = random.Random(f"{seed}:scrape")
        self.server_cls = get_server(sc.server.kind)
        self.fused = FusedPath(self) if queue_proxy.FUSED else None   # the common request in one place
        self.cluster = cluster if cluster is not None else Cluster(self, sc.cluster)
        self.gateway = Gateway(env, sc.gateway)
        self.rate_limited = sc.gateway.rate_limit_per_s is not None
        self.client = Client(self, sc.client)
        self.activator = Activator(self, self.cc) if self.knative else None
        self.rec = Recorder(sc.warmup_s, sc.duration_s, BATCHES)
        timeouts = (sc.client.timeout_s, sc.gateway.timeout_s, sc.serving.timeout_s if self.knative else None)
        self.dq_client = deadline_queue(env, timeouts[0], self._expire_client, timeouts)
        self.dq_gateway = deadline_queue(env, timeouts[1], self._expire_gateway, timeouts)
        self.dq_knative = deadline_queue(env, timeouts[2], self._expire_knative, timeouts)
        self.pods: list[Pod] = []
        self.n_live = 0                  # pods neither Terminating nor Gone
        self.endpoints: list[Pod] = []
        self.kpa_ready: list[Pod] = []   # Kubernetes-Ready pods in creation order (what the KPA scrapes)
        self.scrape_ticks = 0            # KPA scrapes so far (scrape j at t = j s); pods catch up lazily
        self.scrape_due = math.inf       # the next KPA scrape not yet run (KpaLoop.catch_scrapes)
        self.n_direct = 0                # requests in pods not proxied by the activator, and when that last
        self.direct_t = -math.inf        # changed (the KPA skips reading pods when it is 0 all second)
        self.replicas = 0
        self.proxy = True
        self.proxy_since: float | None = 0.0
        self.autoscaler: Any = None
        self.prometheus: Any = None    # a KEDA trigger's scraper (autoscaler/prometheus.py), told of Ready pods
        self._rid = 0
        self._origin = 0
        self._pid = 0
        self._rr = 0
        self.n_sys = 0
        self.area_sys = 0.0
        self._last = 0.0
        self.ready_area = 0.0
        self._ready_last = 0.0
        self.ready_min = None
        self.ready_max = 0
        self.cold_starts: list[float] = []
        self.cold_phases: list[dict] = []
        self.cold_censored: list[float] = []   # waits of pods not Ready at the horizon (simulation/horizon.py)
        self.restarts = 0
        self.restart_reasons: dict[str, int] = {}
        self.pods_created = 0
        self.desired_over_cap = 0     # the highest desired scale above MAX_REPLICAS (0: never)
        self.servers: list[Any] = []  # every pod's model server, gone ones too (the report sums their stats)
        self.snap_sys: list[float] = []
        self.snap_ready: list[float] = []
        self.snap_gpu: list[tuple[float, float]] = []
        self.series: list[tuple[float, int, int, int, int]] = []
        self._arr = None

    def pod_rng(self, pid: int) -> random.Random:
        return random.Random(f"{self.seed}:pod:{pid}")

    # -- accounting ----------------------------------------------------------------------------------
    def _acc(self) -> None:
        now = self.env._now
        self.area_sys += self.n_sys * (now - self._last)
        self._last = now

    def _ready_acc(self) -> None:
        now = self.env._now
        t0, t1 = self.scenario.warmup_s, self.scenario.duration_s
        a, b = max(self._ready_last, t0), min(now, t1)
        if b > a:
            self.ready_area += len(self.endpoints) * (b - a)
        self._ready_last = now

    def _ready_changed(self) -> None:
        now = self.env._now
        if self.ready_min is not None and now <= self.scenario.duration_s:
            n = len(self.endpoints)
            self.ready_min = n if self.ready_min is None else min(self.ready_min, n)
            self.ready_max = max(self.ready_max, n)

    # -- request path ---------------------------------------------------------------------------------
    def send(self, origin: int, origin_t: float, attempt: int, nin: int, nout: int, measured: bool) -> None:
        now = self.env._now
        req = Request(self._rid, origin, origin_t, attempt, now, nin, nout, measured)
        self._rid += 1
        self.area_sys += self.n_sys * (now - self._last)
        self._last = now
        self.n_sys += 1
        # Client, gateway and revision timers all start now, at req.t (no hop latency is modelled):
        # `deadlines.deadline_queue` keeps a queue for the shortest timeout only, which relies on this.
        if self.dq_client is not None:
            self.dq_client.add(req)
        if self.rate_limited:
            status = self.gateway.admit()
            if status is not None:
                self.complete(req, status, GATEWAY)
                return
        if self.dq_gateway is not None:
            self.dq_gateway.add(req)
        if self.knative:
            if self.dq_knative is not None:
                self.dq_knative.add(req)
            eps = self.endpoints
            if self.proxy or not eps:
                self.activator.accept(req)
            else:
                self._rr += 1
                eps[self._rr % len(eps)].qp.accept(req)
        else:
            eps = self.endpoints
            if not eps:
                self.complete(req, UNAVAILABLE, GATEWAY)
            else:
                eps[int(self.rng_lb.random() * len(eps))].qp.accept(req)

    def complete(self, req: Any, status: int, component: str) -> None:
        if req.status:
            return
        now = self.env._now
        req.status = status
        req.component = component
        req.t_done = now
        pod = req.pod
        if pod is not None:
            pod.leave(req)
        if req.via_activator:
            self.activator.leave(req)
        self.area_sys += self.n_sys * (now - self._last)
        self._last = now
        self.n_sys -= 1
        client = self.client
        if client.tokens is None and (status == 200 or status not in client.retry_on):
            final = True                        # fast path: nothing for the client to decide
        else:
            final = not client.on_response(req)
        self.rec.record(req, final)
        if final:
            self.timeline.final(req)

    def _expire(self, req: Any, component: str, status: int = TIMEOUT) -> None:
        where = req.where
        if where is not None:
            where.abandon(req)
        self.complete(req, status, component)

    def _expire_client(self, req: Any) -> None:
        self._expire(req, CLIENT_TIMEOUT)

    def _expire_gateway(self, req: Any) -> None:
        self._expire(req, GATEWAY)

    def _expire_knative(self, req: Any) -> None:
        """The revision timeout (timeout.go): 504 before the first byte; after it, the stream is cut (200-truncated)."""
        first_byte_at = getattr(req.where, "first_byte_at", None)
        first = first_byte_at(req) if first_byte_at is not None else None
        if first is not None:
            req.t_first = first
            self._expire(req, ACTIVATOR if req.via_activator else QUEUE_PROXY, TRUNCATED)
            return
        self._expire(req, ACTIVATOR if req.via_activator else QUEUE_PROXY)

    # -- pods -----------------------------------------------------------------------------------------
    def set_proxy(self, proxy: bool) -> None:
        if proxy != self.proxy:
            self.proxy = proxy
            self.proxy_since = self.env.now if proxy else None

    # -- arrivals -------------------------------------------------------------------------------------
    def _arrive(self, ev: NextArrival) -> None:
        now = self.env._now
        oid = self._origin
        self._origin = oid + 1
        self.send(oid, now, 0, ev.nin, ev.nout, now >= self.rec.t0)
        nxt = next(self._arr, None)
        if nxt is not None:
            ev.schedule(self.env, nxt[0] - now, nxt[1], nxt[2])

    # -- sampling -------------------------------------------------------------------------------------
    def _snapshot(self) -> None:
        self._acc()
        self._ready_acc()
        self.snap_sys.append(self.area_sys)
        self.snap_ready.append(self.ready_area)
        self.snap_gpu.append(self.cluster.snapshot(self.scenario.name))
        if self.ready_min is None:
            self.ready_min = self.ready_max = len(self.endpoints)

    def _sample_series(self, interval: float) -> None:
        now = self.env._now
        self.series.append((now, len(self.endpoints), self.n_live, self.replicas, self.cluster.node_count))
        self.timeline.sample(now, self.n_sys, sum(1 for p in self.pods if p.state == PENDING),
                             [p.server for p in self.endpoints])
        if now + interval <= self.scenario.duration_s + 1e-9:
            call_later(self.env, interval, self._sample_series, interval)

    # -- run ------------------------------------------------------------------------------------------
    def initial_replicas(self) -> int:
        sc = self.scenario
        cfg = sc.serving.kpa
        if sc.initial_replicas is not None:
            return sc.initial_replicas
        if not self.knative:
            return sc.serving.hpa.min_replicas if sc.serving.hpa else cfg.min_scale
        init = cfg.initial_scale if (cfg.initial_scale > 0 or cfg.allow_zero_initial_scale) else 1
        n = max(cfg.min_scale, init)
        return min(n, cfg.max_scale) if cfg.max_scale else n

    def arrival_stream(self) -> Any:
        """(time, input tokens, output tokens) of every arrival; a fleet overlays stress traffic here."""
        sc = self.scenario
        return arrivals(sc.workload, self.rng_arrivals, sc.duration_s)

    def start(self, add_nodes: bool = True, warm: bool = True) -> None:
        """Initial nodes (unless a shared cluster already has them), pods (Ready at once when `warm`, else
        through the cold-start pipeline), autoscaler, sampling, arrivals. Times are absolute: a Sim may start
        after t = 0 (a new revision in a fleet)."""
        sc = self.scenario
        env = self.env
        n0 = self.initial_replicas()
        nodes = []
        if add_nodes:
            cp = sc.cluster
            per_node = max(1, cp.gpus_per_node // max(1, sc.serving.gpus))
            need = int(math.ceil(n0 / per_node)) if n0 else 0
            count = max(cp.warm_nodes if cp.warm_nodes is not None else need, need)
            self.cluster.min_nodes = count
            nodes = [self.cluster.add_node(ready=True) for _ in range(count)]
        for _ in range(n0):
            self._new_pod(warm)
        self.cluster.stock_warm(nodes, [sc])   # the image and weights on the warm nodes (cluster.py)
        self.replicas = n0
        if self.knative:
            self.autoscaler = KpaLoop(self, sc.serving.kpa, n0)
        elif sc.serving.hpa is not None:
            self.autoscaler = HpaLoop(self, sc.serving.hpa)
        # batch-boundary snapshots
        blen = (sc.duration_s - sc.warmup_s) / BATCHES
        for i in range(BATCHES + 1):
            if sc.warmup_s + i * blen >= env.now:
                call_later(env, sc.warmup_s + i * blen - env.now, self._snapshot)
        interval = sc.series_interval_s or max(1.0, sc.duration_s / 200.0)
        self.timeline = Timeline(sc.duration_s, interval)
        call_later(env, 0.0, self._sample_series, interval)
        self._arr = self.arrival_stream()
        arrive = self._arrive
        if self.fused is not None:
            self.fused.bind()
            if self.fused.takes_arrivals():
                arrive = self.fused.arrive
        first = next(self._arr, None)
        if first is not None:
            NextArrival(arrive).schedule(env, first[0], first[1], first[2])

    @property
    def busy(self) -> bool:
        """Requests in flight or retries pending (the run drains until this is False)."""
        return self.n_sys > 0 or self.client.pending_retries > 0

    def finish(self) -> Report:
        self.rec.incomplete = self.n_sys + self.client.pending_retries
        horizon.close(self)
        self.rec.flush()
        return build_report(self)

    def run(self, progress: "Callable[[float], None] | None" = None) -> Report:
        """Simulate; `progress(fraction)` is called as simulated time passes (the CLI's progress bar)."""
        sc = self.scenario
        env = self.env
        self.start()
        if progress is None:
            run_until(env, sc.duration_s + 1e-9)
        else:  # the same events in the same order, in 100 slices (a SimPy run may stop and resume)
            for i in range(1, 101):
                env.run(until=sc.duration_s * i / 100 + (1e-9 if i == 100 else 0.0))
                progress(i / 100)
        end = sc.duration_s + sc.drain_s
        while self.busy and env.now < end:   # (run_until leaves no spent stop event for peek to see)
            run_until(env, drain_stop(env._now, env.peek(), end))
        return self.finish()


def drain_stop(now: float, next_event: float, end: float) -> float:
    """Where the drain's next `env.run(until=…)` stops. The drain advances in 1-s steps (now + 1.0, capped at
    `end`) and looks after each whether anything is still open; a step with no event in it changes nothing, so
    the steps before `next_event` are skipped: this is the first stop of the 1-s sequence at or past
    `next_event`, or `end`, the same float the step-by-step loop reaches. A drain's cost is then its events,
    not its seconds (a request served for 10^7 s with nothing else scheduled is one step, not 10^7).

    Within one binade [2^e, 2^(e+1)) adding 1.0 is exact (every float there is a multiple of an ulp ≤ 1 while
    t < 2^53), so k steps are `x + k` at once; where a step crosses into the next binade it rounds, and that one
    is taken as the loop takes it."""
    x = now
    while True:
        step = x + 1.0
        if step >= end:
            return end
        if step >= next_event:
            return step
        top = math.ldexp(1.0, math.frexp(x)[1])            # x < top: the binade's upper edge (1.0 for x = 0)
        limit = min(next_event, end, top)
        if step >= limit:                                   # this step leaves the binade: one rounded addition
            x = step
            continue
        k = max(1, int(limit - x) - 1)                      # the largest k with x + k < limit (exact below top)
        while x + (k + 1) < limit:
            k += 1
        while k > 1 and x + k >= limit:
            k -= 1
        x = x + k


def run_simulation(scenario: Any, seed: int = 0, progress: "Callable[[float], None] | None" = None) -> Report:
    """Run one scenario with one seed; the same inputs and seed give the same Report."""
    return Sim(scenario, seed).run(progress)
