"""`server.kind: vllm`: the keys, the version's defaults, and the scheduler it runs.

`scheduler: v1` (default) is vLLM's V1 engine (vLLM ≥ 0.8, the only engine from 0.10): one token budget
per step, chunked prefill, per-step KV blocks, preemption by recompute (`vllm_v1.py`). `scheduler: v0` is
the V0 scheduler, for users still on an older vLLM or `VLLM_USE_V1=0`: without chunked prefill up to a
32,768-token `max_model_len` (`vllm_v0.py`: whole-request KV reservation at admission, prefill passes alone, no
preemption), and with it above, where V0 turns chunked prefill on by default (`vllm_spec.v0_chunks`): a step
budget of 2048 tokens, profiled over 2048 tokens, simulated by the V1 engine (V0's chunked scheduler also runs
decodes and running prefills before new ones within one budget, and preempts by recompute; simplification: V0
reserves a prompt's blocks when it admits it, V1 chunk by chunk). V0's budget must hold `max_num_seqs`, and
without chunked prefill `max_model_len` (`vllm_spec.batch_problems`), as V1's must hold `max_num_seqs`.

Defaults by GPU class and the OpenAI server's 400s: `vllm_spec.py`. `disable_custom_all_reduce: true` is vLLM's
`--disable-custom-all-reduce` (read from the manifest's args, `simulation/isvc.py`): every tensor-parallel
all-reduce runs on NCCL, whose latency prior on NVLink is higher (`roofline.uses_custom_all_reduce`).
`block_size` is one vLLM starts with on the scheduler's attention backend (`STARTABLE_BLOCK_SIZES`: V1 16–128,
V0 8–128, powers of two).
A `tensor_parallel_size` the engine cannot split the model's query heads, KV heads or MLP over is refused
(`tensor_parallel.py`; TGI's rules where `tgi.py` reads through here).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from validation.fields import Section
from simulation.engine_flag_tables import STARTABLE_BLOCK_SIZES, VLLM_BLOCK_SIZES
from simulation.gpu.llm_engine import llm_common
from simulation.gpu.memory import BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, vllm_budget
from simulation.gpu.server_common import model_name
from simulation.gpu.tensor_parallel import heads_problem, shard_sizes
from simulation.gpu.vllm_spec import SCHEDULERS, VllmSpec, batch_problems, chunks, resolve_batch
from simulation.gpu.vllm_v0 import VllmV0Engine
from simulation.gpu.vllm_v1 import VllmV1Engine
from simulation.server import ModelServer, register_server


@register_server
class VllmServer(ModelServer):
    """Reads `server:` for kind `vllm` and builds the engine `scheduler` names (see the module docstring)."""

    kind = "vllm"

    def __new__(cls, env: Any, pod: Any, spec: VllmSpec, rng: Any) -> Any:
        engine = VllmV1Engine if spec.chunked_prefill else VllmV0Engine
        return engine(env, pod, spec, rng)

    @classmethod
    def parse_spec(cls, section: Section, model: Any, engine: str = "vllm") -> VllmSpec | None:
        """`engine`: whose tensor-parallel rules apply ("tgi" when `TgiServer.parse_spec` reads through here)."""
        common = llm_common(section, model_name(model))
        scheduler = section.choice("scheduler", list(SCHEDULERS), "v1")
        util = section.float("gpu_memory_utilization", DEFAULT_GPU_MEMORY_UTILIZATION, min=0.05, max=1.0)
        max_len = section.int("max_model_len", 0, min=1)
        seqs = section.int("max_num_seqs", 0, min=1)
        batched = section.int("max_num_batched_tokens", 0, min=1)
        block = section.int("block_size", BLOCK_SIZE, min=1)
        act = section.float("activation_gib", None, min=0.0)
        over = section.float("overhead_gib", None, min=0.0)
        graphs = section.float("cuda_graph_gib", 0.0, min=0.0)
        hit = section.float("prefix_cache_hit_ratio", 0.0, min=0.0, max=0.99)
        no_custom_ar = section.bool("disable_custom_all_reduce", False)
        if common is None:
            return None
        if no_custom_ar:
            common["eff"] = replace(common["eff"], custom_all_reduce=False)
        if block not in STARTABLE_BLOCK_SIZES[scheduler]:   # what the stack's --block-size check allows
            section.problem("block_size", block, f"expected one of {', '.join(map(str, VLLM_BLOCK_SIZES))} "
                            f"(vLLM's choices), and with the {scheduler} engine one of "
                            f"{', '.join(map(str, STARTABLE_BLOCK_SIZES[scheduler]))}: the others do not start "
                            "(simulation/engine_flag_tables.py)")
            block = BLOCK_SIZE
        prof = common["profile"]
        if max_len and max_len > prof.model.max_context:
            section.problem("max_model_len", max_len, f"expected at most {prof.model.max_context} "
                            f"({prof.model.name}'s context length)")
        if bad_tp := heads_problem(prof.model, prof.tp, engine):
            sizes = shard_sizes(prof.model, prof.instance_type.gpus if prof.instance_type else 16, engine)
            section.problem("tensor_parallel_size", prof.tp, f"expected a size {engine} can split the model's "
                            f"query heads, KV heads and MLP over ({', '.join(map(str, sizes))}): {bad_tp}")
        max_len = max_len or prof.model.max_context
        chunked = chunks(scheduler, prof.model, max_len)
        batched, seqs = resolve_batch(prof.gpu, scheduler, max_len, batched, seqs, chunked)
        for why in batch_problems(batched, seqs, max_len, chunked):
            section.problem("max_num_batched_tokens", batched, why)
        budget = vllm_budget(prof.gpu, prof.model, gpu_memory_utilization=util, max_model_len=max_len,
                             activation_gib=act, overhead_gib=over, block_size=block, tp=prof.tp,
                             max_num_batched_tokens=batched, max_num_seqs=seqs, cuda_graph_gib=graphs,
                             window_rule="v1" if scheduler == "v1" else "window", engine=engine)
        return VllmSpec(**common, gpu_memory_utilization=util, max_model_len=max_len, max_num_seqs=seqs,
                        max_num_batched_tokens=batched, block_size=block, activation_gib=act, overhead_gib=over,
                        cuda_graph_gib=graphs, scheduler=scheduler, prefix_cache_hit_ratio=hit, budget=budget,
                        chunked_prefill=chunked)
