"""`LocalExecutor(workers)`: `concurrent.futures.ProcessPoolExecutor`, all cores by default, at most
`max_workers()` = 4 per core (`--workers` above that is refused: a forked pool starts every process at once, and
CPU-bound simulations gain nothing from more processes than cores); if a worker dies (killed for memory, say) the
command stops with `WorkerDied` naming the job it ran and the signal (the same job run again in this process would
need the same memory). The workers ignore SIGINT and exit when their parent is gone; while an exception unwinds
(Ctrl-C, SIGTERM through validation/cli.py `guarded`) `close()` terminates them at once instead of waiting for the
replications they run. Workers are forked on Linux whatever Python's default start method (forkserver from 3.14): a
fork starts at once with every module loaded, and a forkserver or spawn worker would re-run the parent's `__main__`
file (under `pulumi up`, the program's). Forking beside the gRPC channels `pulumi up` holds open is tested
(tests/simulation/test_executor_processes.py).
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable

from simulation.executor_protocol import Later, Pending
from validation.errors import InputError, Problem

WORKERS_PER_CORE = 4


def max_workers() -> int:
    """The most local processes a pool starts: `WORKERS_PER_CORE` per core of this machine."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def _start_method() -> Any:
    """Fork on Linux (see the module docstring); elsewhere Python's default (spawn on macOS and Windows)."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return None


PARENT_POLL_S = 0.5   # how often a pool worker checks that the process that started it is still there


def _worker_start(parent: int, slots: Any) -> None:
    """Each local pool worker's initializer. It ignores SIGINT: a Ctrl-C reaches the whole process group, and the
    parent, which gets it too, stops the workers itself (`LocalExecutor.close`), so no worker prints a traceback.
    It exits when its parent is gone (`os.getppid()` changes: SIGKILL, or a SIGTERM while the parent could not
    close the pool), instead of waiting forever on the pool's queue, reparented to init. It claims a slot in
    `slots` (pid, job number) so that the parent can tell which job a worker that died was running."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)   # not the CLI's handler (validation/cli.py): terminate() ends it
    global _SLOT
    with slots.get_lock():
        for k in range(0, len(slots), 2):
            if slots[k] == 0:
                slots[k], _SLOT = os.getpid(), (slots, k + 1)
                break

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os._exit(1)
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


_SLOT: tuple[Any, int] | None = None   # in a worker: (the shared slots, the index of this worker's job number)


def _traced(call: tuple[Callable[[Any], Any], int, Any]) -> Any:
    """`fn(item)` in a pool worker, its job number noted first in the worker's slot."""
    fn, number, item = call
    if _SLOT is not None:
        _SLOT[0][_SLOT[1]] = number
    try:
        return fn(item)
    finally:
        if _SLOT is not None:
            _SLOT[0][_SLOT[1]] = 0    # between jobs: a finished job is never named as the one a dead worker ran


def describe_item(fn: Callable[[Any], Any], item: Any) -> str:
    """What a job is, for a message: `fn.describe(item)` when the mapped function has one, else the item."""
    describe = getattr(fn, "describe", None)
    try:
        return describe(item) if describe else repr(item)[:200]
    except Exception:  # noqa: BLE001 — a message must not fail
        return repr(item)[:200]


class WorkerDied(InputError):
    """A local pool worker died while the pool ran the command's jobs (killed for memory, say)."""


class LocalExecutor:
    """A process pool started on first use and kept for later maps (close() ends it).

    A worker that dies (the kernel's out-of-memory killer sends SIGKILL) is not replaced and its job is not run
    again in this process, where the same job needs the same memory and would take the command down with no
    message: the pending jobs are cancelled and `WorkerDied` names the job the worker ran and the signal."""

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = min(max(1, workers or os.cpu_count() or 1), max_workers())
        self._pool: ProcessPoolExecutor | None = None
        self._processes: dict[int, Any] = {}
        self._jobs: dict[int, tuple[Callable[[Any], Any], Any]] = {}   # job number → (fn, item), until done
        self._numbers = 0
        self._slots: Any = None

    def _start(self) -> ProcessPoolExecutor:
        if self._pool is None:
            context = _start_method() or multiprocessing.get_context()
            self._slots = context.Array("q", 2 * self.workers)
            self._pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=_worker_start,
                                             initargs=(os.getpid(), self._slots))
        return self._pool

    def _submit(self, fn: Callable[[Any], Any], item: Any) -> Any:
        self._numbers += 1
        number = self._numbers
        self._jobs[number] = (fn, item)
        future = self._start().submit(_traced, (fn, number, item))
        self._processes.update(self._pool._processes)   # forked at once; spawned ones as they start
        future.add_done_callback(lambda f: f.cancelled() or f.exception() or self._jobs.pop(number, None))
        return future

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list:
        items = list(items)
        if self.workers == 1 or len(items) <= 1:
            return [fn(item) for item in items]
        return self.submit(fn, items).result()

    def submit(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Pending:
        """One future per item, in the items' order (give the longest first: the pool takes them in order)."""
        items = list(items)
        if self.workers == 1 or len(items) <= 1:
            return Later(lambda: self.map(fn, items))
        futures = [self._submit(fn, item) for item in items]

        def gather() -> list:
            try:
                return [f.result() for f in futures]
            except BrokenProcessPool:
                raise self._death() from None
        return Later(gather, futures)

    def _death(self) -> WorkerDied:
        """The error for a broken pool: which worker died, with what signal, running which job."""
        jobs = dict(self._jobs)
        # The pool's manager thread reaps the workers of a broken pool; reading exit codes while it does races
        # with its waitpid (the loser sees no status), so its end is awaited first.
        manager = getattr(self._pool, "_executor_manager_thread", None)
        if manager is not None and manager is not threading.current_thread():
            manager.join(5.0)
        dead = []
        for pid, process in self._processes.items():
            process.join(2.0)
            if process.exitcode not in (None, 0):
                dead.append((process.exitcode == -signal.SIGTERM, pid, process.exitcode))  # the pool SIGTERMs the rest
        slots = list(self._slots) if self._slots is not None else []
        self.close()
        running = {slots[k]: slots[k + 1] for k in range(0, len(slots), 2)}
        if not dead:
            what, job = "a worker process died", None
        else:
            _, pid, code = min(dead)
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with status {code}"
            job = jobs.get(running.get(pid, 0))
            what = f"the worker process {pid} {how}"
        hint = ("; SIGKILL is what the kernel's out-of-memory killer sends (see `dmesg`): give each worker more "
                "memory with fewer --workers, or shorten the runs (gate.durationS, gate.warmupS, a rate)"
                if dead and min(dead)[2] == -signal.SIGKILL else "")
        doing = f" while it simulated {describe_item(*job)}" if job else " between jobs" if dead else ""
        return WorkerDied([Problem("--workers", self.workers, f"expected every worker process to finish its jobs; "
                                   f"{what}{doing}, so the command stopped: nothing was re-run and the other "
                                   f"jobs were cancelled{hint}")])

    def close(self) -> None:
        """Shut the pool down: at once, its workers terminated, while an exception unwinds (Ctrl-C, SIGTERM,
        an error: the results are not wanted, and a running replication may have minutes left); else once the
        workers have finished (every job's result is in by then)."""
        if self._pool is None:
            return
        pool, processes, self._pool, self._processes, self._jobs = self._pool, self._processes, None, {}, {}
        if sys.exc_info()[0] is None:
            pool.shutdown(cancel_futures=True)
            return
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes.values():
            if process.exitcode is None:
                process.terminate()
        for process in processes.values():
            process.join(2.0)
            if process.exitcode is None:
                process.kill()
