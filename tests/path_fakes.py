"""Small fakes for unit tests of the request path's components: a pod that records what it was given, a model
server that records submissions and cancellations, an activator and a queue-proxy on them, a request."""

from __future__ import annotations

import random
from types import SimpleNamespace

import simpy

from simulation.activator import Activator
from simulation.queue_proxy import QueueProxy
from simulation.request import Request


class FakePod:
    def __init__(self, pid: int, act_n: int = 0):
        self.id, self.act_n, self.act_ready, self.got = pid, act_n, True, []
        self.qp = SimpleNamespace(accept=lambda req: self.got.append(req))


class FakeServer:
    """Records submissions (request, done callback) and cancellations; the first byte at 100 + the request id."""

    def __init__(self):
        self.running, self.cancelled = [], []

    def check(self, req):
        return None

    def submit(self, req, done):
        self.running.append((req, done))

    def cancel(self, req):
        self.cancelled.append(req)

    def first_byte_at(self, req):
        return 100.0 + req.id


def activator(cc: int, pods: list, env: simpy.Environment | None = None, seed: int = 1) -> Activator:
    sim = SimpleNamespace(env=env or simpy.Environment(), rng_lb=random.Random(seed),
                          autoscaler=SimpleNamespace(poke=lambda: None), scrape_due=float("inf"))
    act = Activator(sim, cc)
    for p in pods:
        act.add_pod(p)
    return act


def queue_proxy(cc: int, server=None, fused=None) -> tuple[QueueProxy, object, list]:
    """(queue-proxy, its server, the (request id, status, component) answers it gave) on a fake pod and sim;
    `fused`: the Sim's FusedPath stand-in (None: the general path)."""
    done: list = []
    sim = SimpleNamespace(env=simpy.Environment(), complete=lambda r, status, comp: done.append((r.id, status, comp)))
    if fused is not None:
        sim.fused = fused
    server = server or FakeServer()
    return QueueProxy(sim, SimpleNamespace(enter=lambda r: None), server, cc, 10), server, done


def req(i: int) -> Request:
    return Request(i, i, 0.0, 0, 0.0, 10, 10, True)
