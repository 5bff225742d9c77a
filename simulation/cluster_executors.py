"""Executors on a cluster. Dask and Ray are optional (requirements.txt has dask[distributed]; ray is in
requirements-extras.txt): asking for one that is not installed is an `InputError` naming the flag and the package
to install.

- `DaskExecutor(address)`: `dask.distributed.Client(address)`; `"local"` starts a `LocalCluster`. The address
  is checked before anything connects (`dask_address_problem`: `[SCHEME://]HOST:PORT`, SCHEME one of distributed's
  network comms tcp, tls, ws, wss, ucx; tcp when left out, as distributed's `parse_address` defaults), and the
  connection, handshake included, is given `DASK_CONNECT_S` seconds: distributed's own connect timeout ends at the
  TCP connect, so a port that accepts the connection but does not speak Dask's protocol (the dashboard's HTTP port
  8787 for the scheduler's 8786) would otherwise wait forever.
- `RayExecutor(address)`: `ray.init(address)` with `"auto"` for the cluster this machine belongs to, `"local"`
  for a fresh local Ray, `HOST:PORT` (the cluster's GCS) or `ray://HOST:PORT` (Ray Client); the form is checked
  first (`ray_address_problem`).
"""

from __future__ import annotations

import re
import threading
from typing import Any, Callable, Iterable

from simulation.executor_protocol import Later, Pending
from validation.errors import InputError, Problem


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
