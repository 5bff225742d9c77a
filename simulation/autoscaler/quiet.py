"""When a KPA tick can be skipped: the loop has settled and nothing it reads has moved since.

A tick (`KpaLoop.tick`) is a function of the window averages, the Ready and live pod counts, the configuration,
the decider's panic and scale-down-delay state and the PA's Active condition. After a tick that leaves the loop
settled, the next ticks give the same result as long as the `signature` is unchanged, so `KpaLoop._tick` skips
them, and `KpaLoop._past_idle` moves the tick event past those before the next event anywhere:
- scaled to zero with no data (`tick`: no record for a whole stable window, the decider's result is invalid and
  its last valid desired scale, 0 or −1 before any, stands; at 0 the PA is Inactive past its scale-to-zero timers,
  which only grow): nothing changes until a request pokes the autoscaler or a pod turns Ready (the desired scale
  changes only in a tick with data, which needs one of those);
- pods Ready with nothing to do (pinned by min-scale, or waiting out a scale-down): every bucket of both windows
  is 0.0 and the windows span all they can (the averages stay the same as zeros come in: x − 0.0 + 0.0 = x; a
  weighted window's is 0.0), no
  panic (its end is a time), the scale-down-delay window holds one value, the one recorded (the same comes in each
  tick: `skip_bookkeeping` records it), the desired scale > 0 (a scale to zero is a sequence of timers) and
  reached.
In both, the activator and the pods have seen no request for the scrapes still due (so those read 0: none in the
activator and nothing since its last report, none in a pod but through it since before the last scrape); any
request after that changes the activator's count or the pods' `direct_t`, which are in the signature.
"""

from __future__ import annotations

from math import ceil as _ceil, floor as _floor
from typing import Any

from simulation.autoscaler.aggregation import WeightedWindowBuckets


def _still(window: Any, now: float) -> bool:
    """The average read at `now` stays the same as zeros come in. The last write is the scrape just before `now`
    (second ⌈now⌉ − 1, as at every skipped tick: d = 1 s before a tick on a whole second, 0 for a revision
    ticking off them), and the window spans all it can, so the divisor n − d stays: (total − 0.0) / (n − d),
    or 0.0 for a 1-bucket window. A weighted window (`WeightedWindowBuckets`) reads its buckets, not the total,
    and weighs each by its age: it is still only when every bucket is 0.0 (its average 0.0, whatever the span),
    its 1-bucket panic window too."""
    n = window.n
    last = _ceil(now - 1e-9) - 1
    d = _floor(now + 1e-9) - last
    if window.last != last:
        return False
    if n == 1 and not isinstance(window, WeightedWindowBuckets):
        return True
    return last - window.first + 1 + d >= n and not any(window.buckets)


def signature(loop: Any) -> tuple:
    """Everything a settled tick reads that a request, a pod or a rollout can change. (The decider's kept desired
    scale, `loop.desired`, changes only in a tick with data; data comes only after one of these has changed.)"""
    sim = loop.sim
    return (sim.activator.count, sim.direct_t, len(sim.endpoints), len(sim.kpa_ready), sim.replicas, sim.n_live,
            loop.cfg, loop.reached_initial)


def settled(loop: Any, now: float, want: int, ready: int) -> bool:
    """After `loop.tick()` at `now` decided `want` (−1: unknown) with `ready` pods: are the next ticks the same?"""
    sim = loop.sim
    act = sim.activator
    if act.n or act.mark != (act.area, act.count) or sim.n_direct or sim.direct_t >= now - 1.0:
        return False                                  # a scrape still due reads a request
    if want <= 0:
        stable = loop.stable
        return (not ready and loop.state == "inactive" and loop.want == 0
                and (stable.last is None or _floor(now + 1e-9) - stable.last > stable.n))   # no data
    decider = loop.decider
    dw = decider.delay_window
    return (0 < want == sim.replicas == sim.n_live and decider.panic_time is None
            and (dw is None or not decider.spec.reachable or (len(dw.values) == 1
                                                             and dw.values[0][1] == decider.delay_in))
            and _still(loop.stable, now) and _still(loop.panic, now))


def skip_bookkeeping(loop: Any, now: float) -> None:
    """What a skipped tick still changes: the scale-down-delay window records the same desired scale (settled
    with pods: want > 0; scaled to zero the decider is not called)."""
    decider = loop.decider
    dw = decider.delay_window
    if dw is not None and loop.want > 0 and decider.spec.reachable:
        dw.record(now, decider.delay_in)
