"""Peak RSS of one long simulation: `python benchmarks/memory.py --requests 10000000`.

Poisson 200 req/s into one pod with containerConcurrency 256 (TBC 0, so no activator) and a 0.5 s exponential
service, for requests / 200 simulated seconds, with the KPA loops running. Prints one JSON line: requests,
peak RSS (MiB: `VmHWM` of /proc/self/status, the high-water mark of this program's own address space;
`ru_maxrss` where /proc is missing, which on Linux keeps the forking parent's peak across exec), CPU seconds.
Run in its own process by run_all.py so earlier benchmarks do not set the peak.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from scenarios import _isvc  # noqa: E402

RATE = 200.0


def scenario(requests: int) -> dict:
    return {
        "name": "bench-memory",
        "inferenceService": _isvc("mem", {"minReplicas": 1, "maxReplicas": 1, "containerConcurrency": 256},
                                  {"autoscaling.knative.dev/target-burst-capacity": "0"}),
        "workload": {"kind": "poisson", "rate": RATE},
        "server": {"kind": "simple", "base_s": 0.5, "distribution": "exponential"},
        "duration_s": requests / RATE,
        "max_requests": int(requests * 1.1) + 1000,
    }


def peak_rss_mib() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--requests", type=int, default=10_000_000)
    args = p.parse_args()
    from simulation import load_scenario, run_simulation

    sc = load_scenario(scenario(args.requests), base_dir=ROOT)
    c = time.process_time()
    rep = run_simulation(sc, seed=1).to_dict()
    cpu = time.process_time() - c
    peak = peak_rss_mib()
    print(json.dumps({"requests": rep["requests"], "peak_rss_mib": round(peak, 1), "cpu_s": round(cpu, 2),
                      "percentiles": "exact" if rep["latency_s"]["count"] <= 65536 else "log histogram"}))


if __name__ == "__main__":
    main()
