"""Independent replications of a scenario: their seeds, their jobs, and a cache of their reports.

Seeds. Replication i of a run with base seed s uses the simulation seed
`numpy.random.SeedSequence(s, spawn_key=(i,)).generate_state(1)[0]` — the i-th child of `SeedSequence(s).spawn()`,
so replication i's seed depends on (s, i) alone: adding replications never changes the earlier ones, and the two
sides of a what-if (common random numbers) share seed i for replication i.

Each replication is a pure function of (scenario, seed) (`simulate_job`), so an executor
(`simulation.executors`) may run them anywhere in any order: the results are sorted back by index and are
identical on every executor. They are cached in this process by (scenario JSON, seed).

Pure, that is, for one simulator: a Dask or Ray worker may run another version of it (another checkout, another
NumPy), whose reports differ. So a worker returns its simulator fingerprint (simulation/result_cache.py: the
simulator's files and the Python, SimPy and NumPy versions) with each report (`fingerprinted_job`), and the
caller refuses any report whose fingerprint is not its own (`SimulatorMismatch`, an InputError: the CLIs exit
2) before it uses or caches one. The fingerprint travels beside the report, never in it.

The estimates across them: simulation/estimates.py (the statistics), simulation/report_terms.py (the figures).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from simulation import load_scenario, result_cache, run_simulation
from validation.errors import InputError, Problem


def replication_seed(base: int, index: int) -> int:
    """The simulation seed of replication `index` (0-based) of a run with base seed `base`."""
    return int(np.random.SeedSequence(base, spawn_key=(index,)).generate_state(1)[0])


def replication_seeds(base: int, count: int, start: int = 0) -> list[int]:
    return [replication_seed(base, i) for i in range(start, start + count)]


_CACHE: dict[tuple, dict] = {}  # (scenario JSON, seed, base dir) → report, in this process (first in, first out)
_CACHE_SIZE = 256


class SimulatorMismatch(InputError):
    """Workers that run another simulator than this process: their reports are not this code's results."""


def fingerprinted_job(job: tuple[str, int, str | None]) -> tuple[str, dict]:
    """`simulate_job` as the executors run it: (the simulator fingerprint of the process that ran it, report)."""
    return result_cache.simulator_fingerprint(), simulate_job(job)


def describe_job(job: tuple[str, int, str | None]) -> str:
    """A job for a message (simulation/local_executor.py `WorkerDied`): its scenario's name, duration and seed."""
    text, seed, _ = job
    mapping = json.loads(text)
    name = mapping.get("name", "the scenario") if isinstance(mapping, dict) else "the scenario"
    seconds = mapping.get("duration_s") if isinstance(mapping, dict) else None
    return f"the replication of {name!r} with seed {seed}" + (f" ({seconds:g} s)" if isinstance(seconds, (int, float))
                                                               else "")


fingerprinted_job.describe = describe_job   # type: ignore[attr-defined]


def _check_fingerprints(found: Sequence[str], mine: str, executor: Any) -> None:
    """Raise SimulatorMismatch unless every report came from a simulator with this process's fingerprint."""
    foreign = sorted(set(found) - {mine})
    if not foreign:
        return
    name = getattr(executor, "name", "") or "executor"
    flag = f"--{name}" if name in ("dask", "ray") else None
    allowed = (f"expected workers that run this simulator, fingerprint {mine}: {sum(fp != mine for fp in found)} "
               f"of {len(found)} replications came back from a simulator with another fingerprint (other files "
               "under simulation/, catalog/ or validation/, or another Python, SimPy or NumPy version), so they "
               "are not this code's results; none was used or cached. Install the same version of this project "
               "and the same Python, SimPy and NumPy on the workers (a machine's fingerprint: python -c 'from "
               "simulation.result_cache import simulator_fingerprint as f; print(f())'), or run without "
               + (flag or "them"))
    raise SimulatorMismatch([Problem(flag or f"the {name} workers", ", ".join(foreign), allowed)],
                            "the workers' results")


def simulate_job(job: tuple[str, int, str | None]) -> dict:
    """One replication: (scenario as sorted JSON, seed, base dir for relative paths) → the report dict."""
    report = _CACHE.get(job)
    if report is None:
        text, seed, base_dir = job
        report = _load(json.loads(text), base_dir)(seed)
        _remember(job, report)
    return report


def _load(mapping: Any, base_dir: str | None) -> Callable[[int], dict]:
    """Parse a scenario — or a fleet of them (simulation/fleet.py: a mapping with `services`) — into a function
    of the seed giving its JSON result; raises InputError for a mapping the parser rejects."""
    if isinstance(mapping, dict) and "services" in mapping:
        from simulation.fleet import load_fleet, run_fleet

        fleet = load_fleet(mapping, base_dir=base_dir)
        return lambda seed: run_fleet(fleet, seed)
    scenario = load_scenario(mapping, base_dir=base_dir)
    return lambda seed: run_simulation(scenario, seed=seed).to_dict()


def scenario_duration(mapping: Mapping) -> float:
    """Simulated seconds of a scenario or fleet mapping (1 when it does not say): what a job costs, roughly."""
    try:
        return float(mapping.get("duration_s") or 1.0)
    except (TypeError, ValueError):
        return 1.0


def _remember(job: tuple, report: dict) -> None:
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[job] = report


def clear_cache() -> None:
    _CACHE.clear()


def run_replications(scenarios: Sequence[Mapping], seeds: Sequence[int], executor: Any = None,
                     base_dir: Any = None, cache: Any = None) -> list[list[dict]]:
    """Every scenario × every seed; `result[s][r]` is scenario s's report for seeds[r].

    Jobs already in this process's cache (or in `cache`, on disk) are not sent again; the rest go to
    `executor` (default: this process). Raises `validation.errors.InputError` for a scenario the simulation's
    parser rejects.
    """
    return submit_replications(scenarios, seeds, executor, base_dir, cache).result()


def submit_replications(scenarios: Sequence[Mapping], seeds: Sequence[int], executor: Any = None,
                        base_dir: Any = None, cache: Any = None) -> Any:
    """`run_replications` started without waiting: returns a handle whose `result()` is its list.

    Input errors are raised here, before any job starts. The jobs go out longest first (by simulated
    duration), so the last ones to finish are short and the workers end together. `cache`
    (simulation/result_cache.py) answers the jobs it holds and stores the others' reports. Every report the
    executor returns must come from this simulator (`fingerprinted_job`); else `result()` raises
    `SimulatorMismatch` and nothing of that batch is used or cached.
    """
    from simulation.executor_protocol import Later, SerialExecutor

    bd = None if base_dir is None else str(base_dir)
    texts = [json.dumps(s, sort_keys=True) for s in scenarios]
    jobs = [(text, seed, bd) for text in texts for seed in seeds]
    found = {job: _CACHE[job] for job in jobs if job in _CACHE}
    todo = list(dict.fromkeys(job for job in jobs if job not in found))
    if cache is not None and todo:
        for job in todo:
            report = cache.get(job)
            if report is not None:
                found[job] = report
                _remember(job, report)
        todo = [job for job in todo if job not in found]
    pending = None
    if todo:
        length = {t: 0.0 for t, _, _ in todo}
        for text, mapping in zip(texts, scenarios):
            if text in length and not length[text]:  # input errors here, before any process starts
                _load(json.loads(text), bd)
                length[text] = scenario_duration(mapping)
        todo.sort(key=lambda job: -length[job[0]])  # stable: seeds stay in order within a scenario
        executor = executor or SerialExecutor()
        mine = result_cache.simulator_fingerprint()   # here, before a local pool forks: its workers inherit it
        submit = getattr(executor, "submit", None)
        pending = submit(fingerprinted_job, todo) if submit else Later(lambda: executor.map(fingerprinted_job, todo))

    def collect() -> list[list[dict]]:
        if pending is not None:
            answers = pending.result()
            _check_fingerprints([fp for fp, _ in answers], mine, executor)
            reports = [report for _, report in answers]
            for job, report in zip(todo, reports):
                _remember(job, report)
                found[job] = report
            if cache is not None:
                cache.put_all(zip(todo, reports))
        flat = [found[job] for job in jobs]
        return [flat[i * len(seeds):(i + 1) * len(seeds)] for i in range(len(scenarios))]
    if pending is None:  # every job answered from a cache: done now, so a waiting gate takes it first
        done = Later(collect)
        done.result()
        return done
    return Later(collect, pending.futures)
