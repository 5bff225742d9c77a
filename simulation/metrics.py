"""What is recorded during a run (cheap per-request hooks; everything is summarised once at the end).

Per user request (status of its final attempt; counted when its first attempt arrived in the measurement
window [warmup_s, duration_s)): status, the component that produced a failure, end-to-end latency and
time to first byte of successes (from the first attempt's arrival: retries and back-off included), kept in
streaming estimators (`simulation/quantiles.py`) so memory does not grow with the number of requests.
Per attempt (sent in the window): status/component, pre-service wait (arrival → model server start:
activator + queue-proxy queues), sojourn time (for Little's law). Time integrals (requests in the system,
ready replicas, GPUs) are snapshotted at batch boundaries so batch means give confidence intervals.

The common record, a user's first attempt answered 200 inside the window (`record_ok`), is only buffered (four
floats) and folded in by numpy every 4,096 user requests, before any other record and before the report reads
the recorder (`flush`): the same sums in the same order, so the same floats (`add_in_order`). The same buffer
feeds the service's timeline (`feed`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simulation.quantiles import Quantiles
from simulation.request import SERVER


def _with_ok(failed: dict[tuple[int, str], int], total: int, ok_key: tuple[int, str]) -> dict[tuple[int, str], int]:
    """The failure table plus the successes (the total less the failures; 200s are not counted one by one)."""
    ok = total - sum(failed.values())
    return {ok_key: ok, **failed} if ok else dict(failed)


SMALL = 4 * 64   # buffered floats below which `flush` folds one by one


def add_in_order(acc: list, idx: np.ndarray, vals: np.ndarray) -> None:
    """`acc[i] += v` for each (i, v) of (idx, vals) in turn, vectorised: `np.cumsum` adds in sequence, so every
    sum is the loop's float."""
    for i in np.flatnonzero(np.bincount(idx)).tolist():
        acc[i] = np.cumsum(np.concatenate(((acc[i],), vals[idx == i])))[-1].item()


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
        self._ok: list[float] = []   # `record_ok` not yet folded in: t, t_start, t_first, t_done per request
        self.timeline: Any = None   # the Timeline whose 200s these are too (`feed`)

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

    def feed(self, timeline: Any) -> bool:
        """Make the buffered successes `timeline`'s finals too (one timeline per recorder: a fleet's new revision
        shares its recorder, not its timeline); False when another timeline has them."""
        if self.timeline is None:
            self.timeline = timeline
            timeline.feeder = self
        return self.timeline is timeline

    def record_ok(self, req: Any) -> bool:
        """`record(req, True)` for a final 200 (and the fed timeline's `final`). A user's first attempt sent in the
        window (the common case) is buffered, True; every 4,096th user request folds the buffer in where `record`
        checks the estimators. Otherwise False: recorded, not yet on the timeline."""
        t = req.t
        if req.attempt or not self.t0 <= t < self.t1 or not req.measured:
            self.record(req, True)
            return False
        self._ok.extend((t, req.t_start, req.t_first, req.t_done))
        n = self.n_final + 1
        self.n_final = n
        if not n & 4095:
            self.flush(fold=True)
        return True

    def flush(self, fold: bool = False) -> None:
        """Fold the buffered `record_ok`s in, as `record` would have one by one (with `fold`: the last one is the
        n_final-th, a multiple of 4,096, whose estimator check `record` runs between its two appends)."""
        if len(self._ok) < SMALL:
            if self._ok:
                self._fold_each(fold)
            return
        t, start, first, done = np.fromiter(self._ok, float, len(self._ok)).reshape(-1, 4).T
        del self._ok[:]
        if self.timeline is not None:
            self.timeline.ok_many(t, done)
        t0, t1, nb = self.t0, self.t1, self.nb
        self.overlap = np.cumsum(np.concatenate(((self.overlap,), np.minimum(done, t1) - t)))[-1].item()
        self.n_attempts += len(t)
        b = np.minimum(((t - t0) / self.blen).astype(np.int64), nb - 1)
        lat = done - t     # the sojourn; the latency too (origin_t is t for a first attempt)
        add_in_order(self.b_soj, b, lat)
        add_in_order(self.b_wait, b, start - t)
        add_in_order(self.b_lat, b, lat)
        for i, c in enumerate(np.bincount(b, minlength=nb).tolist()):
            self.b_wait_n[i] += c
            self.b_req[i] += c
        ttfb = first - t
        self.latency_all.buf.frombytes(lat.tobytes())
        if not fold:
            self.latency.buf.frombytes(lat.tobytes())
            self.ttfb.buf.frombytes(ttfb.tobytes())
            return
        self.latency.buf.frombytes(lat[:-1].tobytes())
        self.ttfb.buf.frombytes(ttfb[:-1].tobytes())
        self._fold_check()
        self.latency.append(lat[-1].item())
        self.ttfb.append(ttfb[-1].item())

    def _fold_each(self, fold: bool) -> None:
        """`flush` one by one (a few records: numpy's fixed cost would be more)."""
        vals, self._ok = self._ok, []
        t0, t1, blen, last = self.t0, self.t1, self.blen, self.nb - 1
        timeline = self.timeline
        for i in range(0, len(vals), 4):
            t, start, first, done = vals[i:i + 4]
            if timeline is not None:
                timeline.ok(t, done)
            self.overlap += (done if done < t1 else t1) - t
            b = int((t - t0) / blen)
            if b > last:
                b = last
            lat = done - t
            self.b_soj[b] += lat
            self.b_wait[b] += start - t
            self.b_wait_n[b] += 1
            self.b_req[b] += 1
            self.latency_all.append(lat)
            if fold and i + 4 == len(vals):
                self._fold_check()
            self.latency.append(lat)
            self.ttfb.append(first - t)
            self.b_lat[b] += lat
        self.n_attempts += len(vals) // 4

    def _fold_check(self) -> None:
        """Keep the estimators' buffers bounded (every 4,096 user requests)."""
        self.latency_all.fold_if_full()
        self.latency.fold_if_full()
        self.ttfb.fold_if_full()

    def record(self, req: Any, final: bool) -> None:
        """One answered attempt; `final` when it is the user's last attempt (no retry follows)."""
        if self._ok:
            self.flush()
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
        if not self.n_final & 4095:
            self._fold_check()
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
