"""The common request in one place: through the activator to a pod with a free slot, served by a plain simple server.

The general path is a chain of small components, one per hop: on arrival `Sim._arrive` → `Sim.send` →
`Activator.accept` (its stats, `_pick`) → `QueueProxy.accept` → `Pod.enter` → `SimpleServer.start`; on completion
`QueueProxy._on_done` (via the server's `_finish`) → `Sim.complete` → `Pod.leave` → `Activator.leave` →
`Recorder.record`, `Timeline.final`. Knative's Proxy mode keeps the activator in the path whenever excess burst
capacity is negative, which with CC = 1 and the default target-burst-capacity (211) is always
(`pkg/reconciler/autoscaling/kpa/kpa.go`), so this chain runs for nearly every request of a typical
scale-per-request service.

`FusedPath` does that common case in one arrival and one completion callback with the same state changes in the
same order (same floats, same draws, same events): an arrival proxied by the activator (Proxy mode or no Ready
pod; first-available balancing, 1 ≤ CC ≤ 3) to a pod whose queue-proxy has a free slot and holds no request but
the activator's, and the completion of a request on a plain simple server with 200 (a user's first attempt in
the measurement window is only buffered by the recorder, `Recorder.record_ok`). Anything else (a 429 from the
gateway's bucket, a request queued in the activator or the queue-proxy, a direct one, a retry, a fleet's route
to a newer revision) takes the general path at the first point it differs. `queue_proxy.FUSED = False` turns
this off; tests/simulation/test_fused_path.py runs randomized scenarios both ways and requires identical
reports.
"""

from __future__ import annotations

from heapq import heappop, heappush
from math import log as _log
from typing import Any

from simulation.clock import scrapes_first
from simulation.pod import TERMINATING
from simulation.request import GATEWAY, SERVER, Request
from simulation.server import SimpleServer


class FusedPath:
    __slots__ = ("sim", "env", "act", "free", "cc", "cc1", "rec", "timeline", "client", "dq_client", "gateway",
                 "dqs", "done_cb", "t0", "base", "feeds")

    def __init__(self, sim: Any) -> None:
        self.sim = sim
        self.env = sim.env
        self.done_cb = (self.done,)    # the completion callbacks of a request on a plain simple server

    def bind(self) -> None:
        """Take the Sim's parts once it has started (a fleet's new revision shares its recorder and client)."""
        sim = self.sim
        self.act = sim.activator
        self.free = sim.activator._free if sim.activator is not None else None
        self.cc = sim.cc
        # act_n at which a pod has room again for the first-available heap (never, for the other lb policies)
        self.cc1 = sim.cc - 1 if sim.activator is not None and sim.activator.first_available else -2
        self.rec = sim.rec
        self.timeline = sim.timeline
        self.feeds = sim.rec.feed(sim.timeline)    # the recorder's buffer is this timeline's too
        self.client = sim.client
        self.dq_client = sim.dq_client
        self.gateway = sim.gateway if sim.rate_limited else None
        self.dqs = tuple(q for q in (sim.dq_gateway, sim.dq_knative) if q is not None)
        self.t0 = sim.rec.t0
        spec = sim.scenario.server.spec
        expo = sim.server_cls is SimpleServer and spec.distribution == "exponential" and \
            not (spec.per_input_token_s or spec.per_output_token_s or spec.slowdown_per_concurrent)
        self.base = spec.base_s if expo else None

    def takes_arrivals(self) -> bool:
        """Whether this service's arrivals start here: Knative, 1 ≤ CC ≤ 3, a plain simple server."""
        sim = self.sim
        return (sim.knative and 0 < self.cc <= 3 and sim.server_cls is SimpleServer
                and SimpleServer.is_plain(sim.scenario.server.spec))

    def arrive(self, ev: Any) -> None:
        """A workload arrival (the `NextArrival` event): `Sim._arrive` + `send` (`_send`), then the next arrival
        (`NextArrival.schedule`)."""
        sim = self.sim
        now = self.env._now
        oid = sim._origin
        sim._origin = oid + 1
        if sim.route is not None or not sim.proxy and sim.endpoints:
            sim.send(oid, now, 0, ev.nin, ev.nout, now >= self.t0)   # a fleet's route; Serve mode
        else:
            self._send(oid, now, ev.nin, ev.nout)
        nxt = next(sim._arr, None)
        if nxt is not None:                 # `NextArrival.schedule(env, nxt[0] - now, nxt[1], nxt[2])`, inline
            env = self.env
            at, ev.nin, ev.nout = nxt
            at = now + (at - now)
            if at % 1.0:
                ev.callbacks = ev.fn
            else:
                hook = scrapes_first(env, at)
                ev.callbacks = ev.fn if hook is None else (hook,) + ev.fn
            heappush(env._queue, (at, 1, next(env._eid), ev))   # Environment.schedule (simpy 4.1.2)

    def _send(self, oid: int, now: float, nin: int, nout: int) -> None:
        """`Sim.send` + `Activator.accept` + `QueueProxy.accept` + `Pod.enter` + `SimpleServer.start`."""
        sim = self.sim
        req = Request(sim._rid, oid, now, 0, now, nin, nout, now >= self.t0)
        sim._rid += 1
        sim.area_sys += sim.n_sys * (now - sim._last)
        sim._last = now
        sim.n_sys += 1
        if self.dq_client is not None:
            self.dq_client.add(req)
        if self.gateway is not None:
            status = self.gateway.admit()
            if status is not None:
                sim.complete(req, status, GATEWAY)
                return
        for q in self.dqs:
            q.add(req)
        # Activator.accept
        req.via_activator = True
        if sim.scrape_due < now:
            sim.autoscaler.catch_scrapes(now)
        act = self.act
        n = act.n
        if n:
            act.area += n * (now - act.last)
        act.last = now
        act.n = n + 1
        act.count += 1
        if not n:
            sim.autoscaler.poke()
        free = self.free
        cc = self.cc
        while free:        # Activator._pick: first available in address order
            pod = free[0][1]
            if pod.act_ready and pod.act_n < cc:
                break
            heappop(free)
        else:
            req.where = act
            act.waiting.append(req)
            act.nwait += 1
            return
        a = pod.act_n + 1
        pod.act_n = a
        if a == cc:
            heappop(free)
        qp = pod.qp
        r = qp.running
        if r >= cc or r + qp.nwait >= qp.slots or pod.n_direct:
            qp.accept(req)
            return
        # QueueProxy.accept + Pod.enter (a proxied request, no direct one in the pod: no KPA area to add)
        req.t_qp = now
        req.pod = pod
        pod.last = now
        pod.n += 1
        req.where = qp
        req.t_start = now
        qp.running = r + 1
        server = pod.server
        base = self.base
        if base is None:
            server.start(req, self.done_cb, qp._done_cb, 0.0)
            return
        # SimpleServer.start for an exponential service time without token terms or slowdown
        total = base * -_log(1.0 - server._random())
        server.calls[req] = (qp._done_cb, total)
        env = self.env
        at = now + total
        if at % 1.0:
            req.callbacks = self.done_cb
        else:
            hook = scrapes_first(env, at)
            req.callbacks = self.done_cb if hook is None else (hook,) + self.done_cb
        heappush(env._queue, (at, 1, next(env._eid), req))   # Environment.schedule (simpy 4.1.2)

    def done(self, req: Any) -> None:
        """A plain simple server finished `req` (its completion event): `SimpleServer._finish` +
        `QueueProxy._on_done` + `Sim.complete` + `Pod.leave` + `Activator.leave` with status 200."""
        pod = req.pod
        entry = pod.server.calls.pop(req, None)
        if entry is None:
            return   # cancelled or failed: the void completion event of an answered request
        qp = pod.qp
        qp.running -= 1
        req.where = None
        req.t_first = req.t_start + entry[1]
        if qp.nwait and not qp.dead:
            qp._next()
        if req.status:
            return
        sim = self.sim
        now = self.env._now
        req.status = 200
        req.component = SERVER
        req.t_done = now
        if req.via_activator and not pod.n_direct:
            if sim.scrape_due < now:
                sim.autoscaler.catch_scrapes(now)
            n = pod.n - 1          # Pod.leave: no KPA area to add (nothing direct in the pod), no HPA
            pod.last = now
            pod.n = n
            if not n and pod.state == TERMINATING:
                pod._maybe_release()
            act = self.act         # Activator.leave
            n = act.n
            act.area += n * (now - act.last)
            act.last = now
            act.n = n - 1
            a = pod.act_n - 1
            pod.act_n = a
            if a == self.cc1 and pod.act_ready:
                heappush(self.free, (pod.id, pod))
            if act.nwait:
                act._drain()
        else:
            pod.leave(req)
            if req.via_activator:
                self.act.leave(req)
        sim.area_sys += sim.n_sys * (now - sim._last)
        sim._last = now
        sim.n_sys -= 1
        client = self.client
        if client.tokens is not None:
            client.on_response(req)     # the retry budget earns a token; a 200 is never retried: final
        if not self.feeds:
            self.rec.record(req, True)
            self.timeline.final(req)
        elif not self.rec.record_ok(req):
            self.timeline.final(req)
