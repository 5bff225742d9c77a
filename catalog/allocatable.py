"""What a node offers to pods: allocatable = capacity − kube-reserved − the hard eviction threshold.

EKS AMIs reserve (awslabs/amazon-eks-ami `nodeadm/internal/kubelet/config.go`, the same formulas as AL2's
`bootstrap.sh` and Bottlerocket's `kube-reserved` defaults):
- CPU: 6 % of the first core, 1 % of the second, 0.5 % of cores 3–4, 0.25 % of every further core
  (`getCPUMillicoresToReserve`); a 4-vCPU node keeps 80m, so pods get 3,920m;
- memory: 255 MiB + 11 MiB × maxPods (`getMemoryMebibytesToReserve`), maxPods = ENIs × (IPv4 addresses per
  ENI − 1) + 2 (`eni_max_pods.go: calculateStandardMaxPods`, ENI figures from its `instance-info.jsonl`);
- eviction: `memory.available < 100Mi` (`evictionHard` default), also unavailable to pods.
Simplification: capacity is the instance's nominal memory; the kernel keeps a little more, so a pod that fits
with less than ~2 % to spare may still not schedule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from catalog import InstanceType

MIB = 2**20
EVICTION_HARD_MIB = 100
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


def allocatable(inst: InstanceType) -> Allocatable:
    return Allocatable(inst.name, inst.vcpus * 1000 - reserved_cpu_millis(inst.vcpus),
                       inst.memory_gib * 1024 * MIB - (reserved_memory_mib(inst.name) + EVICTION_HARD_MIB) * MIB,
                       inst.gpus)


_QUANTITY = re.compile(r"^(\d+(?:\.\d+)?)(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")
_FACTOR = {None: 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
           "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}


def quantity(text: str | int | float) -> float:
    """A Kubernetes quantity ("500m", "4", "24Gi") as a plain number (cores or bytes)."""
    m = _QUANTITY.match(str(text).strip())
    if not m:
        raise ValueError(f"not a Kubernetes quantity: {text!r}")
    return float(m.group(1)) * _FACTOR[m.group(2)]


def cpu_millis(text: str | int | float) -> int:
    return round(quantity(text) * 1000)
