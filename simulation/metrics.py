"""What is recorded during a run (cheap per-request hooks; everything is summarised once at the end).

Per user request (status of its final attempt; counted when its first attempt arrived in the measurement
window [warmup_s, duration_s)): status, the component that produced a failure, end-to-end latency and
time to first byte of successes (from the first attempt's arrival: retries and back-off included).
Per attempt (sent in the window): status/component, pre-service wait (arrival → model server start:
activator + queue-proxy queues), sojourn time (for Little's law). Time integrals (requests in the system,
ready replicas, GPUs) are snapshotted at batch boundaries so batch means give confidence intervals.
"""

from __future__ import annotations

from typing import Any


class Recorder:
    def __init__(self, warmup: float, duration: float, batches: int = 20) -> None:
        self.t0 = warmup
        self.t1 = duration
        self.nb = batches
        self.blen = (duration - warmup) / batches
        self.final: dict[tuple[int, str], int] = {}
        self.attempts: dict[tuple[int, str], int] = {}
        self.latency: list[float] = []
        self.ttfb: list[float] = []
        self.b_req = [0] * batches
        self.b_err: dict[int, list[int]] = {}
        self.b_att = [0] * batches
        self.b_soj = [0.0] * batches
        self.b_wait = [0.0] * batches
        self.b_wait_n = [0] * batches
        self.b_lat = [0.0] * batches
        self.b_lat_n = [0] * batches
        self.n_final = 0
        self.n_attempts = 0
        self.incomplete = 0
        self.overlap = 0.0   # Σ over all attempts of the part of their sojourn inside the window

    def _batch(self, t: float) -> int:
        b = int((t - self.t0) / self.blen)
        return b if b < self.nb else self.nb - 1

    def on_attempt(self, req: Any) -> None:
        t = req.t
        if t < self.t0 or t >= self.t1:
            if t < self.t1 and req.t_done > self.t0:
                self.overlap += min(req.t_done, self.t1) - max(t, self.t0)
            return
        self.overlap += min(req.t_done, self.t1) - t
        key = (req.status, req.component)
        self.attempts[key] = self.attempts.get(key, 0) + 1
        self.n_attempts += 1
        b = self._batch(t)
        self.b_att[b] += 1
        self.b_soj[b] += req.t_done - t
        if req.t_start >= 0:
            self.b_wait[b] += req.t_start - t
            self.b_wait_n[b] += 1

    def on_final(self, req: Any) -> None:
        if not req.measured:
            return
        status = req.status
        key = (status, req.component if status != 200 else "")
        self.final[key] = self.final.get(key, 0) + 1
        self.n_final += 1
        b = self._batch(req.origin_t)
        self.b_req[b] += 1
        if status == 200:
            lat = req.t_done - req.origin_t
            self.latency.append(lat)
            self.ttfb.append(req.t_first - req.origin_t)
            self.b_lat[b] += lat
            self.b_lat_n[b] += 1
        else:
            arr = self.b_err.get(status)
            if arr is None:
                arr = self.b_err[status] = [0] * self.nb
            arr[b] += 1
