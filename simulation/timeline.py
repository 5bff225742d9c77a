"""What happened over time, in fixed time bins (bounded memory): the report's `timeline` object, for plots.

One bin per sampling interval (`series_interval_s`, default duration/200) over the whole run [0, duration_s],
warm-up included (the plots show the start-up transient; the summary figures exclude it).

Sampled at each bin's start: `in_system` (attempts sent and not yet answered: activator and queue-proxy
queues plus those on a GPU), `pending_pods` (pods waiting for a node: Kubernetes' Pending phase),
`gpu_memory` (mean over Ready pods of the fraction of GPU memory in use; for vLLM the fraction of
its pre-allocated KV-cache blocks in use, since vLLM reserves `gpu_memory_utilization` of the GPU at start).
Per bin, by the arrival time of each user request's first attempt: `requests`, `errors` ("<status> <component>"
→ count), `latency_ok_mean_s` / `latency_ok_max_s` of successful requests, and `latency_all_mean_s` of every
answered request (failures included: a 504 after 120 s counts its 120 s).
Most 200s come from the recorder's buffer (`metrics.Recorder.feed`), folded in before any other request here
and before `to_dict`, in order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulation.metrics import add_in_order


def memory_fraction(server: Any) -> float | None:
    """Fraction of the GPU memory a model server uses now (None when the server does not model memory)."""
    used_blocks = getattr(server, "used_blocks", None)  # vLLM-style engines: a property
    if used_blocks is not None:
        total = server.budget.num_blocks
        return used_blocks / total if total else 0.0
    in_use = getattr(server, "memory_in_use", None)
    if in_use is not None and getattr(server, "capacity", 0):
        return min(1.0, in_use() / server.capacity)
    return None


class Timeline:
    def __init__(self, duration_s: float, interval_s: float) -> None:
        self.interval = interval_s
        self.bins = max(1, int(duration_s / interval_s + 1e-9) + 1)
        n = self.bins
        self.t: list[float] = []
        self.in_system: list[int] = []
        self.pending: list[int] = []
        self.memory: list[float | None] = []
        self.requests = [0] * n
        self.errors: dict[str, list[int]] = {}
        self.ok_sum = [0.0] * n
        self.ok_max = [0.0] * n
        self.all_sum = [0.0] * n

    def sample(self, now: float, in_system: int, pending_pods: int, ready_servers: list) -> None:
        self.t.append(now)
        self.in_system.append(in_system)
        self.pending.append(pending_pods)
        fractions = [f for f in map(memory_fraction, ready_servers) if f is not None]
        self.memory.append(sum(fractions) / len(fractions) if fractions else None)

    feeder: Any = None   # a Recorder whose buffer holds some of this timeline's 200s (`Recorder.feed`)

    def ok(self, origin_t: float, t_done: float) -> None:
        """`final` of a 200 (first sent at `origin_t`)."""
        b = int(origin_t / self.interval)
        if b >= self.bins:
            b = self.bins - 1
        self.requests[b] += 1
        lat = t_done - origin_t
        self.all_sum[b] += lat
        self.ok_sum[b] += lat
        if lat > self.ok_max[b]:
            self.ok_max[b] = lat

    def ok_many(self, origin_t: np.ndarray, t_done: np.ndarray) -> None:
        """`ok` of each, in order, vectorised (`add_in_order`: the same floats). When the entries spread over many
        bins (a short `series_interval_s`: fewer than 32 per bin on average), a numpy pass per bin would cost more
        than `ok` one by one, so that is what runs."""
        b = np.minimum((origin_t / self.interval).astype(np.int64), self.bins - 1)
        lo = int(b.min())
        if (int(b.max()) - lo + 1) * 32 > len(b):
            ok = self.ok
            for origin, done in zip(origin_t.tolist(), t_done.tolist()):
                ok(origin, done)
            return
        lat = t_done - origin_t
        for j, c in enumerate(np.bincount(b - lo).tolist()):
            if c:
                i = j + lo
                self.requests[i] += c
                m = lat[b == i].max().item()
                if m > self.ok_max[i]:
                    self.ok_max[i] = m
        add_in_order(self.all_sum, b, lat)
        add_in_order(self.ok_sum, b, lat)

    def final(self, req: Any) -> None:
        """A user request's last attempt was answered."""
        if self.feeder is not None:
            self.feeder.flush()
        b = int(req.origin_t / self.interval)
        if b >= self.bins:
            b = self.bins - 1
        self.requests[b] += 1
        lat = req.t_done - req.origin_t
        self.all_sum[b] += lat
        if req.status == 200:
            self.ok_sum[b] += lat
            if lat > self.ok_max[b]:
                self.ok_max[b] = lat
        else:
            key = f"{req.status} {req.component}"
            row = self.errors.get(key)
            if row is None:
                row = self.errors[key] = [0] * self.bins
            row[b] += 1

    def to_dict(self) -> dict:
        if self.feeder is not None:
            self.feeder.flush()
        n = self.bins
        ok_n = [k - sum(row[b] for row in self.errors.values()) for b, k in enumerate(self.requests)]
        return {
            "interval_s": self.interval,
            "t": self.t, "in_system": self.in_system, "pending_pods": self.pending, "gpu_memory": self.memory,
            "bin_start_s": [i * self.interval for i in range(n)],
            "requests": self.requests,
            "errors": dict(sorted(self.errors.items())),
            "latency_ok_mean_s": [s / k if k else None for s, k in zip(self.ok_sum, ok_n)],
            "latency_ok_max_s": [m if k else None for m, k in zip(self.ok_max, ok_n)],
            "latency_all_mean_s": [s / k if k else None for s, k in zip(self.all_sum, self.requests)],
        }
