"""Where independent simulations run: in this process, on local processes, on a Dask or a Ray cluster.

Every executor has `map(fn, items) -> list`, returning `fn(item)` for each item in the items' order, and
`submit(fn, items)`, which starts the same work without waiting and returns a handle whose `result()` is that
list (`preflight check` simulates while it runs the Pulumi program). The functions mapped here are pure (a result depends on the item alone: a scenario and a seed), so
the results are identical whichever executor runs them, on any machine that runs the same simulator; only the
wall-clock time differs. A worker on another simulator version is caught by the caller: each result comes back
with the worker's simulator fingerprint (simulation/replicate.py `fingerprinted_job`).

- `SerialExecutor`: in this process (also what the local pool uses for a single job, to skip process start).
- `LocalExecutor(workers)`: `concurrent.futures.ProcessPoolExecutor`, all cores by default, at most
  `max_workers()` = 4 per core (`--workers` above that is refused: a forked pool starts every process at once, and
  CPU-bound simulations gain nothing from more processes than cores); if a worker dies (killed for memory, say)
  the command stops with `WorkerDied` naming the job it ran and the signal (the same job run again in this
  process would need the same memory). The workers ignore SIGINT and exit when their parent is gone; while an
  exception unwinds (Ctrl-C, SIGTERM through validation/cli.py `guarded`) `close()` terminates them at once
  instead of waiting for the replications they run. Workers are forked
  on Linux whatever Python's default start method (forkserver from 3.14): a fork starts at once with every
  module loaded, and a forkserver or spawn worker would re-run the parent's `__main__` file (under `pulumi up`,
  the program's). Forking beside the gRPC channels `pulumi up` holds open is tested
  (tests/simulation/test_executor_processes.py).
- `DaskExecutor(address)`: `dask.distributed.Client(address)`; `"local"` starts a `LocalCluster`. The address
  is checked before anything connects (`dask_address_problem`: `[SCHEME://]HOST:PORT`, SCHEME one of distributed's
  network comms tcp, tls, ws, wss, ucx; tcp when left out, as distributed's `parse_address` defaults), and the
  connection, handshake included, is given `DASK_CONNECT_S` seconds: distributed's own connect timeout ends at the
  TCP connect, so a port that accepts the connection but does not speak Dask's protocol (the dashboard's HTTP port
  8787 for the scheduler's 8786) would otherwise wait forever.
- `RayExecutor(address)`: `ray.init(address)` with `"auto"` for the cluster this machine belongs to, `"local"`
  for a fresh local Ray, `HOST:PORT` (the cluster's GCS) or `ray://HOST:PORT` (Ray Client); the form is checked
  first (`ray_address_problem`).

Dask and Ray are optional (requirements.txt has dask[distributed]; ray is in requirements-extras.txt): asking
for one that is not installed is an `InputError` naming the flag and the package to install. `--workers` sizes the
local pool only, so it is refused together with `--dask` or `--ray` (the cluster's workers run the jobs).
"""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterable, Protocol

from validation.errors import InputError, Problem


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
                "memory with fewer --workers, or shorten the runs (gate.durationS, a rate)"
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


DASK_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")  # distributed's network comms (inproc: one process only)
DASK_SCHEDULER_PORT = 8786  # distributed's default scheduler port; its dashboard serves HTTP on 8787
DASK_CONNECT_S = 8.0        # the TCP connect (distributed retries it until then); with the handshake, 2 s more
_HOST = re.compile(r"[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.%A-Za-z]+\]")  # a name, an IPv4 or a bracketed IPv6


def _host_port_problem(location: str) -> str | None:
    """None when `location` is HOST:PORT (IPv6 in brackets, as distributed's `parse_host_port` wants it)."""
    host, sep, port = location.rpartition(":")
    if not sep or not host:
        return "no port (HOST:PORT)"
    if not _HOST.fullmatch(host):
        return f"{host!r} is not a host name or IP address (an IPv6 address goes in brackets: [::1]:8786)"
    if not (port.isascii() and port.isdigit()) or not 1 <= int(port) <= 65535:
        return f"port {port!r} is not an integer between 1 and 65535"
    return None


def dask_address_problem(address: str) -> Problem | None:
    """None when `--dask ADDRESS` has a form a Dask client can connect to: `local`, or `[SCHEME://]HOST:PORT`."""
    allowed = (f"expected 'local' or the scheduler's address [SCHEME://]HOST:PORT, SCHEME one of "
               f"{', '.join(DASK_SCHEMES)} (tcp when left out), e.g. tcp://scheduler:{DASK_SCHEDULER_PORT}")
    if address == "local":
        return None
    scheme, sep, location = address.rpartition("://")
    scheme = scheme if sep else "tcp"  # distributed's comm registry is keyed by the lower-case name
    if scheme.lower() in ("http", "https"):
        return Problem("--dask", address, f"{allowed}; http:// is the dashboard's address (port 8787 by "
                       f"default), not the scheduler's")
    if scheme == "inproc":
        return Problem("--dask", address, f"{allowed}; an inproc:// address reaches a scheduler in the same "
                       "process only, and this command starts none (use 'local' for a local cluster)")
    if scheme not in DASK_SCHEMES:
        return Problem("--dask", address, f"{allowed}; {scheme!r} is not one of them")
    why = _host_port_problem(location)
    return Problem("--dask", address, f"{allowed}; {why}") if why else None


class NoAnswer(Exception):
    """`_connect_within`'s deadline passed while the connection still waited."""


def _connect_within(connect: Callable[[], Any], seconds: float) -> Any:
    """`connect()` run in a daemon thread for at most `seconds`: its result, its exception re-raised, or
    NoAnswer while it still waits (the thread is left behind, a daemon: the command is about to exit)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = connect()
        except BaseException as err:  # noqa: BLE001 — handed to the caller
            box["error"] = err
    thread = threading.Thread(target=run, name="dask-connect", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        raise NoAnswer(f"no answer within {seconds:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


class DaskExecutor:
    name = "dask"

    def __init__(self, address: str) -> None:
        problem = dask_address_problem(address)
        if problem:
            raise InputError([problem])
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:
            raise InputError([Problem("--dask", address, "install dask[distributed] (requirements.txt)")]) from None
        self._cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                     dashboard_address=None) if address == "local" else None
        if self._cluster is not None:
            self._client = Client(self._cluster, timeout=f"{DASK_CONNECT_S:g}s")
            return
        port = address.rpartition(":")[2]
        hint = (f"; is this the scheduler's port? The scheduler listens on {DASK_SCHEDULER_PORT} by default, its "
                "dashboard (HTTP) on 8787" if port != str(DASK_SCHEDULER_PORT) else "")
        try:
            self._client = _connect_within(lambda: Client(address, timeout=f"{DASK_CONNECT_S:g}s"),
                                           DASK_CONNECT_S + 2)
        except NoAnswer:
            waited = f"{DASK_CONNECT_S + 2:g} s"
            raise InputError([Problem("--dask", address, "expected a Dask scheduler there; something accepted the "
                                      f"connection but did not complete Dask's handshake within {waited}{hint}")]) \
                from None
        except Exception as err:  # noqa: BLE001 — whatever the address led to, it is the address that is wrong
            text = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
            raise InputError([Problem("--dask", address, f"expected a reachable Dask scheduler ({type(err).__name__}: "
                                      f"{text}){hint}")]) from None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list:
        return self.submit(fn, items).result()

    def submit(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Pending:
        futures = self._client.map(fn, list(items), pure=False)
        return Later(lambda: self._client.gather(futures))

    def close(self) -> None:
        self._client.close()
        if self._cluster is not None:
            self._cluster.close()


def ray_address_problem(address: str) -> Problem | None:
    """None when `--ray ADDRESS` is a form `ray.init` takes: `auto`, `local`, `HOST:PORT` or `ray://HOST:PORT`."""
    allowed = ("expected 'auto' (the cluster this machine belongs to), 'local' (a fresh local Ray), the cluster's "
               "HOST:PORT, or ray://HOST:PORT (Ray Client, port 10001 by default)")
    if address in ("auto", "local"):
        return None
    scheme, sep, location = address.rpartition("://")
    if sep and scheme != "ray":
        return Problem("--ray", address, f"{allowed}; {scheme + '://'!r} is not a Ray address")
    why = _host_port_problem(location)
    return Problem("--ray", address, f"{allowed}; {why}") if why else None


class RayExecutor:
    name = "ray"

    def __init__(self, address: str) -> None:
        problem = ray_address_problem(address)
        if problem:
            raise InputError([problem])
        try:
            import ray
        except ImportError:
            raise InputError([Problem("--ray", address, "install ray (pip install -r requirements-extras.txt)")]) \
                from None
        self._ray = ray
        if not ray.is_initialized():
            try:
                ray.init(address=None if address == "local" else address, include_dashboard=False,
                         log_to_driver=False)
            except Exception as err:  # noqa: BLE001 — ConnectionError, RuntimeError, ValueError…: the address
                text = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
                raise InputError([Problem("--ray", address, f"expected a reachable Ray cluster ({text})")]) from None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list:
        return self.submit(fn, items).result()

    def submit(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Pending:
        remote = self._ray.remote(fn)
        refs = [remote.remote(item) for item in items]
        return Later(lambda: self._ray.get(refs))

    def close(self) -> None:
        self._ray.shutdown()


WORKERS_PER_CORE = 4


def max_workers() -> int:
    """The most local processes a pool starts: `WORKERS_PER_CORE` per core of this machine."""
    return WORKERS_PER_CORE * (os.cpu_count() or 1)


def make_executor(dask: str | None = None, ray: str | None = None, workers: int | None = None) -> Executor:
    """The executor a CLI's `--dask ADDRESS` / `--ray auto|ADDRESS` / `--workers N` asks for (local by default)."""
    if dask is not None and ray is not None:  # None: not given ('' is given, and refused as an address)
        raise InputError([Problem("--dask/--ray", f"{dask} / {ray}", "one cluster at a time")])
    if (dask is not None or ray is not None) and workers is not None:
        flag, address = ("--dask", dask) if dask is not None else ("--ray", ray)
        raise InputError([Problem(f"--workers/{flag}", f"{workers} / {address}", f"one or the other: --workers "
                                  f"sizes the local process pool, and with {flag} the cluster's workers run the "
                                  "replications (size the cluster instead)")])
    if dask is not None:
        return DaskExecutor(dask)
    if ray is not None:
        return RayExecutor(ray)
    if workers is not None and not 1 <= workers <= max_workers():
        raise InputError([Problem("--workers", workers, f"expected an integer between 1 and {max_workers()} "
                                  f"({WORKERS_PER_CORE} per core of this machine's {os.cpu_count() or 1}; the "
                                  "simulations are CPU-bound, so more processes than cores only cost memory)")])
    return LocalExecutor(workers)


def add_executor_arguments(parser: Any) -> None:
    """`--workers`, `--dask`, `--ray` on an argparse parser (the same three on every CLI that simulates)."""
    parser.add_argument("--workers", type=int, metavar="N",
                        help="local processes for the replications (default: all cores; at most 4 per core)")
    parser.add_argument("--dask", metavar="ADDRESS",
                        help="run the replications on a Dask cluster (tcp://scheduler:8786, or 'local')")
    parser.add_argument("--ray", metavar="auto|ADDRESS", help="run the replications on a Ray cluster")
