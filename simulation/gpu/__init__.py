"""GPU memory, OOM crash loops and LLM service times: pure models (`memory`, `roofline`, `crashloop`,
`profile`) and the model-server plug-ins built on them (`servers`: kinds `vllm`, `naive`, `triton`).

See docs/gpu-model.md.
"""
