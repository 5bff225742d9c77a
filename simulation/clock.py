"""Cheap one-shot callbacks on a SimPy environment: `call_later(env, delay, fn, *args) -> Call`.

The request path is driven by callbacks, not by one SimPy process per request: a `Call` is pushed on
SimPy's own event queue through the public `Environment.schedule`, so it interleaves exactly with
ordinary SimPy events and processes (the autoscaler loops are SimPy processes). A `Call` costs one heap
push and one pop; `cancel()` makes it a no-op (SimPy events cannot be removed from the heap).
"""

from __future__ import annotations

from typing import Any, Callable

NORMAL = 1  # simpy.events.NORMAL


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


def call_later(env: Any, delay: float, fn: Callable[..., Any], *args: Any) -> Call:
    """Run `fn(*args)` at `env.now + delay` (delay >= 0); returns a cancellable handle."""
    call = Call(fn, args, env._now + delay)
    env.schedule(call, NORMAL, delay)
    return call
