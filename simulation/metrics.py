"""What is recorded during a run (cheap per-request hooks; everything is summarised once at the end).

Per user request (status of its final attempt; counted when its first attempt arrived in the measurement
window [warmup_s, duration_s)): status, the component that produced a failure, end-to-end latency and
time to first byte of successes (from the first attempt's arrival: retries and back-off included), kept in
streaming estimators (`simulation/quantiles.py`) so memory does not grow with the number of requests.
Per attempt (sent in the window): status/component, pre-service wait (arrival → model server start:
activator + queue-proxy queues), sojourn time (for Little's law). Time integrals (requests in the system,
ready replicas, GPUs) are snapshotted at batch boundaries so batch means give confidence intervals.
"""

from __future__ import annotations

from typing import Any

from simulation.quantiles import Quantiles
from simulation.request import SERVER


def _with_ok(failed: dict[tuple[int, str], int], total: int, ok_key: tuple[int, str]) -> dict[tuple[int, str], int]:
    """The failure table plus the successes (the total less the failures; 200s are not counted one by one)."""
    ok = total - sum(failed.values())
    return {ok_key: ok, **failed} if ok else dict(failed)


class Recorder:
    def __init__(self, warmup: float, duration: float, batches: int = 20) -> None:
        self.t0 = warmup
        self.t1 = duration
        self.nb = batches
        self.blen = (duration - warmup) / batches
        self.final_failed: dict[tuple[int, str], int] = {}     # (status, component) → user requests, no 200s
        self.attempts_failed: dict[tuple[int, str], int] = {}  # (status, component) → attempts, no 200s
        self.latency = Quantiles()       # bounded memory: exact up to EXACT_LIMIT values, then within REL_ERR
        self.latency_all = Quantiles()   # every answered user request, failures at their time of failure
        self.ttfb = Quantiles()
        self.b_req = [0] * batches
        self.b_err: dict[int, list[int]] = {}
        self.b_soj = [0.0] * batches
        self.b_wait = [0.0] * batches
        self.b_wait_n = [0] * batches
        self.b_lat = [0.0] * batches
        self.n_final = 0
        self.n_attempts = 0
        self.incomplete = 0
        self.overlap = 0.0   # Σ over all attempts of the part of their sojourn inside the window

    @property
    def b_lat_n(self) -> list[int]:
        """Successful user requests per batch: all of them less the failures."""
        return [n - sum(err[b] for err in self.b_err.values()) for b, n in enumerate(self.b_req)]

    @property
    def final(self) -> dict[tuple[int, str], int]:
        """(status, component) → user requests by their final attempt (component "" for 200)."""
        return _with_ok(self.final_failed, self.n_final, (200, ""))

    @property
    def attempts(self) -> dict[tuple[int, str], int]:
        """(status, component) → attempts sent in the window (a 200 is always the model server's: only failures are
        counted, `test_attempt_counts_derived_at_report_time_equal_counting_each_attempt` checks it)."""
        return _with_ok(self.attempts_failed, self.n_attempts, (200, SERVER))

    def record_ok(self, req: Any) -> None:
        """`record(req, True)` for a final 200: inline for the common case, a user's first attempt sent in the
        window (the same floats in the same order)."""
        t = req.t
        t0 = self.t0
        t1 = self.t1
        if req.attempt or not t0 <= t < t1 or not req.measured:
            self.record(req, True)
            return
        t_done = req.t_done
        self.overlap += (t_done if t_done < t1 else t1) - t
        self.n_attempts += 1
        b = int((t - t0) / self.blen)
        if b >= self.nb:
            b = self.nb - 1
        lat = t_done - t    # the sojourn; the latency too (origin_t is t for a first attempt)
        self.b_soj[b] += lat
        self.b_wait[b] += req.t_start - t
        self.b_wait_n[b] += 1
        n = self.n_final + 1
        self.n_final = n
        self.b_req[b] += 1
        self.latency_all.append(lat)
        if not n & 4095:   # keep the estimators' buffers bounded
            self.latency_all.fold_if_full()
            self.latency.fold_if_full()
            self.ttfb.fold_if_full()
        self.latency.append(lat)
        self.ttfb.append(req.t_first - t)
        self.b_lat[b] += lat

    def record(self, req: Any, final: bool) -> None:
        """One answered attempt; `final` when it is the user's last attempt (no retry follows)."""
        t = req.t
        t0 = self.t0
        t1 = self.t1
        t_done = req.t_done
        status = req.status
        b = -1
        if t0 <= t < t1:
            self.overlap += (t_done if t_done < t1 else t1) - t
            self.n_attempts += 1
            if status != 200:
                key = (status, req.component)
                att = self.attempts_failed
                att[key] = att.get(key, 0) + 1
            b = int((t - t0) / self.blen)
            if b >= self.nb:
                b = self.nb - 1
            self.b_soj[b] += t_done - t
            if req.t_start >= 0:
                self.b_wait[b] += req.t_start - t
                self.b_wait_n[b] += 1
        elif t < t1 and t_done > t0:
            self.overlap += min(t_done, t1) - max(t, t0)
        if not (final and req.measured):
            return
        # the user request's final outcome
        self.n_final += 1
        if b < 0 or req.attempt:    # the batch of the first attempt's arrival (this one's, for a first attempt)
            b = int((req.origin_t - t0) / self.blen)
            if b >= self.nb:
                b = self.nb - 1
        self.b_req[b] += 1
        lat = t_done - req.origin_t
        self.latency_all.append(lat)
        if not self.n_final & 4095:   # keep the estimators' buffers bounded
            self.latency_all.fold_if_full()
            self.latency.fold_if_full()
            self.ttfb.fold_if_full()
        if status == 200:
            self.latency.append(lat)
            self.ttfb.append(req.t_first - req.origin_t)
            self.b_lat[b] += lat
        else:
            key = (status, req.component)
            fin = self.final_failed
            fin[key] = fin.get(key, 0) + 1
            arr = self.b_err.get(status)
            if arr is None:
                arr = self.b_err[status] = [0] * self.nb
            arr[b] += 1
