"""The hot paths push events on SimPy's queue directly (`clock.Recurring`, `workload.NextArrival`,
`fused.FusedPath`), copying the body of `simpy.Environment.schedule` 4.1.2, the version requirements.txt pins.
These fail when SimPy's scheduling changes, so the copies are revisited with the version bump."""

from __future__ import annotations

import inspect
from heapq import heappush
from pathlib import Path

import simpy

ROOT = Path(__file__).resolve().parents[2]


def test_the_pinned_simpy_is_installed():
    pins = [line for line in (ROOT / "requirements.txt").read_text().splitlines() if line.startswith("simpy")]
    assert pins == [f"simpy=={simpy.__version__}"]


def test_schedule_is_the_heap_push_the_hot_paths_copy():
    body = inspect.getsource(simpy.Environment.schedule)
    assert "heappush(self._queue, (self._now + delay, priority, next(self._eid), event))" in body


def test_a_direct_push_interleaves_with_scheduled_events_as_schedule_would():
    env = simpy.Environment()
    order = []

    def event(name):
        ev = simpy.Event(env)
        ev._ok, ev._value = True, None
        ev.callbacks.append(lambda _e: order.append(name))
        return ev
    env.schedule(event("a"), simpy.events.NORMAL, 1.0)
    heappush(env._queue, (env._now + 1.0, simpy.events.NORMAL, next(env._eid), event("b")))
    env.schedule(event("c"), simpy.events.NORMAL, 1.0)
    heappush(env._queue, (env._now + 0.5, simpy.events.NORMAL, next(env._eid), event("d")))
    env.run()
    assert order == ["d", "a", "b", "c"]
