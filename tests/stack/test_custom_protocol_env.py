"""env PROTOCOL on a custom predictor (TGI, vllm-openai): KServe's webhook admits only v1 and v2
(kserve v0.15.2 and v0.16.0 `pkg/apis/serving/v1beta1/predictor_custom.go: validateCustomProtocol`, reached from
`inference_service_validation.go: validateInferenceService` → `GetImplementation().Validate()`), so the stack
refuses any other value at load with the key, the value and what is allowed. A `spec.predictor.model` predictor
(KServe's huggingfaceserver) is not a CustomPredictor: its PROTOCOL is not checked by that rule."""

from __future__ import annotations

import pytest

from runtime_stack import TGI_IMAGE, chat_stack, refused
from stackconfig.schema import parse_stack_config

CUSTOM = [{"engine": "tgi", "image": TGI_IMAGE}, {"engine": "vllm", "image": "vllm/vllm-openai:v0.11.0"}]


@pytest.mark.parametrize("runtime", CUSTOM)
@pytest.mark.parametrize("value", ["grpc-v2", "V2", "openai", ""])
def test_a_protocol_the_webhook_refuses_is_refused_at_load(runtime, value):
    msg = refused(chat_stack(runtime=dict(runtime, env={"PROTOCOL": value})))
    assert f"services[0].runtime.env.PROTOCOL: got {value!r}" in msg
    assert "expected v1 or v2 (or no PROTOCOL) on a custom predictor" in msg
    assert "validateCustomProtocol" in msg


@pytest.mark.parametrize("runtime", CUSTOM)
@pytest.mark.parametrize("value", ["v1", "v2"])
def test_v1_and_v2_are_admitted(runtime, value):
    parse_stack_config(chat_stack(runtime=dict(runtime, env={"PROTOCOL": value})), "p", "dev")


def test_a_model_predictor_is_not_held_to_the_custom_rule():
    cfg = chat_stack(runtime={"engine": "vllm", "image": "kserve/huggingfaceserver:v0.15.2-gpu",
                              "env": {"PROTOCOL": "grpc-v2"}})
    parse_stack_config(cfg, "p", "dev")
