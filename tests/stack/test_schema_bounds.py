"""Every numeric bound of the stack config, at the bound (no problem for that key) and one step outside (a problem
naming the key and the range) — so a moved bound fails a test (issue 9's mutation run moved 6 of 8 unnoticed)."""

from __future__ import annotations

import pytest

from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"


def _parse(stack: str, path: str, value) -> list[str]:
    """The problem paths (prefix stripped) after setting `path` (dots; [i] for list items) to `value`."""
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    node = values
    parts = path.split(".")
    for part in parts[:-1]:
        node = node[int(part[1:-1])] if part.startswith("[") else node.setdefault(part, {})
    node[parts[-1]] = value
    try:
        parse_stack_config(values, project, stack)
    except InputError as err:
        return [f"{p.path.split(':', 1)[1]}: {p.allowed}" for p in err.problems]
    return []


# (stack, key path, lowest allowed, highest allowed, step outside)
BOUNDS = [
    ("dev", "services.[0].minReplicas", 0, 1000, 1),
    ("dev", "services.[0].maxReplicas", 1, 1000, 1),
    ("dev", "services.[0].containerConcurrency", 0, 1000, 1),
    ("dev", "services.[0].scaleTarget", 1, 100000, 1),
    ("dev", "services.[0].timeout", 1, 600, 1),
    ("dev", "services.[0].resources.gpus", 1, 16, 1),
    ("dev", "services.[0].limits.maxBatchSize", 1, 4096, 1),
    ("dev", "services.[0].limits.maxInputTokens", 1, None, 1),
    ("dev", "services.[0].limits.maxNewTokens", 1, None, 1),
    ("dev", "services.[0].gpuMemoryUtilization", 0.1, 0.99, 0.001),
    ("dev", "services.[0].probes.startup.periodSeconds", 1, 3600, 1),
    ("dev", "services.[0].probes.startup.failureThreshold", 1, 1000, 1),
    ("dev", "services.[0].probes.readiness.initialDelaySeconds", 0, 3600, 1),
    ("dev", "services.[0].probes.liveness.timeoutSeconds", 1, 600, 1),
    ("dev", "gpuNodeGroup.minSize", 0, 1000, 1),
    ("dev", "gpuNodeGroup.maxSize", 1, 1000, 1),
    ("dev", "gpuNodeGroup.diskSizeGib", 50, 16384, 1),
    ("dev", "modelCache.sizeGib", 1, 65536, 1),
    ("dev", "gate.durationS", 60, 86400, 0.5),
    ("dev", "gate.seed", 0, 2 ** 31 - 1, 1),
    ("dev", "gate.requestBudget", 1000, 10 ** 9, 1),
    ("dev", "coldStart.imagePullMBps", 1, None, 0.01),
    ("dev", "coldStart.loadGBps", 0.01, None, 0.001),
]


def _key(path: str) -> str:
    return path.replace(".[", "[")


@pytest.mark.parametrize("stack, path, low, high, step", BOUNDS, ids=[b[1] for b in BOUNDS])
def test_bound(stack, path, low, high, step):
    key = _key(path)

    def range_problems(value):  # other checks (minSize <= maxSize …) may fire at an extreme; only the range counts
        return [p for p in _parse(stack, path, value)
                if p.startswith((f"{key}: expected an integer", f"{key}: expected a number",
                                 f"{key}: expected at most 600"))]

    for inside in [low, high] if high is not None else [low]:
        assert not range_problems(inside), (key, inside)
    for outside in [low - step] + ([high + step] if high is not None else []):
        assert range_problems(outside), (key, outside)


@pytest.mark.parametrize("engine, weights_gib, util, fits", [
    ("vllm", 42.0, 0.90, False),     # 42 GiB > 0.90 × 44.99 GiB of an L40S
    ("vllm", 42.0, 0.95, True),      # 42 GiB ≤ 0.95 × 44.99
    ("naive", 42.0, 0.90, True),     # a naive server has no utilization cap: the whole GPU
    ("naive", 46.0, 0.90, False),    # but not more than the GPU
    ("tgi", 44.0, 0.90, True),
])
def test_weights_fit_check_per_engine(engine, weights_gib, util, fits):
    def edit(values):
        values["catalog"] = {"models": {"big": {"paramsB": 21, "weightsGib": weights_gib, "layers": 40, "kvHeads": 8,
                                                "headDim": 128, "maxContext": 8192}}}
        svc = values["services"][0]
        svc["model"] = {"name": "big", "storageUri": "hf://org/big"}
        svc["runtime"] = {"engine": engine}
        svc["gpuMemoryUtilization"] = util
        svc.pop("workload", None), svc.pop("slo", None)

    project, values = stack_config_values("dev")
    values = project_values(values, project)
    edit(values)
    try:
        parse_stack_config(values, project, "dev")
        problems = []
    except InputError as err:
        problems = [str(p) for p in err.problems if p.path.endswith("services[0].model.name")]
    assert (not problems) is fits, problems
