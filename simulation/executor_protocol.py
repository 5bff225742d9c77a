"""The executor protocol: `map(fn, items) -> list`, returning `fn(item)` for each item in the items' order, and
`submit(fn, items)`, which starts the same work without waiting and returns a handle whose `result()` is that list
(`preflight check` simulates while it runs the Pulumi program); `SerialExecutor` runs it in this process (also what
the local pool uses for a single job, to skip process start)."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol


class Pending(Protocol):
    def result(self) -> list: ...


class Executor(Protocol):
    name: str

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list: ...

    def submit(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Pending: ...

    def close(self) -> None: ...


class Later:
    """A result to ask for later: `run()` waits for `futures` (work running elsewhere), or does the work itself
    when there are none (an executor that cannot run beside the caller)."""

    def __init__(self, run: Callable[[], list], futures: Iterable[Any] = ()) -> None:
        self._run, self._done = run, None
        self.futures = list(futures)  # concurrent.futures.Future, for wait(FIRST_COMPLETED)

    def done(self) -> bool:
        """True when `result()` will not wait (False for work not started)."""
        return self._done is not None or (bool(self.futures) and all(f.done() for f in self.futures))

    def result(self) -> list:
        if self._done is None:
            self._done = self._run()
        return self._done


class SerialExecutor:
    name = "serial"
    workers = 1

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list:
        return [fn(item) for item in items]

    def submit(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Pending:
        items = list(items)
        return Later(lambda: self.map(fn, items))

    def close(self) -> None:
        pass
