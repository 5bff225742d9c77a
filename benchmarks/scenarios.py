"""The benchmark workloads as scenario mappings (shared by every benchmark in this folder).

- `full_path()`: Knative, CC = 1 (activator always in path with TBC 211), KPA 4..100 GPUs (≤ 25 nodes × 4) with
  cold starts, client timeout + retries with a budget, gateway token bucket + route timeout, the Azure
  conversation trace replayed at rate_scale 10 (≈ 192k requests in 3 600 s).
- `mmck()`: M/M/4/44 — one pod, CC 4, TBC 0, Poisson λ = 3.6, exponential service with mean 1 s.
- `peer(rate, expiry_s)`: SimFaaS's own scale-per-request scenarios in our terms — CC = 1, Poisson arrivals,
  exponential warm service (mean 2.016 s, SimFaaS's examples), a cold start ≈ 0.15 s longer (weights and image
  cached on the warm nodes, 0.147 s warm-up), scale to zero, the KPA stable window = the expiry threshold.
- `idle_pods(n)`: n Ready pods pinned (min = max = n, TBC 0) under a light load: the control loops' cost per pod.
- `idle_stretch(trace, hours, pinned)`: a burst of 60 requests (`burst_trace`), then silence until `hours`; scaled
  to zero in between, or `pinned` Ready pods (min-scale) with nothing to do: what an idle hour costs.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "data" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
WARM_S, COLD_S = 2.016, 2.163   # SimFaaS examples: warm_service_rate = 1/2.016, cold_service_rate = 1/2.163


def _isvc(name: str, predictor: dict, annotations: dict | None = None) -> dict:
    pred = {"model": {"modelFormat": {"name": "huggingface"}}, **predictor}
    return {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": name, "annotations": annotations or {}}, "spec": {"predictor": pred}}


def full_path() -> dict:
    return {
        "name": "bench-full-path",
        "inferenceService": _isvc("chat", {"minReplicas": 4, "maxReplicas": 100, "containerConcurrency": 1,
                                           "timeout": 120,
                                           "model": {"modelFormat": {"name": "huggingface"},
                                                     "resources": {"limits": {"nvidia.com/gpu": "1"}}}}),
        "workload": {"kind": "trace", "path": str(TRACE), "rate_scale": 10.0},
        "client": {"timeout_s": 150, "max_retries": 2, "backoff_base_s": 0.5,
                   "retry_budget": {"max_tokens": 50, "token_ratio": 0.2}},
        "gateway": {"rate_limit": {"rate_per_s": 80, "burst": 40}, "timeout_s": 200},
        "cluster": {"gpus_per_node": 4, "max_nodes": 25,
                    "node_provision_s": {"dist": "uniform", "low": 60, "high": 120},
                    "image_gib": 10, "warmup_s": 15},
        "model": {"name": "llama-3.1-8b", "weights_gib": 15},
        "server": {"kind": "simple", "base_s": 0.05, "per_input_token_s": 0.00002, "per_output_token_s": 0.004,
                   "distribution": "lognormal", "sigma": 0.25},
        "duration_s": 3600,
        "warmup_s": 60,
    }


def mmck(duration_s: float = 200000.0) -> dict:
    return {
        "name": "bench-mmck",
        "inferenceService": _isvc("mm4", {"minReplicas": 1, "maxReplicas": 1, "containerConcurrency": 4},
                                  {"autoscaling.knative.dev/target-burst-capacity": "0"}),
        "workload": {"kind": "poisson", "rate": 3.6},
        "server": {"kind": "simple", "base_s": 1.0, "distribution": "exponential"},
        "duration_s": duration_s,
    }


def peer(rate: float, expiry_s: float, duration_s: float) -> dict:
    return {
        "name": f"bench-peer-{rate:g}rps-{expiry_s:g}s",
        "inferenceService": _isvc("faas", {"minReplicas": 0, "maxReplicas": 1000, "containerConcurrency": 1},
                                  {"autoscaling.knative.dev/window": f"{expiry_s:g}s"}),
        "workload": {"kind": "poisson", "rate": rate},
        "server": {"kind": "simple", "base_s": WARM_S, "distribution": "exponential"},
        "cluster": {"gpus_per_node": 64, "max_nodes": 16, "warm_nodes": 16, "image_gib": 0,
                    "warmup_s": round(COLD_S - WARM_S, 3), "activator_probe_s": 0},
        "duration_s": duration_s,
    }


def idle_pods(n: int, duration_s: float, rate: float = 0.5) -> dict:
    return {
        "name": f"bench-idle-{n}",
        "inferenceService": _isvc("idle", {"minReplicas": n, "maxReplicas": n, "containerConcurrency": 1},
                                  {"autoscaling.knative.dev/target-burst-capacity": "0"}),
        "workload": {"kind": "poisson", "rate": rate},
        "server": {"kind": "simple", "base_s": 0.5, "distribution": "exponential"},
        "cluster": {"gpus_per_node": 64, "max_nodes": (n + 63) // 64, "image_gib": 0},
        "duration_s": duration_s,
    }


def burst_trace(path: Path) -> str:
    """60 requests 0.5 s apart (a trace file at `path`, returned as a str)."""
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"] + [f"{i * 0.5 + 0.123},10,10" for i in range(60)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def idle_stretch(trace: str, hours: float, pinned: int = 0) -> dict:
    out = peer(1.0, 60.0, hours * 3600.0)
    out["name"] = f"bench-idle-stretch-{pinned}"
    out["workload"] = {"kind": "trace", "path": trace}
    out["inferenceService"]["spec"]["predictor"]["minReplicas"] = pinned
    return out
