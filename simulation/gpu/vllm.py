"""`server.kind: vllm`: the keys, the version's defaults, and the scheduler it runs.

`scheduler: v1` (default) is vLLM's V1 engine (vLLM ≥ 0.8, the only engine from 0.10): one token budget
per step, chunked prefill, per-step KV blocks, preemption by recompute (`vllm_v1.py`). `scheduler: v0` is
the V0 scheduler without chunked prefill, for users still on an older vLLM or `VLLM_USE_V1=0`
(`vllm_v0.py`: whole-request KV reservation at admission, prefill passes alone, no preemption).

Defaults by GPU class and the OpenAI server's 400s: `vllm_spec.py`. `disable_custom_all_reduce: true` is vLLM's
`--disable-custom-all-reduce` (read from the manifest's args, `simulation/isvc.py`): every tensor-parallel
all-reduce runs on NCCL, whose latency prior on NVLink is higher (`roofline.uses_custom_all_reduce`).
A `tensor_parallel_size` that does not divide the model's attention heads is refused (`tensor_parallel.py`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from validation.fields import Section
from simulation.gpu.llm_engine import llm_common
from simulation.gpu.memory import BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, vllm_budget
from simulation.gpu.server_common import model_name
from simulation.gpu.tensor_parallel import heads_problem, shard_sizes
from simulation.gpu.vllm_spec import SCHEDULERS, VllmSpec, resolve_batch
from simulation.gpu.vllm_v0 import VllmV0Engine
from simulation.gpu.vllm_v1 import VllmV1Engine
from simulation.server import ModelServer, register_server


@register_server
class VllmServer(ModelServer):
    """Reads `server:` for kind `vllm` and builds the engine `scheduler` names (see the module docstring)."""

    kind = "vllm"

    def __new__(cls, env: Any, pod: Any, spec: VllmSpec, rng: Any) -> Any:
        engine = VllmV0Engine if spec.scheduler == "v0" else VllmV1Engine
        return engine(env, pod, spec, rng)

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> VllmSpec | None:
        common = llm_common(section, model_name(model))
        scheduler = section.choice("scheduler", list(SCHEDULERS), "v1")
        util = section.float("gpu_memory_utilization", DEFAULT_GPU_MEMORY_UTILIZATION, min=0.05, max=1.0)
        max_len = section.int("max_model_len", 0, min=1)
        seqs = section.int("max_num_seqs", 0, min=1)
        batched = section.int("max_num_batched_tokens", 0, min=1)
        block = section.int("block_size", BLOCK_SIZE, min=1, max=256)
        act = section.float("activation_gib", None, min=0.0)
        over = section.float("overhead_gib", None, min=0.0)
        graphs = section.float("cuda_graph_gib", 0.0, min=0.0)
        hit = section.float("prefix_cache_hit_ratio", 0.0, min=0.0, max=0.99)
        no_custom_ar = section.bool("disable_custom_all_reduce", False)
        if common is None:
            return None
        if no_custom_ar:
            common["eff"] = replace(common["eff"], custom_all_reduce=False)
        prof = common["profile"]
        if max_len and max_len > prof.model.max_context:
            section.problem("max_model_len", max_len, f"expected at most {prof.model.max_context} "
                            f"({prof.model.name}'s context length)")
        if bad_tp := heads_problem(prof.model, prof.tp):  # vLLM and TGI alike (TgiServer reads through here)
            sizes = shard_sizes(prof.model, prof.instance_type.gpus if prof.instance_type else 16)
            section.problem("tensor_parallel_size", prof.tp, "expected a size that divides the model's attention "
                            f"heads ({', '.join(map(str, sizes))}): {bad_tp}")
        max_len = max_len or prof.model.max_context
        batched, seqs = resolve_batch(prof.gpu, scheduler, max_len, batched, seqs)
        if scheduler == "v1" and batched < seqs:
            section.problem("max_num_batched_tokens", batched, f"expected at least max_num_seqs ({seqs}); "
                            "vLLM refuses a smaller step budget")
        budget = vllm_budget(prof.gpu, prof.model, gpu_memory_utilization=util, max_model_len=max_len,
                             activation_gib=act, overhead_gib=over, block_size=block, tp=prof.tp,
                             max_num_batched_tokens=batched, max_num_seqs=seqs, cuda_graph_gib=graphs,
                             window_rule="v1" if scheduler == "v1" else "window")
        return VllmSpec(**common, gpu_memory_utilization=util, max_model_len=max_len, max_num_seqs=seqs,
                        max_num_batched_tokens=batched, block_size=block, activation_gib=act, overhead_gib=over,
                        cuda_graph_gib=graphs, scheduler=scheduler, prefix_cache_hit_ratio=hit, budget=budget)
