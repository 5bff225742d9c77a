"""The GPU model servers, one module each (`vllm_v0`, `naive`, `triton`; the shared LLM timeline in
`llm_engine`, shared helpers in `server_common`). Importing this module registers them all."""

from simulation.gpu.naive import NaiveServer, NaiveSpec
from simulation.gpu.llm_engine import LlmSpec
from simulation.gpu.server_common import OOM_REASON, new_stats
from simulation.gpu.triton import TritonServer, TritonSpec
from simulation.gpu.vllm_v0 import VllmServer, VllmSpec

__all__ = ["VllmServer", "NaiveServer", "TritonServer", "VllmSpec", "NaiveSpec", "TritonSpec", "LlmSpec",
           "new_stats", "OOM_REASON"]
