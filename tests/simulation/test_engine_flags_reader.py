"""simulation/engine_flags.py: vLLM's human-readable ints and what a raw InferenceService's args and env set in the
simulation (`server_from_manifest`), for scenario files as for the stack."""

from __future__ import annotations

import pytest

from simulation.engine_flag_values import human_readable_int, rust_float, rust_uint
from simulation.engine_flags import TGI, VLLM_OPENAI, read_args
from simulation.isvc import ServingSpec, server_from_manifest


@pytest.mark.parametrize("text, value", [("2048", 2048), ("16k", 16_000), ("16K", 16_384), ("25.6k", 25_600),
                                         ("1m", 1_000_000), ("2M", 2 * 2**20), (" 8k ", 8000)])
def test_human_readable_int_reads_as_vllm_does(text, value):
    assert human_readable_int(text) == value


@pytest.mark.parametrize("text", ["1.5K", "auto", "8kb", "", "1" * 400 + "k", "9" * 306 + "t"])
def test_human_readable_int_refuses_what_vllm_refuses(text):
    """Review 12 (fuzz), F1: a decimal too large for a float (vLLM itself fails with OverflowError) is a ValueError
    here, so the loader refuses it at its key instead of ending in an internal error."""
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


@pytest.mark.parametrize("text, bits", [("1_024", 64), (" 8", 64), ("8 ", 64), ("\u0668", 64), ("-1", 64), ("", 64),
                                        ("65536", 16), ("4294967296", 32)])
def test_rust_uint_refuses_what_rusts_fromstr_refuses(text, bits):
    with pytest.raises(ValueError):
        rust_uint(text, bits)


@pytest.mark.parametrize("text", ["0.9_5", " 0.5", "0,5", "\u0660.5", "1e", "."])
def test_rust_float_refuses_what_rusts_fromstr_refuses(text):
    with pytest.raises(ValueError):
        rust_float(text)


def test_rust_numbers_read_what_rust_reads():
    assert (rust_uint("+8"), rust_uint("65535", 16), rust_float(".5"), rust_float("1."), rust_float("5e-1")) == (
        8, 65535, 0.5, 1.0, 0.5)


def test_tgi_short_flags_are_their_long_flag():
    """main.rs `#[clap(long, short)]`: -p is --port (the first declared of --port and --prometheus-port), -e --env."""
    assert read_args(TGI, ["-p", "3001", "-e", "-g=30"]).problems == []
    problems = read_args(TGI, ["--port=3000", "-p=3001"]).problems
    assert problems == [("-p=3001", "expected each flag once: TGI's launcher (clap) refuses a repeated flag")]
    assert [a for a, _ in read_args(TGI, ["-p", "http"]).problems] == ["-p http"]


def test_a_switch_with_a_value_sets_nothing():
    reading = read_args(VLLM_OPENAI, ["--disable-custom-all-reduce=false", "--no-enable-prefix-caching=true"])
    assert reading.values == {} and len(reading.problems) == 2


@pytest.mark.parametrize("scheduler, size, ok", [("v1", 16, True), ("v1", 128, True), ("v1", 8, False),
                                                 ("v1", 24, False), ("v1", 256, False), ("v0", 8, True),
                                                 ("v0", 1, False), ("v0", 48, False)])
def test_the_simulations_block_sizes_are_the_ones_vllm_starts_with(scheduler, size, ok):
    """rev12-runtimes F6: the simulation took any block_size 1..256, the stack any --block-size >= 1; both now take
    vLLM's choices that the scheduler's attention backend starts with (engine_flag_tables.STARTABLE_BLOCK_SIZES)."""
    from simulation.gpu.vllm import VllmServer
    from validation.fields import Section

    problems: list = []
    spec = VllmServer.parse_spec(Section({"model": "llama-3-8b", "gpu": "L40S", "scheduler": scheduler,
                                          "block_size": size}, "server", problems), None)
    assert (problems == [] and spec.block_size == size) if ok else (
        "server.block_size" in str(problems[0]) and len(problems) == 1)


def test_a_raw_manifests_visible_devices_and_swap_space_reach_no_server_key():
    """Checked against the pod (manifest_problems), never simulated."""
    from simulation.engine_flags import manifest_problems

    assert _derived("vllm", gpus=2, args=["--swap-space=8"], env={"CUDA_VISIBLE_DEVICES": "0,1"}) == {
        "tensor_parallel_size": 2}
    problems = manifest_problems("tgi", ServingSpec(gpus=2, env={"CUDA_VISIBLE_DEVICES": "0"}))
    assert [(where, value) for where, value, _ in problems] == [("env[CUDA_VISIBLE_DEVICES]", "0")]
