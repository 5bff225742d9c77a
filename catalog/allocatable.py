"""What a node offers to pods: allocatable = capacity − kube-reserved − the hard eviction threshold.

EKS AMIs reserve (awslabs/amazon-eks-ami `nodeadm/internal/kubelet/config.go`, the same formulas as AL2's
`bootstrap.sh` and Bottlerocket's `kube-reserved` defaults):
- CPU: 6 % of the first core, 1 % of the second, 0.5 % of cores 3–4, 0.25 % of every further core
  (`getCPUMillicoresToReserve`); a 4-vCPU node keeps 80m, so pods get 3,920m;
- memory: 255 MiB + 11 MiB × maxPods (`getMemoryMebibytesToReserve`), maxPods = ENIs × (IPv4 addresses per
  ENI − 1) + 2 (`eni_max_pods.go: calculateStandardMaxPods`, ENI figures from its `instance-info.jsonl`);
- eviction: `memory.available < 100Mi` (`evictionHard` default), also unavailable to pods.
Capacity is not the instance's nominal memory: the kubelet reports the kernel's MemTotal, which lacks the struct
page array (64 bytes per 4 KiB page, 1.56 %), firmware and kernel reservations. Karpenter's measured table
(aws/karpenter-provider-aws `pkg/providers/instancetype/zz_generated.memory_overhead.go`, nominal − capacity) has
2.6–3.6 % for g5 (g5.xlarge 589 MiB of 16 GiB, g5.2xlarge 1,038 MiB of 32 GiB) and 4.3 % for g4dn.xlarge; its
default `vmMemoryOverheadPercent` is a deliberately pessimistic 7.5 % (karpenter-provider-aws#7929). We subtract
5 %, above every GPU instance type measured there, so a pod the check admits is not left Pending by a node
smaller than the nominal figure; a pod that fits with less than that to spare is refused.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from catalog import InstanceType

MIB = 2**20
EVICTION_HARD_MIB = 100
VM_MEMORY_OVERHEAD = 0.05  # nominal memory the kernel never reports as MemTotal (see the module docstring)
# instance type → (default max ENIs, IPv4 addresses per ENI), from amazon-eks-ami instance-info.jsonl.
ENIS = {
    **{f"g5.{s}": e for s, e in (("xlarge", (4, 15)), ("2xlarge", (4, 15)), ("4xlarge", (8, 30)),
                                  ("8xlarge", (8, 30)), ("12xlarge", (15, 50)), ("16xlarge", (8, 30)),
                                  ("24xlarge", (15, 50)), ("48xlarge", (7, 50)))},
    **{f"g6.{s}": e for s, e in (("xlarge", (4, 15)), ("2xlarge", (4, 15)), ("4xlarge", (8, 30)),
                                  ("8xlarge", (8, 30)), ("12xlarge", (8, 30)), ("16xlarge", (15, 50)),
                                  ("24xlarge", (15, 50)), ("48xlarge", (15, 50)))},
    **{f"g6e.{s}": e for s, e in (("xlarge", (4, 15)), ("2xlarge", (4, 15)), ("4xlarge", (8, 30)),
                                   ("8xlarge", (8, 30)), ("12xlarge", (10, 30)), ("16xlarge", (15, 50)),
                                   ("24xlarge", (10, 50)), ("48xlarge", (10, 50)))},
    "p4d.24xlarge": (15, 50), "p4de.24xlarge": (15, 50), "p5.48xlarge": (2, 50), "p5e.48xlarge": (2, 50),
    "p5en.48xlarge": (4, 50),
}
DEFAULT_MAX_PODS = 110  # nodeadm's defaultMaxPods for an instance type it does not know


def max_pods(instance_type: str) -> int:
    enis = ENIS.get(instance_type)
    return enis[0] * (enis[1] - 1) + 2 if enis else DEFAULT_MAX_PODS


def reserved_cpu_millis(vcpus: int) -> int:
    """getCPUMillicoresToReserve: per-range percentages of the node's millicores (integer maths as upstream)."""
    total = vcpus * 1000
    reserved = 0
    for start, end, basis_points in ((0, 1000, 600), (1000, 2000, 100), (2000, 4000, 50), (4000, total, 25)):
        if total > start:
            reserved += (min(total, end) - start) * basis_points // 10000
    return reserved


def reserved_memory_mib(instance_type: str) -> int:
    return 11 * max_pods(instance_type) + 255


@dataclass(frozen=True)
class Allocatable:
    instance_type: str
    cpu_millis: int
    memory_bytes: int
    gpus: int


def capacity_memory_mib(inst: InstanceType) -> int:
    """What the kubelet reports as the node's memory capacity (MemTotal), conservatively."""
    return math.floor(inst.memory_gib * 1024 * (1 - VM_MEMORY_OVERHEAD))


def allocatable(inst: InstanceType) -> Allocatable:
    return Allocatable(inst.name, inst.vcpus * 1000 - reserved_cpu_millis(inst.vcpus),
                       (capacity_memory_mib(inst) - reserved_memory_mib(inst.name) - EVICTION_HARD_MIB) * MIB,
                       inst.gpus)


_QUANTITY = re.compile(r"([0-9]+(?:\.[0-9]+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?", re.ASCII)  # ASCII digits, as Go
_FACTOR = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: str | int | float) -> float:
    """A Kubernetes quantity ("500m", "4", "24Gi") as a plain number (cores or bytes)."""
    m = _QUANTITY.fullmatch(str(text).strip())
    if not m:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    return float(m.group(1)) * _FACTOR[m.group(2)]


def cpu_millis(text: str | int | float) -> int:
    return round(quantity(text) * 1000)
