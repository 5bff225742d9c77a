"""Lower bounds on the CPU and memory a stack gives: Kubernetes accepts any quantity ("24" is 24 bytes, "1m" a
thousandth of a core), so a unit left out passes the API server and fails only on the node.

Memory. A service's `resources.memory` is its serving container's request and its limit
(manifests/inference_service.py), and the limit is the cgroup's memory.max: a server that needs more to start is
OOM-killed as it starts (runc: "container init was OOM-killed (memory limit too low?)",
opencontainers/runc libcontainer/process_linux.go), the pod crash-loops, the revision never becomes Ready and the
rollout strands for its progress deadline. KServe ships the runtimes the engines run on (kserve-vllmserver and
kserve-huggingfaceserver for vllm, tgi and naive; kserve-tritonserver) with a memory request and limit of 2Gi
(kserve/kserve config/runtimes/*.yaml, `KSERVE_RUNTIME_MEMORY`): below that the server's CUDA context, torch (or
Triton's backends) and the tokenizer are not expected to fit, but how far below it a server still starts is not
established here. So the floor (`SERVING_MEMORY_FLOOR`) is 1Gi, half of it, for every engine: it refuses the unit
mistakes it is for ("24" bytes, "24M", "100m" milli, "1Ki", "512Mi" meant as Gi: each far below any server's
start-up need) and accepts 1Gi-2Gi ("2G", "2000Mi", "1.9Gi": deliberate values within a few percent of KServe's,
which a refusal claiming an OOM kill would misreport).
CPU. `resources.cpu` is also request and limit, the CFS quota per 100 ms period. Engine start-up (interpreter,
imports, tokenizer, CUDA initialisation) takes 10-60 s on a core for an 8B model (../shared/reference/
knative-kserve.md, cold-start model); under a quota of c cores it takes 1/c times as long, so below 100m
(`SERVING_CPU_FLOOR`, a tenth of a core) the slow end no longer fits the default 600 s progress deadline (Knative's
and a Deployment's). Below 10m the kubelet sets its smallest quota, 1 ms per 100 ms (pkg/kubelet/kuberuntime/
helpers_linux.go milliCPUToQuota, minQuotaPeriod), so at "1m" that start-up takes 6,000 s. KServe's runtimes
ship "1".
`gpuNodeGroup.otherDaemonSets.memory` sums the cluster's own DaemonSets' memory requests per node for the fit
check: 0 is possible (none requests memory), but a positive sum below 1Mi is a unit left out, and it would let
pods that do not fit pass the fit check.
"""

from __future__ import annotations

import math

from catalog.allocatable import quantity
from stackconfig.formats import QUANTITY, matches
from validation.fields import Section

MIB, GIB = 2**20, 2**30
KSERVE_RUNTIME_MEMORY = 2 * GIB   # KServe's shipped runtimes' memory request and limit
SERVING_MEMORY_FLOOR = {"vllm": 1 * GIB, "tgi": 1 * GIB, "naive": 1 * GIB, "triton": 1 * GIB}
# What must fit beside the weights (which the GPU holds) in the container's memory, per engine, for the message.
START_UP_NEEDS = {"vllm": "CUDA context, torch and tokenizer", "tgi": "CUDA context, torch and tokenizer",
                  "naive": "CUDA context, torch and tokenizer", "triton": "CUDA context and backends"}
SERVING_CPU_FLOOR = 0.1  # cores
MIN_QUOTA_CORES = 0.01  # the kubelet's smallest CFS quota: 1 ms per 100 ms period
DAEMONSETS_MEMORY_FLOOR = MIB


def _unit_hint(value: str, suffix: str) -> str:
    """What a quantity with no unit, or with 'm' (milli) where 'Mi' was meant, probably meant."""
    if value[-1:].isdigit() and quantity(value) > 0:
        return f"; a quantity without a unit is bytes: did you mean {value}{suffix}?"
    if value.endswith("m"):
        return f"; 'm' is milli (thousandths of a byte): did you mean {value[:-1]}Mi?"
    return ""


def _bytes(n: float) -> str:
    """`n` bytes as Kubernetes sets the limit (Quantity.Value() rounds a fraction up to a whole byte), with a
    binary-unit reading from 1 KiB: "2,000,000,000 bytes (1.863 GiB)"."""
    whole = math.ceil(n)
    text = "1 byte" if whole == 1 else f"{whole:,} bytes"
    if whole != n and n < 1024:
        return f"{text} ({n:g}, rounded up)"
    for unit, size in (("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if whole >= size:
            value = whole / size
            return f"{text} ({value:,.0f} {unit})" if value >= 100 else f"{text} ({value:.4g} {unit})"
    return text


def check_serving_resources(sec: Section, engine: str, cpu: str, memory: str) -> None:
    """The serving container's `cpu` and `memory` (its request and limit) at least the engine's floor."""
    floor = SERVING_MEMORY_FLOOR.get(engine)
    if floor is not None and matches(QUANTITY, memory) and quantity(memory) < floor:
        sec.problem("memory", memory, f"expected at least {floor // GIB}Gi ({floor:,} bytes) for runtime.engine "
                    f"{engine}: {memory!r} is {_bytes(quantity(memory))}, which is taken for a unit left out. "
                    f"KServe ships its runtimes with {KSERVE_RUNTIME_MEMORY // GIB}Gi, and below that the server's "
                    f"{START_UP_NEEDS[engine]} are not expected to fit; the limit is the cgroup's memory.max, so "
                    "a server that needs more is OOM-killed as it starts (runc: \"container init was OOM-killed\") "
                    "and the rollout strands for its progress deadline" + _unit_hint(memory, "Gi"))
    cores = quantity(cpu) if matches(QUANTITY, cpu) else None
    if cores is not None and cores < SERVING_CPU_FLOOR:
        quota = max(cores, MIN_QUOTA_CORES)
        why = (f"{cpu!r} is a CFS quota of {quota * 100:g} ms per 100 ms, under which an engine start-up of 60 s on "
               f"a core takes {60 / quota:,.0f} s, past the default 600 s progress deadline, and the rollout strands"
               if cores else f"{cpu!r} gives it no CPU")
        sec.problem("cpu", cpu, f"expected at least 100m (a tenth of a core) for the serving container: {why}")


def check_daemonsets_memory(sec: Section, key: str, memory: str) -> None:
    """`gpuNodeGroup.otherDaemonSets.memory`: 0, or at least 1Mi."""
    if matches(QUANTITY, memory) and 0 < quantity(memory) < DAEMONSETS_MEMORY_FLOOR:
        sec.problem(key, memory, f"expected 0 or at least 1Mi ({DAEMONSETS_MEMORY_FLOOR:,} bytes), the sum of "
                    f"the cluster's own DaemonSets' memory requests per node: {memory!r} is "
                    f"{_bytes(quantity(memory))}, less than any container requests" + _unit_hint(memory, "Mi"))
