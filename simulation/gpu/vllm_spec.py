"""What `server.kind: vllm` reads: `VllmSpec`, the version's batch defaults and the OpenAI server's 400s
(shared by the engines, `vllm_v1.py` and `vllm_v0.py`, and by `vllm.py`, which picks one).

Defaults by GPU class (`vllm/engine/arg_utils.py: EngineArgs.get_batch_defaults`, OpenAI API server):
a GPU with ≥ 70 GiB that is not an A100 (H100, H200) gets `max_num_batched_tokens` 8192 and `max_num_seqs`
1024; others 2048 and 256. V0 keeps 256 and max(max_model_len, 2048). V1 fits an unset one to the other
(`_set_default_max_num_seqs_and_batched_tokens_args`, `resolve_batch`); vLLM refuses a budget below an explicit
`max_num_seqs` (`SchedulerConfig` validation), and so does this reader.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalog import Gpu
from simulation.gpu.llm_engine import LlmSpec
from simulation.gpu.memory import BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, VllmBudget
from simulation.gpu.server_common import BAD_REQUEST

SCHEDULERS = ("v1", "v0")


@dataclass(frozen=True)
class VllmSpec(LlmSpec):
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    max_model_len: int = 0  # 0 → the model's max_context
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 0  # tokens per step (v1) / per prefill pass (v0); 0 → the version's default
    block_size: int = BLOCK_SIZE
    activation_gib: float | None = None  # measured profile peak; None → the prior from the model's shape
    overhead_gib: float | None = None  # measured non-torch memory; None → the prior
    cuda_graph_gib: float = 0.0  # CUDA-graph memory, for versions that reserve it before the KV cache
    scheduler: str = "v1"
    prefix_cache_hit_ratio: float = 0.0  # share of each prompt found in the prefix cache (v1)
    budget: VllmBudget | None = None  # derived


def batch_defaults(gpu: Gpu, scheduler: str, max_model_len: int) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) the vLLM version picks on this GPU when not given."""
    if scheduler == "v0":
        return max(max_model_len, 2048), 256
    if gpu.memory_gib >= 70 and "a100" not in gpu.name.lower():
        return 8192, 1024
    return 2048, 256


def resolve_batch(gpu: Gpu, scheduler: str, max_model_len: int, batched: int | None, seqs: int | None
                  ) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM runs with, given the user's (None or 0: unset). V1
    (`EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`): an unset budget is at most max_num_seqs ×
    max_model_len, an unset max_num_seqs at most the budget."""
    default_batched, default_seqs = batch_defaults(gpu, scheduler, max_model_len)
    out_batched, out_seqs = batched or default_batched, seqs or default_seqs
    if scheduler == "v1":
        if not batched:
            out_batched = min(out_seqs * max_model_len, out_batched)
        if not seqs:
            out_seqs = min(out_seqs, out_batched)
    return out_batched, out_seqs


def check_request(server: Any, request: Any) -> int | None:
    """The OpenAI server's 400s: the caps, and prompt + max_tokens above `max_model_len`."""
    spec = server.spec
    if ((spec.max_input_tokens is not None and request.input_tokens > spec.max_input_tokens)
            or (spec.max_new_tokens is not None and request.output_tokens > spec.max_new_tokens)
            or request.input_tokens + request.output_tokens > spec.max_model_len):
        server.stats["rejected_400"] += 1
        return BAD_REQUEST
    return None
