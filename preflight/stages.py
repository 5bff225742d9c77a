"""How `preflight check` spends its time: stage timings (`--timings`) and the SLO gate run beside the program.

The gate's simulations need only the stack config, so they start first, on the executor's worker processes,
while this process imports the Pulumi providers and runs the program under mocks, validates the manifests and
evaluates the policies; the gate's result is collected last. With an in-process executor (`--workers 1`)
there is nothing to overlap with (one interpreter, one GIL), so the gate simply runs after the other stages.
"""

from __future__ import annotations

import resource
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Callable, Iterator


def _cpu(who: int) -> float:
    use = resource.getrusage(who)
    return use.ru_utime + use.ru_stime


class Timings:
    """Wall-clock and this process's CPU seconds per stage, in the order the stages finished, and the CPU
    seconds of the whole command: this process and its worker processes (counted once they have exited)."""

    def __init__(self, start: float | None = None) -> None:
        self.rows: list[tuple[str, float, float | None]] = []
        self.start = time.perf_counter() if start is None else start
        self._children0 = _cpu(resource.RUSAGE_CHILDREN)
        self._lock = threading.Lock()
        self.notes: list[str] = []

    def add(self, name: str, wall: float, cpu: float | None) -> None:
        with self._lock:
            self.rows.append((name, wall, cpu))

    @contextmanager
    def stage(self, name: str, cpu: bool = True) -> Iterator[None]:
        w, c = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - w, time.process_time() - c if cpu else None)

    def total(self) -> float:
        return time.perf_counter() - self.start

    def cpu(self) -> tuple[float, float]:
        """(this process's CPU s since it started, its exited workers' CPU s since these timings began)."""
        return _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN) - self._children0

    def to_dict(self) -> dict:
        me, workers = self.cpu()
        return {"stages": [{"stage": n, "wall_s": round(w, 4), "cpu_s": None if c is None else round(c, 4)}
                           for n, w, c in self.rows], "total_wall_s": round(self.total(), 4),
                "cpu_s": {"this_process": round(me, 4), "workers": round(workers, 4)}, "notes": self.notes}

    def table(self) -> Any:
        from rich.table import Table

        t = Table(title="preflight check: stage timings")
        t.add_column("stage")
        t.add_column("wall s", justify="right")
        t.add_column("CPU s (this process)", justify="right")
        for name, wall, cpu in self.rows:
            t.add_row(name, f"{wall:.3f}", "" if cpu is None else f"{cpu:.3f}")
        t.add_section()
        me, workers = self.cpu()
        t.add_row("total (since the CLI started importing)", f"{self.total():.3f}", f"{me:.3f}")
        t.add_row("CPU s of the worker processes (all stacks)", "", f"{workers:.3f}")
        if self.notes:
            t.caption = "; ".join(self.notes)
        return t


def runs_elsewhere(executor: Any) -> bool:
    """True when the executor simulates outside this interpreter (worker processes, Dask, Ray)."""
    return executor is not None and (executor.name in ("dask", "ray") or getattr(executor, "workers", 1) > 1)


def in_background(start: Callable[[], Callable[[], Any]], executor: Any, timings: Timings,
                  name: str) -> "Future | Deferred":
    """Start work on `executor` beside the caller, or defer it when that cannot overlap.

    `start()` runs here, in the calling thread, before anything else: it sends the first jobs to the workers
    (so a local pool forks now, from a quiet process that has already imported the simulation) and returns
    the function that waits for them; a thread waits (it holds no GIL meanwhile) and times the work.
    """
    if not runs_elsewhere(executor):
        return Deferred(lambda: start()(), timings, name)
    w = time.perf_counter()
    with timings.stage(f"{name}: jobs sent to the workers"):
        wait = start()
    future: Future = Future()

    def work() -> None:
        try:
            future.set_result(wait())
        except BaseException as err:  # re-raised by future.result() in the caller
            future.set_exception(err)
        finally:
            timings.add(f"{name} (beside the stages above)", time.perf_counter() - w, None)

    threading.Thread(target=work, name="preflight-gate", daemon=True).start()
    return future

class Deferred:
    """Runs `fn` when its result is asked for (the serial case)."""

    def __init__(self, fn: Callable[[], Any], timings: Timings, name: str) -> None:
        self.fn, self.timings, self.name = fn, timings, name

    def result(self) -> Any:
        with self.timings.stage(self.name):
            return self.fn()
