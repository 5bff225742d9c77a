"""The GPU model servers, one module each: `vllm` (keys and defaults; engines `vllm_v1`, `vllm_v0`),
`tgi` (TGI's router over the V1 engine), `naive`, `triton`; the LLM timeline `naive` and `vllm_v0` share in
`llm_engine`, shared helpers in `server_common`. Importing this module registers them all."""

from simulation.gpu.naive import NaiveServer, NaiveSpec
from simulation.gpu.llm_engine import LlmSpec
from simulation.gpu.server_common import OOM_REASON, new_stats
from simulation.gpu.tgi import TgiEngine, TgiServer, TgiSpec
from simulation.gpu.triton import TritonServer, TritonSpec
from simulation.gpu.vllm import VllmServer
from simulation.gpu.vllm_spec import VllmSpec
from simulation.gpu.vllm_v0 import VllmV0Engine
from simulation.gpu.vllm_v1 import VllmV1Engine

__all__ = ["VllmServer", "VllmV0Engine", "VllmV1Engine", "TgiServer", "TgiEngine", "TgiSpec", "NaiveServer",
           "TritonServer", "VllmSpec", "NaiveSpec", "TritonSpec", "LlmSpec", "new_stats", "OOM_REASON"]
