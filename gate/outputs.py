"""The gate's predictions as one JSON-ready object: the `predictions` stack output and `preflight check --json`.

    {"passed": true, "seed": 1, "durationS": 900, "warmupS": 0, "replications": {"min": 5, "max": 20},
     "services": {"chat": {"steady": {"passed": true, "replications": 5,
        "checks": [{"name": "p99 latency (s)", "value": 24.7, "ci95": [23.3, 26.1], "limit": 60, "status": "pass",
                    …}],
        "metrics": {"503 rate": {"value": 0, "ci95": [0, 7.7e-5], "replications": 5}, …,
                    "pod GPU-hours": {…}}}}}}

Every figure is an estimate across replications with its 95 % interval (simulation/estimates.py); cost is the
service's own pods' GPU-hours over the simulated window (`pod GPU-hours`).
"""

from __future__ import annotations

from gate.verdict import Verdict
from stackconfig.schema import StackConfig


def predictions(cfg: StackConfig, verdicts: list[Verdict]) -> dict:
    services: dict[str, dict] = {}
    for v in verdicts:
        entry = v.to_dict()
        services.setdefault(v.service, {})[v.scenario] = {k: entry[k] for k in
                                                          ("passed", "replications", "checks", "metrics")}
    g = cfg.gate
    return {"passed": all(v.passed for v in verdicts), "seed": g.seed, "durationS": g.duration_s,
            "warmupS": g.warmup_s,
            "replications": {"min": g.min_replications, "max": g.max_replications}, "undecided": g.undecided,
            "services": services}
