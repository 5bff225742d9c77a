"""check_context at exactly the model's context (stackconfig/runtimes.py): vLLM refuses only a --max-model-len
above the model's (`_get_and_verify_max_len`: max_model_len > derived_max_model_len), so 8192 for llama-3-8b
(context 8192) starts, as does maxInputTokens + maxNewTokens = 8192 (rendered as --max-model-len 8192); one token
more is refused. The older at-the-limit case has neither maxNewTokens nor --max-model-len in runtime.args."""

from __future__ import annotations

from runtime_stack import chat_stack, refused
from stackconfig.schema import parse_stack_config


def _stack(runtime: dict, limits: dict) -> dict:
    cfg = chat_stack(limits=limits)
    cfg["services"][0]["runtime"] = runtime
    return cfg


def test_input_plus_new_tokens_equal_to_the_context_is_accepted_and_one_more_refused():
    parse_stack_config(_stack({"engine": "vllm"}, {"maxInputTokens": 7168, "maxNewTokens": 1024,
                                                   "maxBatchSize": 16}), "p", "dev")
    msg = refused(_stack({"engine": "vllm"}, {"maxInputTokens": 7169, "maxNewTokens": 1024, "maxBatchSize": 16}))
    assert "(7169 + 1024) <= 8192" in msg


def test_max_model_len_equal_to_the_context_in_args_is_accepted_and_one_more_refused():
    parse_stack_config(_stack({"engine": "vllm", "args": ["--max-model-len=8192"]}, {"maxBatchSize": 16}), "p", "dev")
    msg = refused(_stack({"engine": "vllm", "args": ["--max-model-len=8193"]}, {"maxBatchSize": 16}))
    assert "at most 8192" in msg and "_get_and_verify_max_len" in msg
