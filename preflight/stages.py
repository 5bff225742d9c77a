"""How `preflight check` spends its time: stage timings (`--timings`) and the SLO gate run beside the program.

The gate's simulations need only the stack config, so they start first, on the executor's worker processes,
while this process imports the Pulumi providers and runs the program under mocks, validates the manifests and
evaluates the policies; the gate's result is collected last. With an in-process executor (`--workers 1`)
there is nothing to overlap with (one interpreter, one GIL), so the gate simply runs after the other stages.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any, Callable, Iterator


class Timings:
    """Wall-clock and this process's CPU seconds per stage, in the order the stages finished."""

    def __init__(self, start: float | None = None) -> None:
        self.rows: list[tuple[str, float, float | None]] = []
        self.start = time.perf_counter() if start is None else start
        self._lock = threading.Lock()

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

    def to_dict(self) -> dict:
        return {"stages": [{"stage": n, "wall_s": round(w, 4), "cpu_s": None if c is None else round(c, 4)}
                           for n, w, c in self.rows], "total_wall_s": round(self.total(), 4)}

    def table(self) -> Any:
        from rich.table import Table

        t = Table(title="preflight check: stage timings")
        t.add_column("stage")
        t.add_column("wall s", justify="right")
        t.add_column("CPU s (this process)", justify="right")
        for name, wall, cpu in self.rows:
            t.add_row(name, f"{wall:.3f}", "" if cpu is None else f"{cpu:.3f}")
        t.add_section()
        t.add_row("total (since the CLI started importing)", f"{self.total():.3f}", "")
        return t


def runs_elsewhere(executor: Any) -> bool:
    """True when the executor simulates outside this interpreter (worker processes, Dask, Ray)."""
    return executor is not None and (executor.name in ("dask", "ray") or getattr(executor, "workers", 1) > 1)


def _noop(x: int) -> int:
    return x


def in_background(fn: Callable[[], Any], executor: Any, timings: Timings, name: str) -> "Future | Deferred":
    """Start `fn` (which maps its work onto `executor`) beside the caller, or defer it when that cannot overlap.

    A local process pool is started here, from the calling thread, before anything else runs: its workers are
    forked from a quiet process (never from a thread while another imports), and they exist before the
    program stage needs the CPU.
    """
    if not runs_elsewhere(executor):
        return Deferred(fn, timings, name)
    if executor.name == "local":
        executor.map(_noop, range(executor.workers))
    future: Future = Future()

    def work() -> None:
        w = time.perf_counter()
        try:
            future.set_result(fn())
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
