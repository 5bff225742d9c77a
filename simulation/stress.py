"""Stress events on a fleet (simulation/fleet.py): a traffic spike, a rollout, the loss of a GPU node.

- Spike: an extra Poisson stream at (factor − 1) × the workload's rate at the spike's start, for `duration_s`,
  merged with the service's own arrivals (so the base traffic keeps its shape — gamma, trace …).
- Rollout (Knative): a new revision starts at max(min-scale, initial-scale) pods through the cold-start pipeline,
  on the GPUs actually free (or new nodes up to the node group's max; otherwise Pending). The Route keeps
  sending traffic to the old revision until the new one is Ready: the PodAutoscaler marks the scale target
  initialized once max(min-scale, initial-scale) pods are Ready (`pkg/reconciler/autoscaling/kpa/kpa.go`
  computeActiveCondition with activeThreshold), only then is the revision's ResourcesAvailable, so Ready
  (`pkg/apis/serving/v1/revision_lifecycle.go` PropagateAutoscalerStatus), and the Route points at it
  (`pkg/reconciler/route`). The old revision, now only in the route's reserve, is Unreachable
  (`pkg/reconciler/revision/resources/pa.go` reachability): its min-scale no longer applies
  (`PodAutoscaler.ScaleBounds`) and its decider neither rate-limits a scale-down nor holds the scale-down-delay
  (`pkg/autoscaler/scaling/autoscaler.go` Scale: maxScaleDown 0, the delay window only when Reachable), so its
  own KPA scales it down after the stable window (scale-to-zero grace; no scale-to-zero-pod-retention-period nor
  initial-scale for an Unreachable PA, `pkg/reconciler/autoscaling/kpa/scaler.go`). Not Ready within the progress
  deadline (the revision's `serving.knative.dev/progress-deadline` as its KPA reads it,
  `serving.kpa.progress_deadline_s`; without it config-deployment's 600 s, `pkg/deployment/config.go`) → the
  rollout failed; the old revision keeps serving.
  Simplifications: the new revision has the same settings as the old (a rollout of the config being deployed);
  Standard (RawDeployment) services roll with a Deployment's maxSurge, not modelled here.
- Node loss: simulation/node_loss.py (the activator keeps the lost pods until they are marked NotReady; the
  pods are deleted and replaced later still).
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, replace
from typing import Any, Iterator

from simulation.autoscaler.loop import KpaLoop
from simulation.clock import call_later
from simulation.workload import WorkloadSpec, rate_at, replayed_rows, size_sampler


@dataclass(frozen=True)
class Spike:
    factor: float = 3.0
    at_s: float = 120.0
    duration_s: float = 120.0


@dataclass(frozen=True)
class Rollout:
    """When the new revision starts. Its progress deadline is its own `serving.knative.dev/progress-deadline`
    as the simulated KPA reads it (`serving.kpa.progress_deadline_s`, 600 s without it): one number for the
    rollout verdict and the KPA's activation timeout, never a second setting."""
    at_s: float = 60.0


# ---------------------------------------------------------------------------------------------------
# Spike
# ---------------------------------------------------------------------------------------------------

def base_rate(spec: WorkloadSpec, t: float) -> float:
    """The workload's arrival rate at t (a trace: its mean rate over the replayed rows, `replayed_rows`)."""
    if spec.kind != "trace":
        return rate_at(spec, t)
    times, _, _, rows = replayed_rows(spec)
    span = (times[rows[-1]] - times[rows[0]]) * spec.time_scale if len(rows) > 1 else 1.0
    return len(rows) * spec.rate_scale / max(span, 1e-9)


def with_spike(base: Iterator, spec: WorkloadSpec, spike: Spike, rng: random.Random,
               until: float) -> Iterator[tuple[float, int, int]]:
    """The base arrivals merged with the spike's extra Poisson stream (own random stream)."""
    extra_rate = (spike.factor - 1.0) * base_rate(spec, spike.at_s)
    if extra_rate <= 0:
        return base
    sizes = size_sampler(spec, rng)
    if spec.kind == "trace":   # sizes: draw the replayed rows of the trace itself
        _, ins, outs, rows = replayed_rows(spec)
        pick = lambda: rows[rng.randrange(len(rows))]  # noqa: E731
        sizes = None

    def extra():
        t, end = spike.at_s, min(until, spike.at_s + spike.duration_s)
        while True:
            t += rng.expovariate(extra_rate)
            if t >= end:
                return
            if sizes is None:
                i = pick()
                yield t, ins[i], outs[i]
            else:
                n_i, n_o = sizes()
                yield t, n_i, n_o

    return heapq.merge(base, extra(), key=lambda a: a[0])


# ---------------------------------------------------------------------------------------------------
# Rollout
# ---------------------------------------------------------------------------------------------------

class RolloutDriver:
    """Starts the new revision at `at_s`, flips the route when it is Ready, records the outcome in `log`."""

    def __init__(self, old: Any, make_new: Any, spec: Rollout, log: dict) -> None:
        self.old, self.make_new, self.spec, self.log = old, make_new, spec, log
        self.new = None
        # The new revision has the old one's settings (a rollout of the config being deployed), so its deadline.
        self.deadline_s = old.scenario.serving.kpa.progress_deadline_s
        log.update(at_s=spec.at_s, progress_deadline_s=self.deadline_s, ready_s=None)
        call_later(old.env, spec.at_s, self._start)

    def _start(self) -> None:
        new = self.new = self.make_new()
        kpa = new.scenario.serving.kpa
        # kpa.go activeThreshold before the scale target is initialized: max(min-scale, initial-scale).
        self.need = max(1, kpa.min_scale, kpa.initial_scale)
        self.log["new_pods"] = new.initial_replicas()
        new.start(add_nodes=False, warm=False)
        if hasattr(new.autoscaler, "reached_initial"):
            new.autoscaler.reached_initial = False   # the PA holds initial-scale until that many pods are ready
        new.on_ready_hook = self._check
        self.log["new_revision"] = new

    def _check(self) -> None:
        new, old = self.new, self.old
        if old.route is not None or len(new.endpoints) < self.need:
            return
        elapsed = new.env.now - self.spec.at_s
        if elapsed > self.deadline_s:
            return
        self.log["ready_s"] = elapsed
        old.route = new
        if isinstance(old.autoscaler, KpaLoop):
            _unreachable(old.autoscaler)


def _unreachable(loop: KpaLoop) -> None:
    """The old revision's PA turns Unreachable: min-scale no longer applies (`PodAutoscaler.ScaleBounds`), nor do
    initial-scale and the scale-to-zero-pod-retention-period (`kpa/scaler.go: scale, lastPodRetention`: the loop
    reads `reachable`), and its decider's spec says so (`autoscaler.Update`), which `Scale` reads; the loop's
    settled state is re-read."""
    loop.cfg = replace(loop.cfg, min_scale=0)
    loop.reachable = False
    loop.decider.update(replace(loop.decider.spec, reachable=False))
    loop.quiet = None
