"""`server.kind: tgi`: Hugging Face text-generation-inference — the V1-style engine behind TGI's own router.

TGI (v2/v3) batches continuously with chunked prefill and a pre-sized KV pool, so the batch is simulated by
`vllm_v1.VllmV1Engine`; what differs is the router in front (text-generation-inference `router/src`):

* **Admission limit.** At most `--max-concurrent-requests` (default 128) requests are inside; one more is
  answered 429 "Model is overloaded" (`InferError::Overloaded` → `StatusCode::TOO_MANY_REQUESTS`).
* **Token caps** (`validation.rs`): a prompt above `--max-input-tokens` (default max_total_tokens − 1), or
  prompt + max_new_tokens above `--max-total-tokens` (v3.3.4's default: the model's context, or the KV pool's
  tokens where fewer: `tgi_launcher.py`), is a validation error, answered 422 (`InferError::ValidationError` →
  `UNPROCESSABLE_ENTITY`) — where vLLM answers 400.
* **Batch sizes**: `--max-batch-prefill-tokens` is the step's token budget (v3.3.4's launcher default: what the
  cards' FLOP/s suit, at most the context and what memory allows, `tgi_launcher.default_prefill_tokens`; the flag's
  own help text, "max_input_tokens + 50", is stale), `--max-batch-size` the running requests (unset: only the
  admission limit bounds it). The router refuses to start on the checks in `tgi_launcher.router_problem`.

* **Tensor parallelism**: every all-reduce is NCCL's (`server/text_generation_server/utils/dist.py` initialises
  a `ProcessGroupNCCL`; TGI has no custom all-reduce kernel), so NVLink pays NCCL's latency prior
  (`roofline.allreduce_latency_s`), not vLLM's custom one-shot all-reduce's.
* **KV pool** (v3.3.4 `server/text_generation_server/models/flash_causal_lm.py: warmup`): after a warm-up
  forward pass over `--max-batch-prefill-tokens`, the blocks are what is free minus the share held back,
  `get_cuda_free_memory(device, MEMORY_FRACTION × TGI_WIGGLE_ROOM)` = free − (1 − fraction × wiggle) × total
  (`utils/import_utils.py`), with `--cuda-memory-fraction` default 1.0 (launcher `main.rs`) and
  `TGI_WIGGLE_ROOM` default 0.90 (`models/globals.py`; 0.95 in v3.0, 0.93 in v3.1–3.2). Free after the warm-up
  is total − weights − the warm-up's activation peak − non-torch memory, so the pool is vLLM's budget
  (`memory.vllm_budget`) with utilization = fraction × wiggle room: `gpu_memory_utilization` is the
  fraction here, `wiggle_room` the environment variable, and the warm-up pass is the profiling pass over
  the router's warm-up batch (`tgi_launcher.warmup_batch`: the step budget in requests of at most
  `--max-input-tokens`, at most `--max-batch-size` of them).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from validation.defaults import TGI_DEFAULT_MAX_CONCURRENT_REQUESTS
from validation.fields import Section
from simulation.gpu.memory import vllm_budget
from simulation.gpu.tgi_launcher import default_prefill_tokens, router_problem, warmup_batch
from simulation.gpu.vllm import VllmServer
from simulation.gpu.vllm_spec import VllmSpec
from simulation.gpu.vllm_v1 import VllmV1Engine
from simulation.request import TOO_MANY as OVERLOADED
from simulation.server import ModelServer, register_server

UNPROCESSABLE = 422
DEFAULT_MAX_CONCURRENT_REQUESTS = TGI_DEFAULT_MAX_CONCURRENT_REQUESTS   # launcher main.rs (validation/defaults.py)
DEFAULT_CUDA_MEMORY_FRACTION = 1.0  # launcher --cuda-memory-fraction
DEFAULT_WIGGLE_ROOM = 0.90  # TGI_WIGGLE_ROOM (server/text_generation_server/models/globals.py, v3.3)


@dataclass(frozen=True)
class TgiSpec(VllmSpec):
    max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS
    wiggle_room: float = DEFAULT_WIGGLE_ROOM


class TgiEngine(VllmV1Engine):
    """The V1 engine with TGI's router checks in front."""

    kind = "tgi"

    def __init__(self, env: Any, pod: Any, spec: TgiSpec, rng: Any) -> None:
        super().__init__(env, pod, spec, rng)
        self.stats["rejected_422"] = 0
        self.stats["rejected_429"] = 0

    def check(self, request: Any) -> int | None:
        spec = self.spec
        if (request.input_tokens > spec.max_input_tokens
                or request.input_tokens + request.output_tokens > spec.max_model_len
                or (spec.max_new_tokens is not None and request.output_tokens > spec.max_new_tokens)):
            self.stats["rejected_422"] += 1
            return UNPROCESSABLE
        if len(self._reqs) >= spec.max_concurrent_requests:
            self.stats["rejected_429"] += 1
            return OVERLOADED
        return None


@register_server
class TgiServer(ModelServer):
    """Reads `server:` for kind `tgi`: the vLLM keys (their TGI flags map onto them, simulation/isvc.py) and
    `max_concurrent_requests`; TGI's defaults where a key is absent (see the module docstring)."""

    kind = "tgi"

    def __new__(cls, env: Any, pod: Any, spec: TgiSpec, rng: Any) -> Any:
        return TgiEngine(env, pod, spec, rng)

    @classmethod
    def parse_spec(cls, section: Section, model: Any) -> TgiSpec | None:
        conc = section.int("max_concurrent_requests", DEFAULT_MAX_CONCURRENT_REQUESTS, min=1)
        fraction = section.float("gpu_memory_utilization", DEFAULT_CUDA_MEMORY_FRACTION, min=0.05, max=1.0)
        wiggle = section.float("wiggle_room", DEFAULT_WIGGLE_ROOM, min=0.0, min_exclusive=True, max=0.999)
        given = section.data
        spec = VllmServer.parse_spec(section, model, engine="tgi")
        if spec is None:
            return None
        prof = spec.profile
        batched = spec.max_num_batched_tokens if "max_num_batched_tokens" in given else default_prefill_tokens(
            prof.model, prof.gpu, prof.tp, fraction, wiggle if "wiggle_room" in given else None)
        seqs = spec.max_num_seqs if "max_num_seqs" in given else conc
        batched = max(batched, seqs)
        warm_tokens, warm_requests = warmup_batch(batched, spec.max_input_tokens,
                                                  seqs if "max_num_seqs" in given else None)

        def pool(max_total: int):
            return vllm_budget(prof.gpu, prof.model, gpu_memory_utilization=fraction * wiggle,
                               max_model_len=max_total, activation_gib=spec.activation_gib,
                               overhead_gib=spec.overhead_gib, block_size=spec.block_size, tp=prof.tp,
                               max_num_batched_tokens=warm_tokens, max_num_seqs=warm_requests,
                               cuda_graph_gib=spec.cuda_graph_gib, window_rule="window", engine="tgi")

        max_total, budget = spec.max_model_len, pool(spec.max_model_len)
        if "max_model_len" not in given and 0 < budget.kv_tokens < max_total:
            max_total = budget.kv_tokens   # the server sizes --max-total-tokens from the pool (tgi_launcher.py)
            budget = pool(max_total)
        max_input = spec.max_input_tokens or max_total - 1
        if budget.can_start and (refused := router_problem(max_input, max_total, batched, budget.kv_tokens)):
            budget = replace(budget, can_start=False, reason=refused)
        values = {f.name: getattr(spec, f.name) for f in fields(spec)}
        values.update(max_input_tokens=max_input, max_model_len=max_total, max_num_batched_tokens=batched,
                      max_num_seqs=seqs,
                      gpu_memory_utilization=fraction, budget=budget,
                      eff=replace(spec.eff, custom_all_reduce=False))   # NCCL all-reduces (`utils/dist.py`)
        return TgiSpec(**values, max_concurrent_requests=conc, wiggle_room=wiggle)
