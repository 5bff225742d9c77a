"""The KPA decider: a pure port of knative/serving `pkg/autoscaler/scaling/autoscaler.go: Scale()`.

No SimPy here: the caller passes the time, the ready-pod count and the stable/panic window averages
(revision totals, as `MetricClient.StableAndPanicConcurrency` returns them) and gets a `ScaleResult`.
Panic state lives on the object, as in Knative. Steps, in Knative's order:

    rp = max(1, ready)
    maxUp = ceil(maxScaleUpRate·rp);  maxDown = floor(rp / maxScaleDownRate) if reachable else 0
    dspc = ceil(stable / TargetValue); dppc = ceil(panic / TargetValue)
    ds = clamp(dspc, maxDown, maxUp);  dp = clamp(dppc, maxDown, maxUp)
    activation scale: ds = max(ds, aS) if dspc > 0; dp likewise
    panic when dppc / rp >= panicThreshold (enter or extend); leave stableWindow after the last such tick
    in panic: desired = max over the panic period of max(ds, dp)     (never scale down in panic)
    scale-down delay: desired = max(desired over the last delay)     (aggregation/max/timewindow.go)
    EBC = floor(ready·TotalValue − TBC − panic)   (0 if TBC = 0, −1 if TBC = −1)

A panic threshold of 2 means: panic when the load is twice what the ready pods can take at target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

from simulation.autoscaler.aggregation import MaxWindow
from simulation.autoscaler.cluster_config import DEFAULT as _K

_ceil, _floor = math.ceil, math.floor   # both return int


@dataclass(frozen=True)
class DeciderSpec:
    """Knative `scaling.DeciderSpec`: TargetValue per pod, TotalValue (= target before utilisation), TBC ..."""

    target_value: float
    total_value: float
    target_burst_capacity: float = _K.target_burst_capacity   # Knative's defaultConfig(), stated once there
    panic_threshold: float = _K.panic_threshold_percentage / 100.0
    max_scale_up_rate: float = _K.max_scale_up_rate
    max_scale_down_rate: float = _K.max_scale_down_rate
    stable_window_s: float = _K.stable_window_s
    scale_down_delay_s: float = _K.scale_down_delay_s
    activation_scale: int = 1
    reachable: bool = True


class ScaleResult(NamedTuple):
    desired: int
    excess_burst_capacity: int
    valid: bool = True


INVALID = ScaleResult(0, 0, False)
_new = tuple.__new__   # ScaleResult(...) without the namedtuple's Python-level __new__ (one per tick)


class KpaDecider:
    """One revision's decider; `scale(now, ready_pods, stable, panic)` mirrors `Scale()`."""

    def __init__(self, spec: DeciderSpec, ready_pods: int = 0, now: float = 0.0) -> None:
        self.spec = spec
        self.panic_time: float | None = None
        self.max_panic_pods = 0
        # New: the scale-down-delay window is made once, from the first spec's delay.
        self.delay_window = MaxWindow(spec.scale_down_delay_s) if spec.scale_down_delay_s > 0 else None
        self.delay_in = 0   # the last desired scale recorded in the delay window
        # newAutoscaler: a decider created with more than one ready pod starts in panic, holding them.
        if ready_pods > 1:
            self.panic_time = now
            self.max_panic_pods = ready_pods

    def update(self, spec: DeciderSpec) -> None:
        """`autoscaler.Update`: swaps the spec and nothing else. The delay window stays the one `New` made (kept
        even if the new spec's delay differs or is 0; none is made for a decider created without a delay)."""
        self.spec = spec

    @property
    def in_panic(self) -> bool:
        return self.panic_time is not None

    def scale(self, now: float, ready_pods: int, stable: float, panic: float) -> ScaleResult:
        s = self.spec
        rp = ready_pods if ready_pods > 1 else 1
        max_up = _ceil(s.max_scale_up_rate * rp)
        max_down = _floor(rp / s.max_scale_down_rate) if s.reachable else 0
        target = s.target_value
        dspc = _ceil(stable / target)
        dppc = _ceil(panic / target)
        ds = dspc if dspc > max_down else max_down      # min(max(dspc, maxDown), maxUp)
        if ds > max_up:
            ds = max_up
        dp = dppc if dppc > max_down else max_down
        if dp > max_up:
            dp = max_up
        act = s.activation_scale
        if act > 1:
            if dspc > 0 and ds < act:
                ds = act
            if dppc > 0 and dp < act:
                dp = act
        panic_time = self.panic_time
        if dppc / rp >= s.panic_threshold:
            panic_time = self.panic_time = now
        elif panic_time is not None and panic_time + s.stable_window_s < now:
            panic_time = self.panic_time = None
            self.max_panic_pods = 0
        desired = ds
        if panic_time is not None:
            if dp > desired:
                desired = dp
            if desired > self.max_panic_pods:
                self.max_panic_pods = desired
            desired = self.max_panic_pods
        if self.delay_window is not None and s.reachable:
            self.delay_window.record(now, desired)
            self.delay_in = desired
            desired = self.delay_window.current()
        tbc = s.target_burst_capacity
        if tbc == 0:
            ebc = 0
        elif tbc < 0:
            ebc = -1
        else:
            ebc = _floor(ready_pods * s.total_value - tbc - panic)
        return _new(ScaleResult, (desired, ebc, True))
