"""Registers the GPU model servers (`vllm`, `naive`, `triton`) with `simulation.server`'s registry.

`simulation.server._PLUGIN_MODULES` imports this module on the first server look-up; the servers live in
`simulation/gpu/servers.py` (one module per engine).
"""

import simulation.gpu.servers  # noqa: F401  (registers on import)
