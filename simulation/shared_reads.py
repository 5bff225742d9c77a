"""Model loads that share one file system: the model cache's read throughput, divided among the pods loading.

Every pod that loads its weights from the model cache reads them from one shared file system (an EFS volume
mounted by every predictor). Each pod reads at its own rate (its `load_gib_s` draw, the storage's per-client
limit included); the file system as a whole reads at most `total` GiB/s (cluster `load_total_gib_s`: Amazon EFS
documents per-file-system read limits — Elastic 20–60 GiB/s by Region, Provisioned three times its provisioned
MiB/s, Bursting three times its 100 MiB/s burst below 1 TiB stored: EFS User Guide, "Amazon EFS performance
specifications" and "Throughput modes"). When the pods loading at once ask for more, it is divided max-min fairly
(processor sharing with per-client caps, "water-filling"): every reader gets an equal share, and one whose own
rate is below that share keeps its rate and leaves the rest to the others. Rates change only when a reader
starts or stops; a reader's remaining bytes are brought up to date only then, so a pod whose rate never changes
finishes at exactly `weights / rate` (what the simulation computed before the sharing existed).

Simplifications: EFS does not document how it divides a saturated file system among its clients, so the equal
share is an idealisation; Bursting's burst credits are not modelled (the stated throughput holds through every
load); the reads of the prefetch DaemonSet and of other workloads on the same file system are not counted; a pod
restarted after a failed start reads its weights again in full (no page cache).
"""

from __future__ import annotations

from typing import Any

from simulation.clock import call_later

EPS = 1e-9


class Reader:
    __slots__ = ("pod", "cap", "left", "rate", "at", "end")

    def __init__(self, pod: Any, gib: float, cap: float, now: float) -> None:
        self.pod = pod
        self.cap = cap        # the pod's own rate (GiB/s): its load_gib_s draw
        self.left = gib       # GiB still to read at `at`
        self.rate = cap       # GiB/s now
        self.at = now
        self.end = now + gib / cap if cap > 0 else float("inf")


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
    a finished load leaves by itself. A pod whose rate changes is told its new end (`pod.load_moved(end)`)."""

    def __init__(self, env: Any, total_gib_s: float) -> None:
        self.env = env
        self.total = total_gib_s
        self.readers: dict[Any, Reader] = {}
        self._wake = None     # the Call at the first end while the file system is saturated

    @property
    def saturated(self) -> bool:
        return sum(r.cap for r in self.readers.values()) > self.total

    def start(self, pod: Any, gib: float, cap: float) -> float:
        """A pod starts reading `gib` GiB at up to `cap` GiB/s: seconds the read takes at the shares from now."""
        now = self.env._now
        self._purge(now)
        self.readers.pop(pod, None)
        reader = self.readers[pod] = Reader(pod, gib, cap, now)
        if self.saturated or any(r.rate != r.cap for r in self.readers.values()):
            self._rebalance(now, reader)
        return gib / reader.rate if reader.rate > 0 else float("inf")

    def stop(self, pod: Any) -> None:
        """The pod stops reading (killed, restarted, deleted): its share goes to the others."""
        reader = self.readers.pop(pod, None)
        if reader is not None and reader.end > self.env._now + EPS:
            self._rebalance(self.env._now, None)

    def reading(self, pod: Any) -> bool:
        reader = self.readers.get(pod)
        return reader is not None and reader.end > self.env._now + EPS

    def _purge(self, now: float) -> None:
        for pod in [p for p, r in self.readers.items() if r.end <= now + EPS]:
            del self.readers[pod]

    def _rebalance(self, now: float, new: Reader | None) -> None:
        """Give every reader its fair share; tell each pod (but `new`'s, which `start` answers) whose end moved."""
        self._purge(now)
        readers = list(self.readers.values())
        rates = fair_rates([r.cap for r in readers], self.total)
        for r, rate in zip(readers, rates):
            if rate == r.rate:
                continue
            r.left = max(0.0, r.left - r.rate * (now - r.at))
            r.at, r.rate = now, rate
            r.end = now + r.left / rate if rate > 0 else float("inf")
            if r is not new:
                r.pod.load_moved(r.end)
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        if self.saturated or any(r.rate != r.cap for r in readers):
            first = min((r.end for r in readers), default=None)
            if first is not None:
                self._wake = call_later(self.env, max(0.0, first - now), self._done)

    def _done(self) -> None:
        """A load ended while the file system was shared: the others speed up."""
        self._wake = None
        self._rebalance(self.env._now, None)
