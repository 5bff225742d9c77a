"""GPU memory, OOM crash loops and LLM service times: pure models (`memory`, `roofline`, `crashloop`, `profile`) and the
model-server plug-ins built on them (one module each — `vllm_v0`, `naive`, `triton` — on the shared `llm_engine`
timeline; `servers` imports them all).

See docs/gpu-model.md.
"""
