"""Lower bounds on the CPU and memory a stack gives: Kubernetes accepts any quantity ("24" is 24 bytes, "1m" a
thousandth of a core), so a unit left out passes the API server and fails only on the node.

Memory. A service's `resources.memory` is its serving container's request and its limit
(manifests/inference_service.py), and the limit is the cgroup's memory.max: a server that needs more to start is
OOM-killed as it starts (runc: "container init was OOM-killed (memory limit too low?)",
opencontainers/runc libcontainer/process_linux.go), the pod crash-loops, the revision never becomes Ready and the
rollout strands for its progress deadline. The floors (`SERVING_MEMORY_FLOOR`):
- vllm, tgi, naive: 2Gi. KServe ships the runtimes these run on, kserve-vllmserver and kserve-huggingfaceserver,
  with a memory request and limit of 2Gi (kserve/kserve config/runtimes/kserve-vllmserver.yaml,
  kserve-huggingfaceserver.yaml): what their own project starts them with. Each is a Python process that imports
  torch, creates a CUDA context and loads the tokenizer before it reads a weight (vLLM's V1 engine core does that
  again in a second process; TGI runs a Python shard beside its Rust router), so a limit below 2Gi is taken for a
  unit left out, not a tuned value.
- triton: 1Gi, half of KServe's kserve-tritonserver (2Gi, config/runtimes/kserve-tritonserver.yaml): Triton is a
  C++ server without a Python interpreter or torch and may start in less, so the floor is kept low enough to
  refuse only the unit mistakes ("16", "16M") rather than claim its exact start-up need.
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

from catalog.allocatable import quantity
from stackconfig.formats import QUANTITY, matches
from validation.fields import Section

MIB, GIB = 2**20, 2**30
SERVING_MEMORY_FLOOR = {"vllm": 2 * GIB, "tgi": 2 * GIB, "naive": 2 * GIB, "triton": 1 * GIB}
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
    return "1 byte" if n == 1 else f"{n:,.0f} bytes" if n == int(n) else f"{n:,g} bytes"


def check_serving_resources(sec: Section, engine: str, cpu: str, memory: str) -> None:
    """The serving container's `cpu` and `memory` (its request and limit) at least the engine's floor."""
    floor = SERVING_MEMORY_FLOOR.get(engine)
    if floor is not None and matches(QUANTITY, memory) and quantity(memory) < floor:
        sec.problem("memory", memory, f"expected at least {floor // GIB}Gi ({_bytes(floor)}) for runtime.engine "
                    f"{engine}: {memory!r} is {_bytes(quantity(memory))}, and the container limit is the cgroup's "
                    "memory.max, so the server is OOM-killed as it starts (runc: \"container init was OOM-killed\") "
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
        sec.problem(key, memory, f"expected 0 or at least 1Mi ({_bytes(DAEMONSETS_MEMORY_FLOOR)}), the sum of "
                    f"the cluster's own DaemonSets' memory requests per node: {memory!r} is "
                    f"{_bytes(quantity(memory))}, less than any container requests" + _unit_hint(memory, "Mi"))
