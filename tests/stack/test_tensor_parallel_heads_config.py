"""A service whose `resources.gpus` does not divide its model's attention heads is refused when the stack loads,
before any resource is registered: KServe runs vLLM and TGI with one tensor-parallel shard per GPU of the pod, and
both refuse to start on a size that does not divide the heads (simulation/gpu/tensor_parallel.py)."""

from __future__ import annotations

import pytest

from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError


def _prod(gpus: int, **chat):
    project, values = stack_config_values("prod")
    values = project_values(values, project)
    values["gpuNodeGroup"].update(instanceTypes=["g6e.12xlarge"], minSize=1, maxSize=4, desiredSize=1)
    svc = values["services"][0]
    svc.update(resources={"gpus": gpus, "cpu": "16", "memory": "96Gi"}, minReplicas=1, maxReplicas=1, **chat)
    svc["annotations"].pop("autoscaling.knative.dev/initial-scale", None)
    return values, project


@pytest.mark.parametrize("runtime", [{}, {"runtime": {"engine": "tgi"}}])
def test_three_gpus_for_a_32_head_model_are_refused_at_load(runtime):
    values, project = _prod(3, **runtime)
    with pytest.raises(InputError) as err:
        parse_stack_config(values, project, "prod")
    text = str(err.value)
    assert "services[0].resources.gpus: got 3" in text
    assert "service chat's model: 1, 2, 4 on a g6e.12xlarge node" in text
    assert "llama-3-8b has 32 attention heads" in text and "must be divisible by tensor parallel size (3)" in text
    assert text.startswith("1 problem:")   # the service's other checks pass


@pytest.mark.parametrize("gpus", [1, 2, 4])
def test_gpu_counts_that_divide_the_heads_load(gpus):
    values, project = _prod(gpus)
    cfg = parse_stack_config(values, project, "prod")
    assert cfg.services[0].gpus == gpus


def test_the_naive_engine_is_not_held_to_the_rule():
    """Transformers' device_map="auto" places whole layers on each GPU: no head split."""
    values, project = _prod(3, runtime={"engine": "naive", "modelFormat": "huggingface"})
    try:
        parse_stack_config(values, project, "prod")
    except InputError as err:
        assert "attention heads" not in str(err)


@pytest.mark.parametrize("engine, why", [
    ("vllm", "qwen2.5-14b has num_key_value_heads 8, which 5 GPUs can neither split nor replicate evenly"),
    ("tgi", "qwen2.5-14b has num_key_value_heads 8, which 5 shards cannot share evenly"),
])
def test_five_gpus_for_a_model_with_8_kv_heads_are_refused_at_load(engine, why):
    """qwen2.5-14b's 40 query heads split over 5 GPUs, its 8 KV heads (and 13,824-wide MLP) do not (review
    rev12-runtimes F3, r1_kv_heads_tp.py): vLLM's QKVParallelLinear and TGI's Qwen2 loader stop the worker."""
    from runtime_stack import chat_stack, with_service

    cfg = chat_stack()
    cfg["gpuNodeGroup"] = {"instanceTypes": ["p4de.24xlarge"]}
    for gpus in (5, 8):
        cfg = with_service(cfg, runtime={"engine": engine}, maxReplicas=1,
                           resources={"gpus": gpus, "cpu": "4", "memory": "64Gi"},
                           model={"name": "qwen2.5-14b", "storageUri": "hf://m/l", "public": True})
        if gpus == 8:
            assert parse_stack_config(cfg, "p", "dev").services[0].gpus == 8   # control: 8 splits all three
            continue
        with pytest.raises(InputError) as err:
            parse_stack_config(cfg, "p", "dev")
        text = str(err.value)
        assert "services[0].resources.gpus: got 5" in text and why in text
        assert "service chat's model: 1, 2, 4, 8 on a p4de.24xlarge node" in text
        assert "intermediate_size 13824" in text and "attention heads" not in text
