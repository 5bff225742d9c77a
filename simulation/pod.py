"""Pod lifecycle and cold start: Pending → (node) → image pull → model download → load → warm-up → Ready.

Each step is a scheduled callback whose duration comes from the cluster/model profile; a throughput or duration
given as a distribution (simulation/dists.py) is drawn afresh for each node's pull, each download and each
container start:
- Pending while no GPU slot is free; a new node takes `node_provision_s` (cluster.py).
- Image pull: `image_gib / image_pull_mib_s`, skipped when the node already has this pod's image (by reference,
  `cluster.image_ref`: another service's image on the node does not count; pods starting on the same node
  wait for the one pull of their image). `image_gib` is the cluster's, one size for every image.
- Model download (KServe storage-initializer, an init container, so not under the startup probe):
  `download_gib / model_download_mib_s` (the model's `download_gib`, default its `weights_gib`: an hf://
  repository is downloaded whole, a second copy of the weights included), skipped on a node-cache hit of this
  pod's model (`model_cache: node`, by storage URI, `cluster.model_ref`) or with probability
  `model_cache_hit_ratio`; with `model_cache: none` every pod downloads (its own emptyDir).
- Main container: load `weights_gib / load_gib_s` (pods loading at once share `load_total_gib_s`:
  simulation/shared_reads.py) + `warmup_s` + the server's `startup_extra_s()`. With a
  startupProbe that fails first (`isvc.Probe.kill_after_s`: the failureThreshold-th probe tick after
  initialDelaySeconds, ticks counted from the kubelet's admission of the pod — between d + (f−1)·p and d + f·p),
  the kubelet kills the container then and restarts it with the kubelet's CrashLoopBackOff (first restart at once, then
  10 s doubling to 300 s, reset after 10 min without a restart; `gpu/crashloop.py`); weights already
  downloaded stay (emptyDir).
- Readiness: the activator sees the pod within one probe period (0.2 s, knative
  `pkg/activator/net/revision_backends.go`); Kubernetes marks it Ready at the next kubelet readiness probe
  (period = readinessProbe.periodSeconds, or 10 s when Knative's aggressive default probe (period 0) is used —
  reference knative-kserve.md §1, marked unverified there).
A crash (`crash(reason)`, called by model servers) fails in-flight work with 502 and restarts the container with
back-off; `startup_error()` from the server makes the container exit at start-up (never Ready).
Termination drains: no new requests, in-flight work finishes, then after Knative's 30 s drain quiet period
(`drainSleepDuration`) the GPUs are released.
"""

from __future__ import annotations

import math
from typing import Any

from simulation.clock import call_later
from simulation.cluster import image_ref, model_ref
from simulation.gpu.crashloop import CrashLoopBackOff
from simulation.queue_proxy import QueueProxy
from simulation.shared_reads import begin_load, load_moved

PENDING, STARTING, READY, TERMINATING, GONE = "Pending", "Starting", "Ready", "Terminating", "Gone"
DRAIN_QUIET_S = 30.0


class Pod:
    __slots__ = ("sim", "env", "id", "name", "slots", "gpus", "node", "state", "created", "container_start",
                 "ready_t", "act_ready", "k8s_ready", "server", "qp", "restarts", "warm", "act_n",
                 "n", "n_direct", "area_n", "area_busy", "area_direct", "count_direct", "last", "mark",
                 "_calls", "backoff", "startup_phases", "rng", "term_t", "ticked",
                 "hpa", "loading")

    def __init__(self, sim: Any, pid: int, warm: bool = False) -> None:
        self.sim = sim
        self.env = sim.env
        self.id = pid
        self.name = f"{sim.scenario.serving.name}-predictor-{pid:05d}"
        self.gpus = sim.scenario.serving.gpus
        self.slots = max(1, self.gpus)
        self.node = None
        self.state = PENDING
        self.created = self.env._now
        self.container_start = -1.0
        self.ready_t = -1.0
        self.act_ready = False
        self.k8s_ready = False
        self.rng = sim.pod_rng(pid)
        cfg = sim.scenario.server
        self.server = sim.server_cls(self.env, self, cfg.spec, self.rng)
        knative = sim.knative
        self.hpa = not knative    # area_n / area_busy are read only by the HPA (Standard mode),
                                  # the KPA reads area_direct
        self.qp = QueueProxy(sim, self, self.server, sim.cc if knative else 0, sim.scenario.queue_depth_factor)
        self.restarts = 0
        self.warm = warm
        self.act_n = 0            # requests the activator has proxied here and not yet answered
        self.n = 0                # requests in the pod (queued + running)
        self.n_direct = 0         # of which not proxied by the activator
        self.area_n = 0.0
        self.area_busy = 0.0
        self.area_direct = 0.0
        self.count_direct = 0
        self.last = self.env._now
        self.mark = (0.0, 0.0, 0.0, 0)   # areas at the last scrape
        self.ticked = sim.scrape_ticks    # KPA scrape ticks applied to this pod (`catch_up`)
        self._calls: list = []
        self.backoff = CrashLoopBackOff()   # `on_crash(now) -> delay`; replaceable per pod
        self.startup_phases: dict[str, float] = {}
        self.term_t = -1.0
        self.loading = None   # while reading shared weights: (pending Call, warm-up s, kill time): shared_reads.py

    # -- load accounting (time-weighted concurrency for the autoscalers) --------------------------------
    def _acc(self) -> None:
        now = self.env._now
        dt = now - self.last
        if dt:
            n = self.n
            if n:
                self.area_n += n * dt
                self.area_busy += dt
                self.area_direct += self.n_direct * dt
            self.last = now

    def catch_up(self, k: int) -> None:
        """Apply KPA scrape ticks up to number k (scrape j at t = j s) as if each had read this pod.

        Knative's scraper reads only a sample of the pods (`pkg/autoscaler/metrics/stats_scraper.go`), so the
        KPA loop reads the sampled pods and every other pod applies the ticks it missed lazily, at its next
        change: at each tick while Ready its areas are split at t = j and the scrape mark set — the same float
        operations as reading it every second, so results are unchanged, at no cost for an idle pod. The KPA
        reads only the non-proxied load (`area_direct`, `count_direct`): while none is in the pod nothing needs
        splitting, and `enter`/`leave` of a proxied request skip this (area_n and area_busy, the HPA's, are
        split only on the way; an HPA pod is never ticked).
        """
        j = self.ticked
        if j >= k:
            return
        self.ticked = k
        if not self.k8s_ready:
            return
        n = self.n
        nd = self.n_direct
        if nd:
            last = self.last
            for t in range(j + 1, k + 1):
                dt = t - last
                if dt:
                    self.area_n += n * dt
                    self.area_busy += dt
                    self.area_direct += nd * dt
                    last = float(t)
            self.last = last
        self.mark = (self.area_n, self.area_busy, self.area_direct, self.count_direct)

    def _scrapes_due(self) -> None:
        """The KPA's scrapes due before now run before this pod's Ready state changes (`KpaLoop.catch_scrapes`)."""
        sim = self.sim
        now = self.env._now
        if sim.scrape_due < now:
            sim.autoscaler.catch_scrapes(now)

    def kpa_stat(self, k: int) -> tuple[float, int]:
        """(avg non-proxied concurrency, non-proxied requests) over scrape tick k (the second before t = k)."""
        if self.ticked < k - 1 and not self.n:   # idle since before tick k − 1: nothing moved, the stat is 0
            self.ticked = k
            self.mark = (self.area_n, self.area_busy, self.area_direct, self.count_direct)
            return 0.0, 0
        self.catch_up(k - 1)
        _, _, a_d, c_d = self.mark
        self.catch_up(k)
        _, _, b_d, d_d = self.mark
        return b_d - a_d, d_d - c_d

    def enter(self, req: Any) -> None:
        now = self.env._now
        sim = self.sim
        if sim.scrape_due < now:
            sim.autoscaler.catch_scrapes(now)
        if self.ticked != sim.scrape_ticks and (self.n_direct or not req.via_activator):
            self.catch_up(sim.scrape_ticks)
        n = self.n
        if n:
            dt = now - self.last
            if self.hpa:
                self.area_n += n * dt
                self.area_busy += dt
            if self.n_direct:   # else it would add 0.0
                self.area_direct += self.n_direct * dt
        self.last = now
        self.n = n + 1
        if not req.via_activator:
            self.n_direct += 1
            self.count_direct += 1
            sim.n_direct += 1
            sim.direct_t = now

    def leave(self, req: Any) -> None:
        now = self.env._now
        sim = self.sim
        if sim.scrape_due < now:
            sim.autoscaler.catch_scrapes(now)
        if self.ticked != sim.scrape_ticks and (self.n_direct or not req.via_activator):
            self.catch_up(sim.scrape_ticks)
        n = self.n
        dt = now - self.last
        if self.hpa:
            self.area_n += n * dt
            self.area_busy += dt
        if self.n_direct:   # else it would add 0.0
            self.area_direct += self.n_direct * dt
        self.last = now
        self.n = n - 1
        if not req.via_activator:
            self.n_direct -= 1
            sim.n_direct -= 1
            sim.direct_t = now
        if self.state == TERMINATING and self.n == 0:
            self._maybe_release()

    def scrape(self, period: float) -> tuple[float, float, float, int]:
        """(avg concurrency, busy fraction, avg non-proxied concurrency, non-proxied requests) since last scrape."""
        self._acc()
        a_n, a_b, a_d, c_d = self.mark
        self.mark = (self.area_n, self.area_busy, self.area_direct, self.count_direct)
        return ((self.area_n - a_n) / period, (self.area_busy - a_b) / period, (self.area_direct - a_d) / period,
                self.count_direct - c_d)

    # -- start-up pipeline ----------------------------------------------------------------------------
    def _later(self, delay: float, fn: Any, *args: Any) -> Any:
        call = call_later(self.env, delay, fn, *args)
        self._calls.append(call)
        return call

    def start(self) -> None:
        """Warm pods are Ready at once; others go through the cluster (maybe Pending)."""
        if self.warm:
            # Ready at t = 0 on a warm node (image and weights there) — unless the server says it cannot start.
            if not self.sim.cluster.place(self, notify=False):
                return
            self.state = STARTING
            self.container_start = self.env._now
            reason = self.server.startup_error()
            if reason:
                self._restart(reason)
                return
            self._app_ready(initial=True)
            return
        if not self.sim.cluster.place(self):
            self.state = PENDING

    def on_node_ready(self) -> None:
        if self.state in (TERMINATING, GONE):
            return
        self.state = STARTING
        now = self.env._now
        p = self.sim.scenario.cluster
        node = self.node
        image = image_ref(self.sim.scenario)
        at = node.images.get(image)
        if at is None:   # not on the node, nor being pulled there: the kubelet pulls it
            at = node.images[image] = now + p.image_gib * 1024.0 / p.image_pull_mib_s.sample(self.rng)
        delay = max(0.0, at - now)
        self.startup_phases["node_s"] = now - self.created
        self.startup_phases["image_pull_s"] = delay
        self._later(delay, self._download)

    def _download(self) -> None:
        now = self.env._now
        p = self.sim.scenario.cluster
        download = self.sim.scenario.model.download
        node = self.node
        model = model_ref(self.sim.scenario) if p.model_cache == "node" else None
        if model is not None and model in node.models:
            delay = max(0.0, node.models[model] - now)
        elif p.model_cache_hit_ratio > 0 and self.rng.random() < p.model_cache_hit_ratio:
            delay = 0.0
        else:
            delay = download * 1024.0 / p.model_download_mib_s.sample(self.rng)
            if model is not None:
                node.models[model] = now + delay
        self.startup_phases["download_s"] = delay
        self._later(delay, self._container_start)

    def _container_start(self) -> None:
        if self.state in (TERMINATING, GONE):
            return
        now = self.env._now
        self.container_start = now
        self.qp.dead = False
        p = self.sim.scenario.cluster
        weights, rate = self.sim.scenario.model.weights_gib, p.load_gib_s.sample(self.rng)
        warm = p.warmup_s.sample(self.rng) + self.server.startup_extra_s()
        probe = self.sim.scenario.serving.startup_probe
        kill = probe and probe.kill_after_s(now, self.created + self.startup_phases.get("node_s", 0.0))
        begin_load(self, weights, rate, warm, kill)   # simulation/shared_reads.py: the cache's shared reads

    def _schedule_ready(self, total: float, kill: float | None) -> Any:
        """Loaded and warm `total` s from now, unless the startup probe kills the container first (`kill` s)."""
        if kill is not None and total > kill:
            return self._later(kill, self._restart, "startupProbe failed")
        return self._later(total, self._loaded)

    def load_moved(self, end: float | None) -> None:
        """The shared model reads changed this pod's rate: its weights are in at `end` (None: not known yet)."""
        load_moved(self, end)

    def _loaded(self) -> None:
        self.loading = None
        reason = self.server.startup_error()
        if reason:
            self._restart(reason)
            return
        self._app_ready()

    def _app_ready(self, initial: bool = False) -> None:
        now = self.env._now
        sim = self.sim
        if initial:
            self._set_act_ready()
            self._set_k8s_ready()
            return
        probe = sim.scenario.cluster.activator_probe_s
        if sim.knative:
            self._later(self.rng.random() * probe if probe > 0 else 0.0, self._set_act_ready)
        serving = sim.scenario.serving
        period = serving.readiness_period_s or 10.0
        first = self.container_start + serving.readiness_initial_delay_s
        k = max(0, math.ceil((now - first) / period - 1e-9))
        self._later(max(0.0, first + k * period - now), self._set_k8s_ready)

    def _set_act_ready(self) -> None:
        if self.state in (TERMINATING, GONE) or self.act_ready:
            return
        self.act_ready = True
        self.sim.on_pod_act_ready(self)

    def _set_k8s_ready(self) -> None:
        if self.state in (TERMINATING, GONE):
            return
        self._scrapes_due()
        self.catch_up(self.sim.scrape_ticks)
        self.state = READY
        if not self.k8s_ready:
            self.k8s_ready = True
            self.sim.kpa_ready_added(self)
        if self.ready_t < 0:
            self.ready_t = self.env._now
        self.sim.on_pod_ready(self)

    def cold_start_phases(self) -> dict[str, float]:
        """The start-up phases of the last attempt, and `restarts_s` (first container start → last: failed
        start-up attempts and CrashLoopBackOff) when the container was restarted before its first Ready."""
        phases = dict(self.startup_phases)
        if self.restarts:
            first = self.created + phases.get("node_s", 0.0) + phases.get("image_pull_s", 0.0) + \
                phases.get("download_s", 0.0)
            phases["restarts_s"] = self.container_start - first
        return phases

    # -- failures -------------------------------------------------------------------------------------
    def crash(self, reason: str = "crash") -> None:
        """The container died: fail in-flight work (502), restart with the kubelet's back-off."""
        if self.state not in (STARTING, READY):
            return
        self._restart(reason)

    def _restart(self, reason: str) -> None:
        self.restarts += 1
        self.sim.on_pod_restart(self, reason)
        self._unready()
        self.qp.fail_all(502)
        self.state = STARTING
        self._later(self.backoff.on_crash(self.env._now), self._container_start)

    def _unready(self) -> None:
        was_act, was_k8s = self.act_ready, self.k8s_ready
        if self.loading is not None:   # killed or deleted while reading shared weights: its share goes back
            self.loading = None
            self.sim.cluster.reads.stop(self)
        self._scrapes_due()
        self.catch_up(self.sim.scrape_ticks)
        self.act_ready = False
        self.k8s_ready = False
        if was_k8s:
            self.sim.kpa_ready_removed(self)
        for c in self._calls:
            c.cancel()
        self._calls.clear()
        if was_act or was_k8s:
            self.sim.on_pod_unready(self, was_act, was_k8s)

    # -- termination ----------------------------------------------------------------------------------
    def terminate(self) -> None:
        if self.state in (TERMINATING, GONE):
            return
        prev = self.state
        self.sim.n_live -= 1
        self._unready()
        self.state = TERMINATING
        self.term_t = self.env._now
        if prev == PENDING and self.node is None:
            self.sim.cluster.unpend(self)
            self.state = GONE
            return
        if prev != READY and self.n == 0:
            self.qp.fail_all(502)
            self._release()
            return
        self._later(DRAIN_QUIET_S, self._maybe_release)

    def _maybe_release(self) -> None:
        if self.state != TERMINATING:
            return
        if self.n == 0 and self.env._now - self.term_t >= DRAIN_QUIET_S - 1e-9:
            self._release()

    def _release(self) -> None:
        self.state = GONE
        self.sim.cluster.release(self)
        self.sim.on_pod_gone(self)
