"""The golden cases: the seeded JSON of every example scenario and every shipped stack's SLO-gate result.

A pure speed change must leave every one byte-identical (`test_golden.py`). A change that alters results on
purpose regenerates them in its own commit, saying why: `python3 tests/golden/regenerate.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
SCENARIOS = ROOT / "examples" / "scenarios"
TRACE = ROOT.parent / "shared" / "data" / "azure-llm-inference-2023"


def scenario_files() -> list[Path]:
    """Example scenarios (not the manifest files they name)."""
    return sorted(p for p in SCENARIOS.glob("*.yaml") if not p.name.endswith(".manifest.yaml"))


def needs_trace(path: Path) -> bool:
    return "azure" in path.read_text(encoding="utf-8") and "trace" in path.read_text(encoding="utf-8")


def scenario_json(path: Path) -> str:
    """What `python -m simulation run PATH --json` prints (the scenario's seed, else 0)."""
    from simulation import load_scenario, run_simulation

    sc = load_scenario(str(path))
    return run_simulation(sc, seed=sc.seed if sc.seed is not None else 0).to_json()


def gate_json(stack: str) -> str:
    """Every verdict of the stack's SLO gate: checks and the full simulation report, per service."""
    import gate
    from stackconfig.load import load_stack

    verdicts = gate.check_stack(load_stack(stack))
    out = [dict(v.to_dict(), report=v.report) for v in verdicts]
    return json.dumps(out, sort_keys=True, separators=(",", ":"))


def cases() -> dict[str, tuple[Callable[[], str], bool]]:
    """name → (producer of the JSON text, needs the shared Azure trace)."""
    from stackconfig.load import stack_names

    out: dict[str, tuple[Callable[[], str], bool]] = {}
    for path in scenario_files():
        out[f"scenario-{path.stem}"] = ((lambda p=path: scenario_json(p)), needs_trace(path))
    for stack in stack_names():
        out[f"gate-{stack}"] = ((lambda s=stack: gate_json(s)), False)
    return out


def golden_path(name: str) -> Path:
    return DATA / f"{name}.json"
