"""What `server.kind: vllm` reads: `VllmSpec`, the version's batch defaults and the OpenAI server's 400s
(shared by the engines, `vllm_v1.py` and `vllm_v0.py`, and by `vllm.py`, which picks one).

Defaults by GPU class (`vllm/engine/arg_utils.py: EngineArgs.get_batch_defaults`, OpenAI API server):
a GPU with ≥ 70 GiB that is not an A100 (H100, H200) gets `max_num_batched_tokens` 8192 and `max_num_seqs`
1024; others 2048 and 256. V1 fits an unset one to the other (`_set_default_max_num_seqs_and_batched_tokens_args`,
`resolve_batch`). V0 keeps 256 sequences and, without chunked prefill, a budget of max(max_model_len, 2048)
(`SchedulerConfig.__post_init__`). V0 turns chunked prefill on by itself above a 32,768-token context (`v0_chunks`),
and then its budget is 2048 tokens.

Start-up refusals (`batch_problems`; `SchedulerConfig._verify_args`, vllm/config.py, the same from 0.6 to 0.10):
a budget below `max_num_seqs` (both engines), and, without chunked prefill (V0), a budget below `max_model_len`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalog import Gpu, Model
from simulation.gpu.llm_engine import LlmSpec
from simulation.gpu.memory import BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, VllmBudget
from simulation.gpu.server_common import BAD_REQUEST

SCHEDULERS = ("v1", "v0")
V0_LONG_CONTEXT = 32768  # V0 chunks prefills by default above this max_model_len (`v0_chunks`)
CHUNKED_BUDGET = 2048  # V0's default max_num_batched_tokens with chunked prefill (SchedulerConfig.__post_init__)


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
    chunked_prefill: bool = True  # derived: V1 always; V0 above a 32K context (`v0_chunks`)


def v0_chunks(model: Model, max_model_len: int) -> bool:
    """Whether vLLM's V0 engine runs chunked prefill without being asked. `EngineArgs._set_default_args_v0`
    (vllm/engine/arg_utils.py, 0.8 to 0.10; the same rule inside `create_engine_config` in 0.7) turns it on
    when `--enable-chunked-prefill` is unset and max_model_len > 32768, on CUDA, unless the model has a
    sliding window (`get_sliding_window()`), is multimodal or MLA, or speculative decoding, LoRA, prompt adapters
    or a pooling runner are in use; of those the catalog states only the window (the others are not modelled)."""
    return model.kind == "llm" and max_model_len > V0_LONG_CONTEXT and not model.sliding_window


def chunks(scheduler: str, model: Model, max_model_len: int) -> bool:
    """Whether the engine chunks prefills: V1 always, V0 above a 32K context (`v0_chunks`)."""
    return scheduler == "v1" or v0_chunks(model, max_model_len)


def batch_defaults(gpu: Gpu, scheduler: str, max_model_len: int, chunked: bool = False) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) the vLLM version picks on this GPU when not given; `chunked`: V0
    with chunked prefill (`v0_chunks`)."""
    if scheduler == "v0":
        return (CHUNKED_BUDGET if chunked else max(max_model_len, 2048)), 256
    if gpu.memory_gib >= 70 and "a100" not in gpu.name.lower():
        return 8192, 1024
    return 2048, 256


def resolve_batch(gpu: Gpu, scheduler: str, max_model_len: int, batched: int | None, seqs: int | None,
                  chunked: bool = False) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM runs with, given the user's (None or 0: unset). V1
    (`EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`): an unset budget is at most max_num_seqs ×
    max_model_len, an unset max_num_seqs at most the budget. `chunked`: V0 with chunked prefill (`v0_chunks`)."""
    default_batched, default_seqs = batch_defaults(gpu, scheduler, max_model_len, chunked)
    out_batched, out_seqs = batched or default_batched, seqs or default_seqs
    if scheduler == "v1":
        if not batched:
            out_batched = min(out_seqs * max_model_len, out_batched)
        if not seqs:
            out_seqs = min(out_seqs, out_batched)
    return out_batched, out_seqs


def batch_problems(batched: int, seqs: int, max_model_len: int, chunked: bool) -> list[str]:
    """Why vLLM refuses to start with this step budget ([] when it starts): `SchedulerConfig._verify_args`
    (vllm/config.py) raises ValueError when max_num_batched_tokens < max_num_seqs, and, without chunked prefill
    (V0 below a 32K context, `v0_chunks`), when max_num_batched_tokens < max_model_len: a prompt must fit one pass."""
    out = []
    if not chunked and batched < max_model_len:
        out.append(f"expected at least max_model_len ({max_model_len}): vLLM's V0 engine without chunked prefill "
                   f"refuses to start ('max_num_batched_tokens ({batched}) is smaller than max_model_len "
                   f"({max_model_len})', SchedulerConfig._verify_args); raise it or lower max_model_len")
    if batched < seqs:
        out.append(f"expected at least max_num_seqs ({seqs}); vLLM refuses a smaller step budget "
                   "(SchedulerConfig._verify_args)")
    return out


def check_request(server: Any, request: Any) -> int | None:
    """The OpenAI server's 400s: the caps, and prompt + max_tokens above `max_model_len`."""
    spec = server.spec
    if ((spec.max_input_tokens is not None and request.input_tokens > spec.max_input_tokens)
            or (spec.max_new_tokens is not None and request.output_tokens > spec.max_new_tokens)
            or request.input_tokens + request.output_tokens > spec.max_model_len):
        server.stats["rejected_400"] += 1
        return BAD_REQUEST
    return None
