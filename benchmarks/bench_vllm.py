"""Simulated requests per CPU second through the vLLM engine path, V1 scheduler against `scheduler: v0`, and
the SLO gate's CPU time on the shipped stacks with every vLLM service on V1 (as shipped) against V0.
Not a test: `python benchmarks/bench_vllm.py [--repeat N]`.

Scenario (issue 12's "vLLM engine path"): Knative mode, CC 16, one to four H100 pods running Llama-3-8B
under vLLM (catalog defaults, 8192-token budget), Poisson 10 req/s, prompts lognormal median 600, outputs
median 150, 3 600 s. Timed with `time.process_time` (CPU time of this process: other load on the machine
disturbs it less than wall time); the best of `--repeat` runs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simulation import load_scenario, run_simulation  # noqa: E402


def scenario(scheduler: str, rate: float = 10.0, duration_s: float = 3600.0) -> dict:
    return {
        "name": f"bench-vllm-{scheduler}",
        "inferenceService": {
            "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "llm"},
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 4, "containerConcurrency": 16, "timeout": 300,
                                   "model": {"modelFormat": {"name": "huggingface"},
                                             "resources": {"limits": {"nvidia.com/gpu": "1"}}}}}},
        "workload": {"kind": "poisson", "rate": rate,
                     "input_tokens": {"dist": "lognormal", "median": 600, "sigma": 0.8, "max": 6000},
                     "output_tokens": {"dist": "lognormal", "median": 150, "sigma": 0.7, "max": 1500}},
        "cluster": {"gpus_per_node": 1, "max_nodes": 4, "warmup_s": 10},
        "model": {"name": "llama-3-8b", "weights_gib": 15},
        "server": {"kind": "vllm", "model": "llama-3-8b", "gpu": "H100-80GB", "scheduler": scheduler},
        "duration_s": duration_s,
        "warmup_s": 60,
    }


def bench(scheduler: str, repeat: int) -> float:
    sc = load_scenario(scenario(scheduler), base_dir=ROOT)
    best, rep = float("inf"), None
    for _ in range(repeat):
        t = time.process_time()
        rep = run_simulation(sc, seed=1).to_dict()
        best = min(best, time.process_time() - t)
    rate = rep["requests"] / best
    stats = rep.get("server_stats", {})
    print(f"scheduler {scheduler}: {rep['requests']} requests in {best:.2f} CPU s → {rate:,.0f} simulated "
          f"requests per CPU second  [TTFT p50 {rep['ttfb_s']['p50']:.3f} s, latency p95 "
          f"{rep['latency_s']['p95']:.2f} s, status {rep['status_counts']}, preemptions "
          f"{stats.get('preemptions', 0)}]")
    return rate


def gate_cpu_s(scheduler: str, repeat: int) -> float:
    """CPU seconds of `gate.check_stack` over every shipped stack (replications run serially in this process),
    vLLM services on `scheduler`."""
    from dataclasses import replace

    import gate
    from simulation.executor_protocol import SerialExecutor
    from simulation.replicate import clear_cache
    from stackconfig.load import load_stack, stack_names
    total = 0.0
    for stack in stack_names():
        cfg = load_stack(stack)
        services = [replace(s, engine_profile={**s.engine_profile, "scheduler": scheduler}) if s.engine == "vllm"
                    else s for s in cfg.services]
        cfg = replace(cfg, services=services)
        best = float("inf")
        for _ in range(repeat):
            clear_cache()  # else a repeat reads the replications from this process's cache
            t = time.process_time()
            gate.check_stack(cfg, SerialExecutor())  # in this process, so process_time sees the work
            best = min(best, time.process_time() - t)
        total += best
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    v0 = bench("v0", args.repeat)
    v1 = bench("v1", args.repeat)
    print(f"V1 / V0 speed: {v1 / v0:.2f}×")
    g0, g1 = gate_cpu_s("v0", args.repeat), gate_cpu_s("v1", args.repeat)
    print(f"gate, all shipped stacks: V0 {g0:.2f} CPU s, V1 {g1:.2f} CPU s → "
          f"V1 / V0 time {g1 / g0:.2f}× (limit 2×)")


if __name__ == "__main__":
    main()
