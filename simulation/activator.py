"""The activator: buffers requests while the revision is at zero or short of burst capacity, then proxies them.

knative/serving `pkg/activator` (reference knative-kserve.md §2):
- In the path when the SKS is in Proxy mode: want = 0 or excess burst capacity < 0
  (`pkg/reconciler/autoscaling/kpa/kpa.go: ReconcileKind`); with CC = 1 and the default TBC 211 that is always.
- Throttler (`pkg/activator/net/throttler.go`): queue effectively unbounded (depth 10000, MaxConcurrency MaxInt32),
  so the activator's own 503 is not modelled; capacity CC per ready pod (CC = 0: unlimited, waits for ≥ 1 pod).
- Load balancing (`lb_policy.go`): CC = 0 → power of two choices on in-flight; 1 ≤ CC ≤ 3 → first available in
  address order; CC > 3 → round robin skipping full pods.
- A pod gets traffic once its queue-proxy probe passes (≤ 0.2 s after the app is ready), before K8s Ready.
- `timeoutSeconds` (300 s) from arrival at the activator → 504 `activator request timeout`.
- Stats: concurrency from arrival (queued + proxied), pushed every 1 s; the first request of an idle revision
  sends an immediate stat and pokes the autoscaler (`handler/concurrency_reporter.go`, `multiscaler.go: Poke`).
Simplification: one activator instance (Knative runs ≥ 2 and splits pods with `assignSlice`; the total capacity
is the same).
"""

from __future__ import annotations

from heapq import heappop, heappush
from bisect import insort
from collections import deque
from operator import attrgetter
from typing import Any


_pod_id = attrgetter("id")


class Activator:
    def __init__(self, sim: Any, cc: int) -> None:
        self.sim = sim
        self.env = sim.env
        self.cc = cc
        self.first_available = 0 < cc <= 3   # the lb policy for 1 ≤ CC ≤ 3 (the `_free` heap)
        self.pods: list = []          # pods whose queue-proxy probe passed, in address (id) order
        self.waiting: deque = deque()
        self.nwait = 0
        self.n = 0                    # requests in the activator (queued + proxied, until answered)
        self.area = 0.0
        self.count = 0
        self.last = 0.0
        self.mark = (0.0, 0)
        self._rr = 0
        self._free: list = []         # heap of (pod id, pod) that may have room (first-available, CC ≤ 3)
        self.rng = sim.rng_lb

    def _acc(self) -> None:
        now = self.env._now
        if self.n:
            self.area += self.n * (now - self.last)
        self.last = now

    def scrape(self, period: float, at: float | None = None) -> tuple[float, int, bool]:
        """(avg concurrency, requests, had activity) since the last report, up to `at` (default now; nothing has
        changed in between: the KPA runs its due scrapes before every change)."""
        if at is None:
            self._acc()
        else:
            if self.n:
                self.area += self.n * (at - self.last)
            self.last = at
        a, c = self.mark
        self.mark = (self.area, self.count)
        return (self.area - a) / period, self.count - c, (self.area > a or self.count > c or self.n > 0)

    # -- path ---------------------------------------------------------------------------------------
    def accept(self, req: Any) -> None:
        req.via_activator = True
        now = self.env._now
        sim = self.sim
        if sim.scrape_due < now:
            sim.autoscaler.catch_scrapes(now)
        n = self.n
        if n:
            self.area += n * (now - self.last)
        self.last = now
        self.n = n + 1
        self.count += 1
        if not n:
            self.sim.autoscaler.poke()
        pod = self._pick()
        if pod is None:
            req.where = self
            self.waiting.append(req)
            self.nwait += 1
            return
        pod.act_n += 1
        if pod.act_n == self.cc and self.first_available:
            heappop(self._free)   # full now: its entry, the heap's top (`_pick`), is no candidate
        pod.qp.accept(req)

    def leave(self, req: Any) -> None:
        """Called when a request that came through the activator is answered."""
        now = self.env._now
        sim = self.sim
        if sim.scrape_due < now:
            sim.autoscaler.catch_scrapes(now)
        n = self.n
        self.area += n * (now - self.last)
        self.last = now
        self.n = n - 1
        pod = req.pod
        if pod is not None:
            pod.act_n -= 1
            if self.first_available and pod.act_n == self.cc - 1 and pod.act_ready:
                heappush(self._free, (pod.id, pod))
            if self.nwait:
                self._drain()

    def abandon(self, req: Any) -> None:
        req.where = None
        self.nwait -= 1

    def _pick(self) -> Any:
        pods = self.pods
        if not pods:
            return None
        cc = self.cc
        if cc == 0:
            if len(pods) == 1:
                return pods[0]
            a, b = self.rng.sample(pods, 2)
            return a if a.act_n <= b.act_n else b
        if cc <= 3:
            # first available in address order: the lowest id with room (lazy heap of candidates)
            free = self._free
            while free:
                p = free[0][1]
                if p.act_ready and p.act_n < cc:
                    return p
                heappop(free)
            return None
        n = len(pods)
        for i in range(n):
            p = pods[(self._rr + i) % n]
            if p.act_n < cc:
                self._rr = (self._rr + i + 1) % n
                return p
        return None

    def _drain(self) -> None:
        waiting = self.waiting
        while self.nwait:
            pod = self._pick()
            if pod is None:
                return
            req = waiting.popleft()
            if req.status:
                continue
            self.nwait -= 1
            req.where = None
            pod.act_n += 1
            if pod.act_n == self.cc and self.first_available:
                heappop(self._free)
            pod.qp.accept(req)

    def add_pod(self, pod: Any) -> None:
        insort(self.pods, pod, key=_pod_id)
        if self.first_available:
            heappush(self._free, (pod.id, pod))
        if self.nwait:
            self._drain()

    def remove_pod(self, pod: Any) -> None:
        if pod in self.pods:
            self.pods.remove(pod)
