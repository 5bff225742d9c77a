"""simulation/engine_flags.py: vLLM's human-readable ints and what a raw InferenceService's args and env set in the
simulation (`server_from_manifest`), for scenario files as for the stack."""

from __future__ import annotations

import pytest

from simulation.engine_flags import human_readable_int
from simulation.isvc import ServingSpec, server_from_manifest


@pytest.mark.parametrize("text, value", [("2048", 2048), ("16k", 16_000), ("16K", 16_384), ("25.6k", 25_600),
                                         ("1m", 1_000_000), ("2M", 2 * 2**20), (" 8k ", 8000)])
def test_human_readable_int_reads_as_vllm_does(text, value):
    assert human_readable_int(text) == value


@pytest.mark.parametrize("text", ["1.5K", "auto", "8kb", ""])
def test_human_readable_int_refuses_what_vllm_refuses(text):
    with pytest.raises(ValueError):
        human_readable_int(text)


def _derived(engine: str, image: str = "", gpus: int = 1, args=(), env=None) -> dict:
    man = {"metadata": {"annotations": {"preflight.kserve.io/engine": engine}}}
    out = server_from_manifest(man, ServingSpec(gpus=gpus, image=image, args=tuple(args), env=env or {}))
    return {k: v for k, v in out.items() if k != "kind"}


def test_a_raw_manifest_reads_spellings_by_server_and_env_by_engine():
    assert _derived("vllm", "vllm/vllm-openai:v0.10.1", args=["--max_num_seqs=8", "--max-model-len", "32k"]) == {
        "max_num_seqs": 8, "max_model_len": 32_000}
    assert _derived("vllm", args=["--max_num_seqs=8", "--max_length=4096"]) == {"max_model_len": 4096}
    assert _derived("vllm", env={"VLLM_USE_V1": "0"}) == {"scheduler": "v0"}
    assert _derived("tgi", env={"MAX_BATCH_SIZE": "4", "CUDA_MEMORY_FRACTION": "0.5"},
                    args=["--max-batch-size=8"]) == {"max_num_seqs": 8, "gpu_memory_utilization": 0.5}
    assert _derived("vllm", gpus=2, args=["-tp", "4"]) == {"tensor_parallel_size": 2}
