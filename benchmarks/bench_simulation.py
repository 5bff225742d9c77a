"""Simulated requests per wall-clock second on one core: (a) the full path on the Azure conversation trace,
(b) a plain M/M/c/K scenario. Not a test: run `python benchmarks/bench_simulation.py [--repeat N]`.

(a) Knative mode, CC = 1 (activator always in path with TBC 211), KPA autoscaling 4..100 GPUs (≤ 25 nodes × 4)
    with cold starts, client timeout + retries with a budget, gateway token bucket + route timeout, the
    conversation trace replayed at rate_scale 10 (≈ 192k requests in 3 600 s).
(b) M/M/4/44: one pod, CC 4, TBC 0, Poisson λ = 3.6, exponential service with mean 1 s, 200 000 s.
The trace is parsed once before timing (it is cached per process).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulation import load_scenario, run_simulation  # noqa: E402
from simulation.workload import read_trace  # noqa: E402

TRACE = ROOT.parent / "shared" / "data" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"


def full_path() -> dict:
    return {
        "name": "bench-full-path",
        "inferenceService": {
            "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "chat"},
            "spec": {"predictor": {"minReplicas": 4, "maxReplicas": 100, "containerConcurrency": 1, "timeout": 120,
                                   "model": {"modelFormat": {"name": "huggingface"},
                                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}}}},
        "workload": {"kind": "trace", "path": str(TRACE), "rate_scale": 10.0},
        "client": {"timeout_s": 150, "max_retries": 2, "backoff_base_s": 0.5,
                   "retry_budget": {"max_tokens": 50, "token_ratio": 0.2}},
        "gateway": {"rate_limit": {"rate_per_s": 80, "burst": 40}, "timeout_s": 200},
        "cluster": {"gpus_per_node": 4, "max_nodes": 25, "node_provision_s": {"dist": "uniform", "low": 60, "high": 120},
                    "image_gib": 10, "warmup_s": 15},
        "model": {"name": "llama-3.1-8b", "weights_gib": 15},
        "server": {"kind": "simple", "base_s": 0.05, "per_input_token_s": 0.00002, "per_output_token_s": 0.004,
                   "distribution": "lognormal", "sigma": 0.25},
        "duration_s": 3600,
        "warmup_s": 60,
    }


def mmck() -> dict:
    return {
        "name": "bench-mmck",
        "inferenceService": {
            "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "mm4", "annotations": {"autoscaling.knative.dev/target-burst-capacity": "0"}},
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1, "containerConcurrency": 4,
                                   "model": {"modelFormat": {"name": "sklearn"}}}}},
        "workload": {"kind": "poisson", "rate": 3.6},
        "server": {"kind": "simple", "base_s": 1.0, "distribution": "exponential"},
        "duration_s": 200000,
    }


def bench(name: str, mapping: dict, repeat: int) -> None:
    sc = load_scenario(mapping, base_dir=ROOT)
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        rep = run_simulation(sc, seed=1).to_dict()
        el = time.perf_counter() - t
        best = el if best is None or el < best else best
    n = rep["attempts"]["count"]
    print(f"{name}: {rep['requests']} requests ({n} attempts) in {best:.2f} s wall → "
          f"{rep['requests'] / best:,.0f} simulated requests/s  "
          f"[status {rep['status_counts']}, cold starts {rep['cold_starts']}, replicas {rep['replicas']}]")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})   # one core
    print(f"python {sys.version.split()[0]}, one core")
    if TRACE.is_file():
        read_trace(str(TRACE))
        bench("(a) full path, Azure conv trace x10", full_path(), args.repeat)
    else:
        print(f"(a) skipped: {TRACE} not found")
    bench("(b) M/M/4/44", mmck(), args.repeat)


if __name__ == "__main__":
    main()
