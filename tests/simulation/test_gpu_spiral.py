"""End to end through the simulation core: the OOM spiral of the operating guides on the Azure conversation
trace, the guides' safe preset on the same traffic, vLLM's start-up refusal, and TTFT / E2E latency."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from simulation import load_scenario, run_simulation
from simulation.engine import Sim

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "examples" / "scenarios"
TRACE = ROOT.parent / "shared" / "data" / "azure-llm-inference-2023" / "AzureLLMInferenceTrace_conv.csv"
needs_trace = pytest.mark.skipif(not TRACE.exists(), reason="../shared/data (Azure LLM trace) not present")
OOM = "CUDA out of memory"


def scenario(name: str, **changes):
    data = yaml.safe_load((SCENARIOS / f"{name}.yaml").read_text())
    for dotted, value in changes.items():
        cur = data
        *head, last = dotted.split(".")
        for key in head:
            cur = cur[key]
        cur[last] = value
    return load_scenario(data, base_dir=SCENARIOS)


class Timeline:
    """Runs a scenario and records when pods restarted and when attempts got 503 (test-side instrumentation)."""

    def __init__(self, sc, seed: int = 1) -> None:
        self.sim = sim = Sim(sc, seed)
        self.restarts: list[tuple[float, str]] = []
        self.t503: list[float] = []
        complete, restart = sim.complete, sim.on_pod_restart

        def on_complete(req, status, component):
            if status == 503 and not req.status:
                self.t503.append(sim.env.now)
            complete(req, status, component)

        def on_restart(pod, reason):
            self.restarts.append((sim.env.now, reason))
            restart(pod, reason)

        sim.complete = on_complete
        sim.on_pod_restart = on_restart
        self.report = sim.run().to_dict()


@pytest.fixture(scope="module")
def spiral():
    return Timeline(scenario("spiral-naive"))


@pytest.fixture(scope="module")
def safe():
    return Timeline(scenario("spiral-safe"))


@needs_trace
def test_spiral_naive_cc4_no_cap_ooms_crashes_restarts_and_retries(spiral):
    r = spiral.report
    ooms = r["restart_reasons"].get(OOM, 0)
    assert ooms >= 10, r["restart_reasons"]  # CUDA OOM kills the process, again and again
    assert r["pod_restarts"] >= ooms
    assert r["attempts"]["status_counts"].get("502", 0) > 0  # in-flight work lost with each crash
    assert r["attempts"]["retries"] > 1000  # clients retry 502/503/504
    assert r["attempts"]["status_counts"].get("503", 0) > 500  # queue-proxy overflow


@needs_trace
def test_spiral_crashed_pods_leave_fewer_ready_replicas(spiral, safe):
    assert spiral.report["replicas"]["mean"] < safe.report["replicas"]["mean"] - 1.0


@needs_trace
def test_spiral_503_burst_follows_the_crashes_and_comes_earlier_than_without_oom(spiral):
    first_crash = min(t for t, reason in spiral.restarts if reason == OOM)
    assert spiral.t503 and first_crash < spiral.t503[0]
    # A burst: most 503s land within a few minutes of the first.
    start = spiral.t503[0]
    assert sum(1 for t in spiral.t503 if t < start + 180) > 0.5 * len(spiral.t503)
    # Same deployment and traffic on a GPU with room for everything (no OOM): the queues overflow later.
    roomy = Timeline(scenario("spiral-naive", **{"server.catalog": {"gpus": {"A10G": {
        "memory_gib": 80, "bandwidth_gbps": 600, "bf16_tflops": 70}}}}))
    assert roomy.report["pod_restarts"] == 0
    assert roomy.t503 and roomy.t503[0] > spiral.t503[0] + 30


@needs_trace
def test_the_same_deployment_on_kserve_huggingfaceserver_queues_instead_of_spiralling():
    """KServe's huggingfaceserver (the naive defaults: one generate() at a time, SDPA, last-position logits) on the
    spiral's traffic and CC 4: one sequence on the GPU, so no CUDA OOM and no crash loop — the requests wait."""
    r = Timeline(scenario("spiral-naive", **{"server.generate": "serial", "server.eager_attention": False,
                                             "server.all_logits": False})).report
    assert r["pod_restarts"] == 0 and OOM not in r["restart_reasons"]
    assert "502" not in r["attempts"]["status_counts"]


@needs_trace
def test_safe_preset_on_the_same_traffic_never_ooms(safe, spiral):
    r = safe.report
    assert OOM not in r["restart_reasons"] and r["pod_restarts"] == 0
    assert "502" not in r["attempts"]["status_counts"]
    # over-long prompts are refused at the server with 400, counted apart from overload errors
    assert r["errors_by_component"]["400"] == {"server": r["status_counts"]["400"]} and r["status_counts"]["400"] > 0
    # and more users get an answer than in the spiral
    assert r["status_counts"]["200"] > spiral.report["status_counts"]["200"]


@needs_trace
def test_safe_preset_peak_memory_bound_holds_for_every_request_it_admits():
    """CC 1 + caps: the worst admitted request (4096 in, 1024 out) fits; so no admitted mix can OOM."""
    from catalog import DEFAULT
    from simulation.gpu.memory import naive_memory_bytes

    m, cap = DEFAULT.models["llama-2-7b"], DEFAULT.gpus["A10G"].cuda_total_bytes
    assert naive_memory_bytes(m, [4096], [4096], eager_attention=True, all_logits=True) < cap
    assert naive_memory_bytes(m, [4096 + 1024]) < cap


# -- vLLM through the core ----------------------------------------------------------------------------------

def _vllm_scenario(workload=None, top=None, **server):
    data = {
        "name": "vllm-small",
        "inferenceService": {
            "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "llm", "annotations": {"autoscaling.knative.dev/target-burst-capacity": "0"}},
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1, "containerConcurrency": 0,
                                   "containers": [{"name": "kserve-container", "image": "vllm/vllm-openai:v0.6.3",
                                                   "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}},
        },
        "workload": workload or {"kind": "poisson", "rate": 2.0, "input_tokens": 512, "output_tokens": 128},
        "cluster": {"max_nodes": 1, "warm_nodes": 1},
        "model": {"name": "llama-3-8b", "weights_gib": 14.96},
        "server": {"kind": "vllm", "gpu": "A100-80GB", **server},
        "duration_s": 120,
        **(top or {}),
    }
    return load_scenario(data)


def test_vllm_that_cannot_fit_one_max_length_request_never_becomes_ready():
    # initial_replicas 0: the pod goes through a cold start, so the engine's start-up check runs
    sc = _vllm_scenario(top={"initial_replicas": 0}, gpu="L4", gpu_memory_utilization=0.76, max_model_len=8192)
    r = run_simulation(sc, seed=1).to_dict()
    reasons = r["restart_reasons"]
    assert any(k.startswith("vLLM refused to start") and "max_model_len 8192" in k for k in reasons), reasons
    assert r["status_counts"].get("200", 0) == 0 and r["replicas"]["max"] == 0
    # the same engine with max_model_len 4096 starts and serves
    ok = run_simulation(_vllm_scenario(top={"initial_replicas": 0}, gpu="L4", gpu_memory_utilization=0.76,
                                       max_model_len=4096), seed=1).to_dict()
    assert ok["pod_restarts"] == 0 and ok["status_counts"].get("200", 0) > 0


def test_vllm_reports_ttft_below_end_to_end_latency():
    r = run_simulation(_vllm_scenario(), seed=1).to_dict()
    assert r["status_counts"]["200"] > 100 and r["pod_restarts"] == 0
    ttft, e2e = r["ttfb_s"], r["latency_s"]
    assert 0 < ttft["p50"] < e2e["p50"]
    # 128 tokens at A100 ITL ~16–20 ms plus a 512-token prefill: ~2–4 s end to end at this light load
    assert 1.5 < e2e["p50"] < 5.0 and ttft["p50"] < 0.5


@needs_trace
def test_azure_trace_replays_end_to_end_on_vllm_with_rate_scaling():
    trace = {"kind": "trace", "path": str(TRACE), "rate_scale": 2.0, "limit": 1500}
    r = run_simulation(_vllm_scenario(workload=trace), seed=1).to_dict()
    assert r["requests"] > 900  # the trace's ~5.5 req/s doubled, for 120 s
    assert r["status_counts"]["200"] > 0.9 * r["requests"]
    assert r["ttfb_s"]["p50"] < r["latency_s"]["p50"]


def test_triton_vision_through_the_core_with_an_image_size_cap():
    data = {
        "name": "vision",
        "inferenceService": {
            "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "vit", "annotations": {"autoscaling.knative.dev/target-burst-capacity": "0"}},
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1, "containerConcurrency": 8,
                                   "containers": [{"name": "c", "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
                                                   "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}},
        # input_tokens carries the image's pixel count for vision models (median 224 × 224)
        "workload": {"kind": "poisson", "rate": 50.0, "output_tokens": 1,
                     "input_tokens": {"dist": "lognormal", "median": 50176, "sigma": 1.0}},
        "model": {"name": "vit-large-16", "weights_gib": 0.6},
        "server": {"kind": "triton", "gpu": "A10G", "max_batch_size": 8, "preferred_batch_size": [4, 8],
                   "max_queue_delay_microseconds": 2000, "max_pixels": 1024 * 1024},
        "duration_s": 60,
    }
    r = run_simulation(load_scenario(data), seed=1).to_dict()
    assert r["status_counts"]["400"] > 0 and r["errors_by_component"]["400"] == {"server": r["status_counts"]["400"]}
    assert r["status_counts"]["200"] > 2500 and r["pod_restarts"] == 0
    assert r["latency_s"]["p50"] == pytest.approx(r["ttfb_s"]["p50"])  # not streamed: first byte = last byte
    assert r["latency_s"]["p50"] < 0.05
