"""Discrete-event simulation of one KServe InferenceService under a workload (the preflight gate's engine).

    from simulation import load_scenario, run_simulation
    report = run_simulation(load_scenario("examples/scenarios/poisson-cc1.yaml"), seed=1)
    report.to_dict()          # the `python -m simulation run --json` object

`load_scenario` raises `validation.errors.InputError` listing every mistake before anything is simulated.
"""

from __future__ import annotations

from typing import Any

# First, before any of the simulator's modules loads: the size and modification time of each file it is read from,
# so the on-disk result cache is used only while those files are still the code this process runs
# (simulation/result_cache.py).
from simulation import result_cache as _result_cache

_result_cache.note_import()

__all__ = ["load_scenario", "run_simulation", "Scenario", "Report"]


def load_scenario(path_or_mapping: Any, *, base_dir: Any = None, max_requests: int | None = None) -> "Scenario":
    from simulation.scenario import load_scenario as _load
    return _load(path_or_mapping, base_dir=base_dir, max_requests=max_requests)


def run_simulation(scenario: "Scenario", seed: int = 0, progress: Any = None) -> "Report":
    from simulation.engine import run_simulation as _run
    return _run(scenario, seed=seed, progress=progress)


def __getattr__(name: str) -> Any:
    if name == "Scenario":
        from simulation.scenario import Scenario
        return Scenario
    if name == "Report":
        from simulation.report import Report
        return Report
    raise AttributeError(name)
