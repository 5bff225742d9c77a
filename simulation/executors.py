"""Where independent simulations run: in this process, on local processes, on a Dask or a Ray cluster
(`make_executor`, from a CLI's `--workers`, `--dask` and `--ray`).

The functions mapped here are pure (a result depends on the item alone: a scenario and a seed), so the results are
identical whichever executor runs them, on any machine that runs the same simulator; only the wall-clock time
differs. A worker on another simulator version is caught by the caller: each result comes back with the worker's
simulator fingerprint (simulation/replicate.py `fingerprinted_job`).

- `SerialExecutor` and the protocol every executor follows: simulation/executor_protocol.py.
- `LocalExecutor(workers)`, a local process pool: simulation/local_executor.py.
- `DaskExecutor(address)` and `RayExecutor(address)`: simulation/cluster_executors.py.

`--workers` sizes the local pool only, so it is refused together with `--dask` or `--ray` (the cluster's workers
run the jobs).
"""

from __future__ import annotations

import os
from typing import Any

from simulation.cluster_executors import DaskExecutor, RayExecutor
from simulation.executor_protocol import Executor
from simulation.local_executor import WORKERS_PER_CORE, LocalExecutor, max_workers
from validation.errors import InputError, Problem


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
