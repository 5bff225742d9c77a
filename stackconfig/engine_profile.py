"""`engineProfile:`: what a service's engine was measured to do, for the gate's simulation (not a deploy knob).

The figures `python -m preflight calibrate` derives from the user's own engine — a vLLM start-up log
(activation peak, non-torch memory) or a `vllm bench serve` result (roofline efficiency factors) — so the
gate predicts this engine, not the priors. Each key maps to the simulation's `server:` key of the same
meaning (docs/gpu-model.md); keys that do not apply to the service's engine are refused. For `naive` the
defaults are KServe's huggingfaceserver as released (one generate thread, SDPA, last-position logits); `generate`,
`eagerAttention`, `allLogits`, `overheadGib` and `activationBytesPerToken` describe a server built otherwise.
`interconnectEfficiency` and `allreduceLatencyS` calibrate tensor parallelism's all-reduces (vLLM and TGI on several
GPUs; e.g. from nccl-tests' `all_reduce_perf` on the node): they replace the link's priors, including the NCCL
prior that `--disable-custom-all-reduce` in the runtime's args selects.
"""

from __future__ import annotations

from validation.fields import Section

# stack key → (simulation server key, min, max)
_COMMON = {"memoryEfficiency": ("memory_efficiency", 0.001, 1.0),
           "computeEfficiency": ("compute_efficiency", 0.001, 1.0), "stepOverheadS": ("step_overhead_s", 0.0, 10.0),
           "prefillOverheadS": ("prefill_overhead_s", 0.0, 10.0)}
_VLLM = {"activationGib": ("activation_gib", 0.0, 1024.0), "nonTorchGib": ("overhead_gib", 0.0, 1024.0),
         "cudaGraphGib": ("cuda_graph_gib", 0.0, 1024.0), "prefixCacheHitRatio": ("prefix_cache_hit_ratio", 0.0, 0.99)}
# Tensor parallelism's all-reduces (simulation/gpu/roofline.py): the engines that run it, vLLM and TGI. naive splits
# layers over GPUs without all-reduces (simulation/gpu/naive.py), triton runs on one GPU.
_TP = {"interconnectEfficiency": ("interconnect_efficiency", 0.001, 1.0),
       "allreduceLatencyS": ("allreduce_latency_s", 0.0, 1.0)}
# naive: the memory a measured Transformers server holds besides weights and KV (CUDA context, allocator slack) and
# its prompt activations per token (simulation/gpu/memory.py prefill_activation_bytes).
_NAIVE = {"overheadGib": ("overhead_gib", 0.0, 1024.0),
          "activationBytesPerToken": ("activation_bytes_per_token", 0.0, 1e9)}
KEYS = {"vllm": {**_COMMON, **_VLLM, **_TP}, "tgi": {**_COMMON, **_VLLM, **_TP}, "naive": {**_COMMON, **_NAIVE},
        "triton": {}}
SCHEDULERS = ["v1", "v0"]
OOM_MODES = ["request", "process"]  # naive, triton: a CUDA OOM fails the request (500) or kills the worker
# naive: how requests reach generate() — serial (KServe huggingfaceserver's one generate thread, FIFO) or
# concurrent (a build that runs one generate() per request at once); attention and logits as the server loads them.
GENERATE_MODES = ["serial", "concurrent"]
NAIVE_FLAGS = {"eagerAttention": "eager_attention", "allLogits": "all_logits"}


def parse_engine_profile(sec: Section, engine: str) -> dict:
    """The simulation `server:` keys an `engineProfile:` mapping sets (problems recorded on `sec`)."""
    allowed = KEYS.get(engine, {})
    out: dict = {}
    for key in list(sec.data):
        if key == "scheduler" and engine == "vllm":
            out["scheduler"] = sec.choice("scheduler", SCHEDULERS, "v1")
        elif key == "oom" and engine in ("naive", "triton"):
            out["oom"] = sec.choice("oom", OOM_MODES, "request")
        elif key == "generate" and engine == "naive":
            out["generate"] = sec.choice("generate", GENERATE_MODES, "serial")
        elif key in NAIVE_FLAGS and engine == "naive":
            out[NAIVE_FLAGS[key]] = sec.bool(key, False)
        elif key in allowed:
            name, low, high = allowed[key]
            value = sec.float(key, None, min=low, max=high)
            if value is not None:
                out[name] = value
        else:
            keys = sorted(allowed) + (["scheduler"] if engine == "vllm" else [])
            keys += ["oom"] if engine in ("naive", "triton") else []
            keys += ["generate", *NAIVE_FLAGS] if engine == "naive" else []
            sec.problem(key, sec.data[key], f"expected one of {keys} for engine {engine!r}")
    return out
