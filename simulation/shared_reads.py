"""Model loads that share one file system: the model cache's read throughput, divided among the pods loading.

Every pod that loads its weights from the model cache reads them from one shared file system (an EFS volume
mounted by every predictor). Each pod reads at its own rate (its `load_gib_s` draw, the storage's per-client
limit included); the file system as a whole reads at most `total` GiB/s (cluster `load_total_gib_s`: Amazon EFS
documents per-file-system read limits — Elastic 10–60 GiB/s by Region (EFS quotas), Provisioned three times its
provisioned MiB/s, Bursting three times its 100 MiB/s burst below 1 TiB stored: EFS User Guide, "Amazon EFS
performance specifications" and "Throughput modes"). When the pods loading at once ask for more, it is divided
max-min fairly (processor sharing with per-client caps, "water-filling"): every reader gets an equal share, and one
whose own rate is below that share keeps its rate and leaves the rest to the others. Rates change only when a reader
starts or stops. A pod whose rate never changes schedules its own end, `weights / rate` from its start (what the
simulation computed before the sharing existed, to the bit); once its rate changes its end is not known until it
comes, so the pod is told `load_moved(None)` then and `load_moved(end)` when the read is done: at most two calls
per load however many pods share the file system.

Cost: the readers at the equal share advance on one virtual clock (GiB each has read since it joined), so a start
or a stop moves no reader's bookkeeping but those that cross the share (a cap below or above it): O(log n) per
event, where updating every reader made n pods loading at once cost O(n²).

Simplifications: EFS does not document how it divides a saturated file system among its clients, so the equal
share is an idealisation; Bursting's burst credits are not modelled (the stated throughput holds through every
load); the reads of the prefetch DaemonSet and of other workloads on the same file system are not counted; a pod
restarted after a failed start reads its weights again in full (no page cache). EFS's per-client limit
(`modelCache.throughputMiBps`, within each pod's `load_gib_s`) applies per NFS client, i.e. per node, and is
applied per pod here: pods loading on one node at once may read up to (pods on the node) × that limit together,
so with several GPUs per node and the file system not the bound a load can take up to that many times longer than
simulated.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush
from itertools import count
from typing import Any

from simulation.clock import call_later

EPS = 1e-9
INF = math.inf


class Reader:
    __slots__ = ("pod", "cap", "shared", "told", "end", "vend", "gen")

    def __init__(self, pod: Any, gib: float, cap: float, now: float) -> None:
        self.pod = pod
        self.cap = cap        # the pod's own rate (GiB/s): its load_gib_s draw
        self.shared = False   # at the equal share (else at its own rate)
        self.told = True      # the pod holds its own end: its rate never changed
        self.end = now + gib / cap if cap > 0 else INF   # at its own rate: when it is done
        self.vend = 0.0       # at the share: the virtual clock's reading when it is done
        self.gen = 0          # bumped on every move: older heap entries are stale


def fair_rates(caps: list[float], total: float) -> list[float]:
    """Max-min fair shares of `total` among readers that each take at most their cap (same order as `caps`)."""
    out = [0.0] * len(caps)
    left, n = total, len(caps)
    for k, i in enumerate(sorted(range(n), key=lambda j: caps[j])):
        share = left / (n - k)
        out[i] = caps[i] if caps[i] <= share else share
        left -= out[i]
    return out


class SharedReads:
    """The pods reading from the model cache now. `start` a load, `stop` it (the pod was killed or deleted);
    a finished load leaves by itself. A pod whose rate changes is told `pod.load_moved(None)` (its end is no
    longer known) and later `pod.load_moved(end)` when its read is done.

    Two groups: readers at their own rate (`shared` False: a fixed end; heaps by end and by cap, highest first)
    and readers at the equal share `level` (heaps by virtual end and by cap, lowest first). The virtual clock `v`
    runs at `level` GiB/s: a reader at the share that joined with g GiB left is done when `v` reaches `vend`."""

    def __init__(self, env: Any, total_gib_s: float) -> None:
        self.env = env
        self.total = total_gib_s
        self.readers: dict[Any, Reader] = {}
        self._wake = None     # the Call at the next end while a pod waits to be told or the reads are shared
        self._seq = count()
        self._own_end: list = []    # (end, seq, gen, reader), readers at their own rate
        self._own_cap: list = []    # (-cap, ...)
        self._sh_vend: list = []    # (vend, ...), readers at the share
        self._sh_cap: list = []     # (cap, ...)
        self._own_sum = 0.0         # the caps of the readers at their own rate
        self._n_shared = 0
        self._untold = 0            # readers whose pod waits for load_moved(end)
        self.level = INF            # GiB/s each reader at the share reads
        self.v, self._v_at = 0.0, 0.0
        self.moves = 0              # load_moved calls made (a cost the tests bound)

    @property
    def saturated(self) -> bool:
        return self._n_shared > 0

    def start(self, pod: Any, gib: float, cap: float) -> float | None:
        """A pod starts reading `gib` GiB at up to `cap` GiB/s: the seconds it takes at its own rate, or None when
        it starts at a share (its end then comes by `load_moved(end)`)."""
        now = self.env._now
        self._advance(now)
        told = self._finish(now)
        old = self.readers.pop(pod, None)
        if old is not None:
            self._drop(old)
        reader = self.readers[pod] = Reader(pod, gib, cap, now)
        self._own(reader)
        told += self._level(now)
        self._schedule(now)
        self._tell(told, reader)
        if reader.shared or not reader.told:
            reader.told = False
            return None
        return gib / cap if cap > 0 else INF

    def stop(self, pod: Any) -> None:
        """The pod stops reading (killed, restarted, deleted): its share goes to the others."""
        now = self.env._now
        reader = self.readers.pop(pod, None)
        if reader is None:
            return
        self._advance(now)
        self._drop(reader)
        told = self._finish(now)
        told += self._level(now)
        self._schedule(now)
        self._tell(told, None)

    def reading(self, pod: Any) -> bool:
        reader = self.readers.get(pod)
        return reader is not None and self._end(reader) > self.env._now + EPS

    # -- bookkeeping ----------------------------------------------------------------------------------
    def _end(self, r: Reader) -> float:
        if not r.shared:
            return r.end
        return self._v_at + (r.vend - self.v) / self.level if self.level > 0 else INF

    def _advance(self, now: float) -> None:
        if self._n_shared and self.level < INF:
            self.v += self.level * (now - self._v_at)
        self._v_at = now

    def _push(self, heap: list, key: float, r: Reader) -> None:
        heappush(heap, (key, next(self._seq), r.gen, r))

    def _own(self, r: Reader) -> None:
        r.shared = False
        r.gen += 1
        self._own_sum += r.cap
        self._push(self._own_end, r.end, r)
        self._push(self._own_cap, -r.cap, r)

    def _share(self, r: Reader) -> None:
        r.shared = True
        r.gen += 1
        self._n_shared += 1
        self._push(self._sh_vend, r.vend, r)
        self._push(self._sh_cap, r.cap, r)

    def _drop(self, r: Reader) -> None:
        """`r` leaves its group (stopped or done)."""
        if r.shared:
            self._n_shared -= 1
        else:
            self._own_sum -= r.cap
        if not r.told:
            self._untold -= 1
        r.gen += 1
        self._no_drift()

    def _no_drift(self) -> None:
        if len(self.readers) == self._n_shared:   # none at its own rate: their sum is exactly 0
            self._own_sum = 0.0

    def _top(self, heap: list) -> Reader | None:
        """The first live entry of `heap` (stale ones dropped)."""
        while heap:
            _, _, gen, r = heap[0]
            if gen == r.gen and self.readers.get(r.pod) is r:
                return r
            heappop(heap)
        return None

    def _finish(self, now: float) -> list:
        """Readers done by now leave: [(reader, end)] of those whose pods wait to be told."""
        done = []
        for heap in (self._own_end, self._sh_vend):
            while (r := self._top(heap)) is not None and (end := self._end(r)) <= now + EPS:
                heappop(heap)
                del self.readers[r.pod]
                if not r.told:
                    done.append((r, max(now, end)))
                self._drop(r)
        return done

    def _level(self, now: float) -> list:
        """Water-filling: readers whose cap is above the share join it, those below leave it. Returns the readers
        whose pods must be told their end is no longer known: [(reader, None)]."""
        told = []
        while True:   # a reader at its own rate above the share joins it (the share then rises, below its cap)
            self.level = self._share_level()
            r = self._top(self._own_cap)
            if r is None or r.cap <= self.level:
                break
            left = max(0.0, (r.end - now) * r.cap)
            self._own_sum -= r.cap
            r.vend = self.v + left
            self._share(r)
            self._no_drift()
            if r.told:
                r.told = False
                self._untold += 1
                told.append((r, None))
        while self._n_shared:   # a reader at the share whose cap is below it reads at its cap (the share rises)
            r = self._top(self._sh_cap)
            if r is None or r.cap >= self.level:
                break
            left = max(0.0, r.vend - self.v)
            self._n_shared -= 1
            r.end = now + left / r.cap
            self._own(r)
            self.level = self._share_level()
        return told

    def _share_level(self) -> float:
        if self._n_shared:
            return (self.total - self._own_sum) / self._n_shared
        return INF if self._own_sum <= self.total else -INF

    def _schedule(self, now: float) -> None:
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if not (self._n_shared or self._untold):
            return
        ends = [self._end(r) for r in (self._top(self._own_end), self._top(self._sh_vend)) if r is not None]
        if ends:
            self._wake = call_later(self.env, max(0.0, min(ends) - now), self._done)

    def _tell(self, told: list, skip: Reader | None) -> None:
        for r, end in told:
            if r is not skip:
                self.moves += 1
                r.pod.load_moved(end)

    def _done(self) -> None:
        """A load ended while pods wait or the reads are shared: tell its pod; the others may speed up."""
        self._wake = None
        now = self.env._now
        self._advance(now)
        told = self._finish(now)
        told += self._level(now)
        self._schedule(now)
        self._tell(told, None)


# -- the pod's side: its start-up events while it reads (simulation/pod.py) -----------------------------------
def begin_load(pod: Any, weights: float, rate: float, warm: float, kill: float | None) -> None:
    """The container started: read `weights` GiB at up to `rate` GiB/s (shared with the pods loading at once
    when the cluster has a file-system limit), warm up `warm` s, unless the startup probe kills it after `kill` s.
    While the read is shared `pod.loading` holds (the pending Call, warm, the kill time) for `load_moved`."""
    reads, now = pod.sim.cluster.reads, pod.env._now
    load = weights / rate if reads is None else reads.start(pod, weights, rate)
    kill_at = None if kill is None else now + kill
    if load is None:   # at a share: its end comes by load_moved(end); the probe may kill it meanwhile
        pod.startup_phases["load_s"] = weights / min(rate, reads.level)   # at the share now: an estimate
        pod.startup_phases["warmup_s"] = warm
        call = None if kill is None else pod._later(kill, pod._restart, "startupProbe failed")
        pod.loading = (call, warm, kill_at)
        return
    pod.startup_phases["load_s"] = load
    pod.startup_phases["warmup_s"] = warm
    call = pod._schedule_ready(load + warm, kill)
    if reads is not None and reads.reading(pod):
        pod.loading = (call, warm, kill_at)


def load_moved(pod: Any, end: float | None) -> None:
    """`SharedReads` moved the pod's read: its end is no longer known (None), or the weights are in at `end`."""
    if pod.loading is None:
        return
    call, warm, kill_at = pod.loading
    if call is not None:
        call.cancel()
        if call in pod._calls:   # cancelled Calls do not pile up on the pod
            pod._calls.remove(call)
    now = pod.env._now
    kill = None if kill_at is None else max(0.0, kill_at - now)
    if end is None:
        call = None if kill is None else pod._later(kill, pod._restart, "startupProbe failed")
    else:
        pod.startup_phases["load_s"] = end - pod.container_start
        call = pod._schedule_ready(end + warm - now, kill)
    pod.loading = (call, warm, kill_at)
