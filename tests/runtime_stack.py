"""A one-service stack on g6e.12xlarge (4 × L40S) for the runtime tests (tests/stack/test_runtimes.py,
tests/stack/test_engine_flags_*.py), the load-time refusal it gets, and the server the gate simulates for it."""

from __future__ import annotations

import copy

import pytest

from gate import scenario_for
from simulation import load_scenario
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

TGI_IMAGE = "ghcr.io/huggingface/text-generation-inference:3.3.4"
OPENAI = "vllm/vllm-openai:v0.11.0"
TRITON_IMAGE = "nvcr.io/nvidia/tritonserver:25.08-py3"     # the staging stack's


def chat_stack(**service) -> dict:
    """A fresh config: cluster, one GPU node group and the service `chat` (llama-3-8b on 1 GPU), `service` merged in."""
    return {
        "cluster": {"name": "c", "subnetIds": ["subnet-0a1b2c3d"], "createNodeRole": True},
        "gpuNodeGroup": {"instanceTypes": ["g6e.12xlarge"]},   # 4 × L40S
        "services": [{"name": "chat", "maxReplicas": 2, "resources": {"gpus": 1, "cpu": "4", "memory": "24Gi"},
                      "model": {"name": "llama-3-8b", "storageUri": "hf://m/l", "public": True},
                      "workload": {"kind": "poisson", "rate": 1.0}, **copy.deepcopy(service)}],
    }


def with_service(base: dict, runtime: dict | None = None, **service) -> dict:
    """A copy of `base` whose first service has `service` merged in (and `runtime`, when given)."""
    cfg = copy.deepcopy(base)
    cfg["services"][0].update(service)
    if runtime is not None:
        cfg["services"][0]["runtime"] = runtime
    return cfg


def refused(cfg: dict) -> str:
    """The InputError text the stack's load-time checks give `cfg` (fails when it is accepted)."""
    with pytest.raises(InputError) as err:
        parse_stack_config(cfg, "p", "dev")
    return str(err.value)


def rt_cfg(runtime: dict, gpus: int = 1, **top) -> dict:
    """`chat_stack()` with its service's `runtime` and GPU count replaced, and `top`-level keys merged in."""
    cfg = chat_stack()
    cfg["services"][0]["runtime"] = runtime
    cfg["services"][0]["resources"]["gpus"] = gpus
    cfg.update(top)
    return cfg


def sim_spec(cfg: dict):
    """The server spec the gate simulates for `cfg`'s first service (its steady scenario)."""
    stack = parse_stack_config(cfg, "p", "dev")
    return load_scenario(scenario_for(stack, stack.services[0])).server.spec


def triton_stack(args: list[str], image: str | None = TRITON_IMAGE) -> dict:
    """`chat_stack()` serving resnet-50 on Triton (`image`, or KServe's default when None) with `args`."""
    runtime = {"engine": "triton", "modelFormat": "onnx", "args": args, **({"image": image} if image else {})}
    return with_service(chat_stack(), runtime=runtime, model={"name": "resnet-50", "storageUri": "hf://m/r",
                                                              "public": True},
                        limits={"maxBatchSize": 8, "maxImagePixels": 224 * 224})


def triton_refusal(args: list[str], shown: str, why: str, image: str | None = TRITON_IMAGE) -> str:
    """The load-time refusal of `triton_stack(args, image)`, checked to name `shown` in runtime.args and `why`."""
    text = refused(triton_stack(args, image))
    assert f"services[0].runtime.args: got '{shown}'; expected" in text, text
    assert why in text, text
    return text
