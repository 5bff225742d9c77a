"""Kubernetes CrashLoopBackOff: how long the kubelet waits before restarting a crashed container (pure).

The kubelet keeps one exponential back-off per container (`pkg/kubelet/kubelet.go`:
`flowcontrol.NewBackOff(backOffPeriod, MaxContainerBackOff)` with `backOffPeriod = 10 * time.Second` and
`MaxContainerBackOff = 300 * time.Second`; `k8s.io/client-go/util/flowcontrol/backoff.go: Backoff.Next`
doubles the delay up to the cap, and starts again from the initial delay when the entry has not been
touched for `2 × maxDuration` = 10 minutes — "once a container has executed for 10 minutes without any
problems, the kubelet resets the restart backoff timer" (Kubernetes docs, Pod Lifecycle, Container restarts).
So consecutive crashes wait 10, 20, 40, 80, 160, 300, 300, … seconds.

Simplifications: the 10-minute reset is measured from the last restart (the last back-off update), as in
`flowcontrol.Backoff`; the alpha/beta gates of Kubernetes ≥ 1.32 (`KubeletCrashLoopBackOffMax`,
`ReduceDefaultCrashLoopBackOffDecay`: 1 s initial, 60 s cap) are configurable through the constructor.
"""

from __future__ import annotations

from dataclasses import dataclass, field

INITIAL_BACKOFF_S = 10.0  # kubelet backOffPeriod
MAX_BACKOFF_S = 300.0  # kubelet MaxContainerBackOff
RESET_AFTER_S = 600.0  # flowcontrol.Backoff: entry expires after 2 × maxDuration


@dataclass
class CrashLoopBackOff:
    """Per-container back-off state. `on_crash(now)` returns the delay before the next restart."""

    initial_s: float = INITIAL_BACKOFF_S
    max_s: float = MAX_BACKOFF_S
    reset_after_s: float = RESET_AFTER_S
    _delay: float = field(default=0.0, repr=False)
    _last_update: float | None = field(default=None, repr=False)
    restarts: int = 0

    def on_crash(self, now: float) -> float:
        """Record a crash at `now`; the seconds until the kubelet starts the container again."""
        expired = self._last_update is None or now - self._last_update > self.reset_after_s
        self._delay = self.initial_s if expired else min(self._delay * 2.0, self.max_s)
        self._last_update = now
        self.restarts += 1
        return self._delay

    @property
    def current_delay(self) -> float:
        return self._delay
