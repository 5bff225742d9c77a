"""Resolving `server.model` / `server.gpu` / `server.instance_type` and user-defined catalog entries."""

import pytest

from catalog import DEFAULT
from validation.fields import Section
from simulation.gpu.profile import parse_profile, profile_of


def parse(data, **kw):
    problems = []
    prof = parse_profile(Section(data, "server", problems), **kw)
    return prof, [str(p) for p in problems]


def test_catalog_names_resolve():
    prof, problems = parse({"model": "llama-3-8b", "gpu": "H100-80GB"})
    assert not problems and prof.model is DEFAULT.models["llama-3-8b"] and prof.gpu.name == "H100-80GB"
    assert profile_of("llama-3-8b", "L4").gpu.bandwidth_gbps == 300


def test_instance_type_gives_the_gpu_and_bounds_tensor_parallelism():
    prof, problems = parse({"model": "llama-3-70b", "instance_type": "p5.48xlarge", "tensor_parallel_size": 4})
    assert not problems and prof.gpu.name == "H100-80GB" and prof.tp == 4
    _, problems = parse({"model": "llama-3-70b", "instance_type": "g5.xlarge", "tensor_parallel_size": 4})
    assert any("tensor_parallel_size" in p and "at most 1" in p for p in problems)
    _, problems = parse({"model": "llama-3-8b", "instance_type": "g5.xlarge", "gpu": "L4"})
    assert any("carries A10G" in p for p in problems)


def test_scenario_model_name_is_the_default_only_when_the_catalog_knows_it():
    prof, problems = parse({"gpu": "A10G"}, default_model="llama-2-7b")
    assert not problems and prof.model.name == "llama-2-7b"
    _, problems = parse({"gpu": "A10G"}, default_model="my-internal-name")
    assert any(p.startswith("server.model") and "required" in p for p in problems)


@pytest.mark.parametrize("data, needle", [
    ({"model": "llama-9", "gpu": "A10G"}, "server.model: got 'llama-9'"),
    ({"model": "llama-3-8b", "gpu": "B200"}, "server.gpu: got 'B200'"),
    ({"model": "llama-3-8b"}, "give gpu"),
    ({"model": "llama-3-8b", "instance_type": "g7.huge"}, "server.instance_type"),
    ({"model": "resnet-50", "gpu": "A10G"}, "llm model"),
])
def test_mistakes_are_reported_with_their_key(data, needle):
    prof, problems = parse(data, kinds=("llm",))
    assert prof is None and any(needle in p for p in problems), problems


def test_user_defined_gpu_model_and_instance_type():
    data = {"model": "my-13b", "instance_type": "x9.big", "catalog": {
        "gpus": {"X9": {"memory_gib": 96, "bandwidth_gbps": 4000, "bf16_tflops": 900}},
        "instance_types": {"x9.big": {"gpu": "X9", "gpus": 2}},
        "models": {"my-13b": {"params_b": 13.0, "layers": 40, "kv_heads": 8, "head_dim": 128,
                              "max_context": 16384, "hidden_size": 5120, "vocab_size": 64000}}}}
    prof, problems = parse(data)
    assert not problems
    assert prof.gpu.memory_gib == 96 and prof.instance_type.gpus == 2
    assert prof.model.kv_bytes_per_token == 2 * 40 * 8 * 128 * 2


def test_user_entries_with_mistakes():
    data = {"model": "bad", "gpu": "A10G", "catalog": {
        "gpus": {"G": {"memory_gib": 0, "bandwidth_gbps": 100}},
        "models": {"bad": {"params_b": 7, "layers": 32, "kv_head": 8}},
        "instance_types": {"i": {"gpu": "nope", "gpus": 1}}}}
    prof, problems = parse(data)
    text = "\n".join(problems)
    assert prof is None
    assert "server.catalog.gpus.G.memory_gib" in text and "server.catalog.gpus.G.bf16_tflops" in text
    assert "server.catalog.models.bad.kv_head: got 8; unknown key; did you mean 'kv_heads'?" in text
    assert "needs layers, kv_heads, head_dim and max_context" in text
    assert "server.catalog.instance_types.i.gpu" in text
