"""Cheap one-shot callbacks on a SimPy environment: `call_later(env, delay, fn, *args) -> Call`.

The request path and the control loops are driven by callbacks, not by one SimPy process per request: a `Call` is
pushed on SimPy's own event queue through the public `Environment.schedule`, so it interleaves exactly with
ordinary SimPy events and processes. A `Call` costs one heap push and one pop; `cancel()` makes it a no-op
(SimPy events cannot be removed from the heap).

The KPA's 1 s scrapes have no events (`KpaLoop.catch_scrapes` runs them when something they read changes). Where
a scrape event at t = k (scheduled when scrape k − 1 ran) would have come between two events at exactly t = k,
order decides what it reads, so a Call landing on a whole second is sorted here: one scheduled after scrape
k − 1 ran (less than 1 s ahead, or exactly 1 s ahead once scrape k − 1 is done) would have run after scrape k,
so it runs the due scrapes first (`scrapes_first`; other events scheduled directly use it too). Calls off the
whole seconds (all of them, with continuous distributions) pay one float test.
"""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Any, Callable

from simpy.events import Event

NORMAL = 1  # simpy.events.NORMAL
URGENT = 0  # simpy.events.URGENT


def _fire(call: "Call") -> None:
    fn = call.fn
    if fn is not None:
        call.fn = None
        fn(*call.args)


_CALLBACKS = (_fire,)


class Call:
    """A scheduled function call; `cancel()` before it fires and it does nothing."""

    __slots__ = ("callbacks", "_ok", "_value", "fn", "args", "at")

    def __init__(self, fn: Callable[..., Any], args: tuple, at: float) -> None:
        self.callbacks = _CALLBACKS
        self._ok = True
        self._value = None
        self.fn = fn
        self.args = args
        self.at = at

    def cancel(self) -> None:
        self.fn = None

    @property
    def pending(self) -> bool:
        return self.fn is not None


class Recurring:
    """One event object rescheduled by its own callback (a loop's next run), instead of a new `Call` each time.

    No `scrapes_first` check: only for loops whose period is at least 2 s, scheduled earlier than any scrape
    of the second they land on (scrape k is scheduled at k − 1)."""

    __slots__ = ("callbacks", "_ok", "_value", "_run")

    def __init__(self, fn: Callable[[Any], None]) -> None:
        self._ok = True
        self._value = None
        self._run = (fn,)
        self.callbacks = None

    def schedule(self, env: Any, delay: float) -> None:
        self.schedule_at(env, env._now + delay)

    def schedule_at(self, env: Any, at: float) -> None:
        self.callbacks = self._run
        heappush(env._queue, (at, NORMAL, next(env._eid), self))   # env.schedule (simpy 4.1.2)


def grid_loops(env: Any) -> list:
    """The KPA loops on this environment whose scrapes run on whole seconds without events."""
    loops = env.__dict__.get("_grid_loops")
    if loops is None:
        loops = env._grid_loops = []
    return loops


def _late_loops(env: Any, at: float) -> list:
    """The loops whose scrape at t = `at` (a whole second) an event scheduled now would have followed."""
    now = env._now
    out = []
    for loop in env.__dict__.get("_grid_loops", ()):
        ticks = loop.sim.scrape_ticks
        if at <= ticks:
            continue                                  # done already, or before the loop's first scrape
        if now > at - 1.0 or (now == at - 1.0 and loop.started and ticks >= now):
            out.append(loop)
    return out


def scrapes_first(env: Any, at: float) -> Callable[[Any], None] | None:
    """For an event at `at`: None, or a callback to put before its own that runs the KPA scrapes it follows."""
    if at % 1.0:
        return None
    late = _late_loops(env, at)
    if not late:
        return None

    def hook(_event: Any) -> None:
        for loop in late:
            loop.catch_scrapes(at, inclusive=True)
    return hook


def call_later(env: Any, delay: float, fn: Callable[..., Any], *args: Any) -> Call:
    """Run `fn(*args)` at `env.now + delay` (delay >= 0); returns a cancellable handle."""
    at = env._now + delay
    call = Call(fn, args, at)
    if not at % 1.0:
        hook = scrapes_first(env, at)
        if hook is not None:
            call.callbacks = (hook, _fire)
    env.schedule(call, NORMAL, delay)
    return call


def run_until(env: Any, until: float) -> None:
    """`env.run(until=until)` with SimPy's `Environment.step` inlined (simpy 4.1.2, pinned): the same stop event
    (URGENT, scheduled as `run` schedules it), the same pops, callbacks and failure check, without a method call
    and a `try` per event. `run` also leaves its spent stop event queued (priority −1, no callbacks), popped first
    by the next run: nothing observable, so it is not copied."""
    at = float(until)
    if at <= env._now:
        raise ValueError(f"until ({at}) must be greater than the current simulation time")
    stop = Event(env)
    stop._ok = True
    stop._value = None
    env.schedule(stop, URGENT, at - env._now)
    queue = env._queue
    while True:
        env._now, _, _, event = heappop(queue)
        if event is stop:
            return
        callbacks, event.callbacks = event.callbacks, None
        for callback in callbacks:
            callback(event)
        if not event._ok and not hasattr(event, "_defused"):   # a failed event nobody defused crashes the run
            exc = type(event._value)(*event._value.args)
            exc.__cause__ = event._value
            raise exc
