"""Kubernetes CrashLoopBackOff: how long the kubelet waits before restarting a crashed container (pure).

The kubelet keeps one exponential back-off per container (`pkg/kubelet/kubelet.go`:
`flowcontrol.NewBackOff(backOffPeriod, MaxContainerBackOff)` with `backOffPeriod = 10 * time.Second` and
`MaxContainerBackOff = 300 * time.Second`). `pkg/kubelet/kuberuntime/kuberuntime_manager.go: doBackOff`
restarts an exited container at once unless `IsInBackOffSince(key, finishedAt)` (entry present, not
expired, less than the current back-off since the crash); when it restarts it calls `Backoff.Next`, which
creates the entry at 10 s, or doubles it up to the cap, and stamps `lastUpdate` with the restart time
(`k8s.io/client-go/util/flowcontrol/backoff.go`). An entry expires when the crash comes more than
2 × maxDuration = 10 minutes after that stamp. So the first crash restarts at once (the docs' "initial
crash: immediate restart") and consecutive crashes then wait 10, 20, 40, 80, 160, 300, 300, … seconds.

Simplifications: no kubelet sync latency and no jitter (the kubelet's back-off has none); the alpha/beta
gates of Kubernetes ≥ 1.32 (`KubeletCrashLoopBackOffMax`, `ReduceDefaultCrashLoopBackOffDecay`: 1 s
initial, 60 s cap) are configurable through the constructor.
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
        self.restarts += 1
        if self._last_update is None or now - self._last_update > self.reset_after_s:
            self._delay = self.initial_s        # Next on a new/expired entry; not in back-off: restart now
            self._last_update = now
            return 0.0
        wait = self._delay                      # IsInBackOffSince until crash + current back-off
        self._delay = min(self._delay * 2.0, self.max_s)
        self._last_update = now + wait          # Next runs when the container is restarted
        return wait
