"""The gate's time-driven work: CPU seconds per simulated second of a near-idle fleet, per service and per Ready
pod (stackconfig/gate_runs.py SERVICE_SECOND_CPU_S, POD_SECOND_CPU_S).

Builds dev's chat N times (0.0001 req/s: a handful of requests, so the control loops and pods are what costs),
P pods each pinned by minReplicas, runs one steady replication of D simulated seconds in this process and prints
CPU s / (D × N) and, between P = 1 and P = P2, the extra per pod-second.
usage: python3 benchmarks/gate_idle_cost.py [N] [D] [P2] [RATE]"""

from __future__ import annotations

import copy
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gate import stack_scenarios                      # noqa: E402
from simulation.replicate import simulate_job          # noqa: E402
from stackconfig.load import ROOT as STACKS, project_values, stack_config_values, stack_file  # noqa: E402
from stackconfig.schema import parse_stack_config      # noqa: E402


def fleet(n: int, pods: int, duration: float, rate: float = 0.0001) -> dict:
    project, values = stack_config_values("dev", STACKS)
    values = project_values(values, project, stack_file("dev", STACKS))
    chat = values["services"][0]
    services = []
    for i in range(n):
        s = copy.deepcopy(chat)
        s.update(name=f"chat{i}", minReplicas=pods, maxReplicas=pods + 1)
        s["workload"] = {**s["workload"], "rate": rate}
        services.append(s)
    values["services"] = services
    values["gpuNodeGroup"].update(maxSize=min(1000, (pods + 2) * n + 1), minSize=0, desiredSize=0)
    values["gate"] = {**values.get("gate", {}), "durationS": duration, "scenarios": ["steady"],
                      "totalRequestBudget": 10**9}
    cfg = parse_stack_config(values, project, "dev")
    return stack_scenarios(cfg, ("steady",))[0].fleet


def cpu_s(mapping: dict, seed: int = 1) -> float:
    start = time.process_time()
    simulate_job((json.dumps(mapping, sort_keys=True), seed, str(ROOT)))
    return time.process_time() - start


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    d = float(sys.argv[2]) if len(sys.argv) > 2 else 20000
    p2 = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    rate = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0001
    base = cpu_s(fleet(n, 1, 60.0, rate))             # start-up: pods created, models loaded
    one = cpu_s(fleet(n, 1, d, rate)) - base
    more = cpu_s(fleet(n, p2, d, rate)) - cpu_s(fleet(n, p2, 60.0, rate))
    per_service = one / (d * n)
    per_pod = (more - one) / (d * n * (p2 - 1))
    print(f"{n} services x {d:g} s at {rate:g} req/s ({rate * d * n:,.0f} requests): "
          f"P=1 {one:.2f} CPU s, P={p2} {more:.2f} CPU s; "
          f"per service-second at 1 pod {per_service * 1e6:.3f} us, per extra pod-second {per_pod * 1e6:.3f} us")


if __name__ == "__main__":
    main()
