"""`cluster:` and `gpuNodeGroup:`: the EKS cluster the stack joins and its tainted GPU node group."""

from __future__ import annotations

import re

from catalog import Catalog
from stackconfig.formats import (DNS_LABEL, EKS_CLUSTER_NAME, EKS_NODE_GROUP_NAME, LABEL_VALUE, QUALIFIED_NAME,
                                 QUANTITY, ROLE_ARN, SUBNET_ID, check_eks_key, check_eks_label_value, check_format,
                                 check_k8s_name, check_labels, matches)
from stackconfig.resource_floors import check_daemonsets_memory
from stackconfig.types import ClusterConfig, NodeGroupConfig, Taint
from validation.cluster_admission import DEFAULT_KNATIVE, release
from validation.errors import Problem
from validation.fields import Section
from validation.kubernetes import GPU_RESOURCE

GPU_TAINT = {"key": GPU_RESOURCE, "value": "true", "effect": "NoSchedule"}
GPU_LABEL = {"nvidia.com/gpu.present": "true"}
AMI_TYPES = ["AL2023_x86_64_NVIDIA", "BOTTLEROCKET_x86_64_NVIDIA"]
# EKS stopped publishing AL2 AMIs when Amazon Linux 2 support for EKS ended (26 November 2025).
RETIRED_AMI_TYPES = {"AL2_x86_64_GPU": "AL2023_x86_64_NVIDIA"}
TAINT_EFFECTS = ["NoSchedule", "NoExecute", "PreferNoSchedule"]


def node_group_name_prefix(cluster: str, node_group: str) -> str:
    """The EKS node group's name prefix (`aws.eks.NodeGroup` adds a unique 26-character suffix)."""
    return f"{cluster}-{node_group}-"


def check_node_group_name(cluster: ClusterConfig, node_group: NodeGroupConfig, problems: list[Problem]) -> None:
    if not matches(EKS_CLUSTER_NAME, cluster.name):
        return  # cluster.name is reported on its own; blaming gpuNodeGroup.name for it would mislead
    prefix = node_group_name_prefix(cluster.name, node_group.name)
    if len(prefix) > 63 - 26 or not matches(EKS_NODE_GROUP_NAME, prefix):
        problems.append(Problem("gpuNodeGroup.name", node_group.name, f"expected letters, digits, '-' and '_', "
                                f"with '<cluster.name>-<name>-' ({prefix!r}) at most 37 characters: EKS node group "
                                "names are at most 63 and the provider appends a 26-character unique suffix"))


def parse_cluster(sec: Section, project: str) -> ClusterConfig:
    out = ClusterConfig(
        name=sec.str("name", "", required=True),
        subnet_ids=sec.str_list("subnetIds", [], required=True),
        node_role_arn=sec.str("nodeRoleArn"),
        create_node_role=sec.bool("createNodeRole", False),
        kubernetes_version=_kubernetes_version(sec),
        namespace=sec.str("namespace", "kserve-inference"),
    )
    check_k8s_name(sec, "namespace", out.namespace, DNS_LABEL, "namespace name")
    if out.name:
        check_format(sec, "name", out.name, EKS_CLUSTER_NAME, "expected an EKS cluster name: letters, digits, "
                     "'-' and '_', starting with a letter or digit, at most 100 characters")
    for i, subnet in enumerate(out.subnet_ids):
        check_format(sec, f"subnetIds[{i}]", subnet, SUBNET_ID, "expected a subnet ID such as "
                     "'subnet-0a1b2c3d4e5f60001' ('subnet-' and 8 or 17 hexadecimal digits)")
    if not out.subnet_ids and sec.has("subnetIds"):
        sec.problem("subnetIds", [], "expected at least one subnet ID")
    check_format(sec, "nodeRoleArn", out.node_role_arn, ROLE_ARN, "expected an IAM role ARN such as "
                 "'arn:aws:iam::123456789012:role/eks-gpu-node'")
    if not out.node_role_arn and not out.create_node_role:
        sec.problem("nodeRoleArn", None, "set nodeRoleArn to an existing node IAM role, or createNodeRole: true")
    if out.node_role_arn and out.create_node_role:
        sec.problem("createNodeRole", True, "expected false when nodeRoleArn is set (use one or the other)")
    sec.done()
    return out


# cluster.kubernetesVersion: the schema version every manifest is validated against (kubernetes-validate ships
# 1.25-1.37), so it should be the cluster's. Knative Serving's controllers and webhooks refuse to start on an older
# API server (knative/pkg version/version.go, CheckMinimumVersion, at the commit each release's go.mod pins):
# v1.32.0 on release-1.20, v1.33.0 on release-1.21, v1.34.0 on release-1.22 and -1.23. So below 1.32 is refused
# (no supported Knative starts below it; EKS has also ended every older version: 1.31's extended support ended
# 26 November 2026), and `check_knative_floor` holds the version to the floor of `knative.version`.
# The default is the newest EKS version verified: 1.36 (on EKS since June 2026, standard support to August 2027;
# amazon-eks-ami v20260714 builds 1.36 AMIs). 1.37 is accepted, as kubernetes-validate has its schemas.
KNATIVE_KUBERNETES_FLOOR: dict[tuple[int, int], int] = {(1, 20): 32, (1, 21): 33, (1, 22): 34, (1, 23): 34}
KNATIVE_FLOOR_MINOR = min(KNATIVE_KUBERNETES_FLOOR.values())  # Kubernetes 1.32: the oldest any Knative 1.2x starts on
KUBERNETES_VERSIONS = [f"1.{v}" for v in range(KNATIVE_FLOOR_MINOR, 38)]
DEFAULT_KUBERNETES_VERSION = "1.36"
KNATIVE_MINIMUM = "1.32 for Knative Serving 1.20, 1.33 for 1.21, 1.34 for 1.22 and 1.23"


def check_knative_floor(cluster: ClusterConfig, knative_version: tuple[int, int], problems: list[Problem]) -> None:
    """cluster.kubernetesVersion against the floor of the cluster's Knative Serving (`knative.version`, parsed after
    the cluster section). Skipped when either key was refused already: its default would stand in for it."""
    if any(p.path in ("cluster", "cluster.kubernetesVersion", "knative", "knative.version") for p in problems):
        return
    floor, minor = KNATIVE_KUBERNETES_FLOOR[knative_version], int(cluster.kubernetes_version.split(".")[1])
    if minor < floor:
        knative = release(knative_version)
        default = " (the default when unset)" if knative_version == DEFAULT_KNATIVE else ""
        fits = [f'"{release(v)}"' for v, f in KNATIVE_KUBERNETES_FLOOR.items() if f <= minor]
        problems.append(Problem("cluster.kubernetesVersion", cluster.kubernetes_version,
                                f"expected at least 1.{floor} with knative.version \"{knative}\"{default}: Knative "
                                f"Serving {knative}'s controllers and webhooks refuse to start on an older API server "
                                f"(knative/pkg version/version.go, minimum Kubernetes version {KNATIVE_MINIMUM}). Set "
                                f"knative.version to the release the cluster runs ({' or '.join(fits)} "
                                f"{'starts' if len(fits) == 1 else 'start'} on "
                                f"{cluster.kubernetes_version}), or upgrade the cluster and set its version here"))


def _kubernetes_version(sec: Section) -> str:
    allowed = ", ".join(repr(v) for v in KUBERNETES_VERSIONS)
    raw = sec.raw("kubernetesVersion")
    if isinstance(raw, float):  # YAML reads 1.30 as the number 1.3
        sec.problem("kubernetesVersion", raw, f"expected a quoted version string, one of {allowed} (quote it: "
                    "YAML reads 1.30 as 1.3)")
        return DEFAULT_KUBERNETES_VERSION
    if isinstance(raw, str) and re.fullmatch(r"1\.([0-9]+)", raw) and int(raw[2:]) < KNATIVE_FLOOR_MINOR:
        sec.problem("kubernetesVersion", raw, f"expected one of {allowed}: Knative's controllers refuse to start "
                    f"on Kubernetes {raw} (knative/pkg version/version.go, minimum Kubernetes version "
                    f"{KNATIVE_MINIMUM}), and EKS no longer runs it (1.31's extended support ended 26 November "
                    "2026). Upgrade the cluster and set its version here")
        return DEFAULT_KUBERNETES_VERSION
    return sec.choice("kubernetesVersion", KUBERNETES_VERSIONS, DEFAULT_KUBERNETES_VERSION)


def _taints(sec: Section) -> list[Taint]:
    items = sec.sections("taints")
    if not sec.has("taints"):
        return [Taint(**GPU_TAINT)]
    out: list[Taint] = []
    for t in items:
        taint = Taint(t.str("key", "", required=True), t.str("value", ""),
                      t.choice("effect", TAINT_EFFECTS, "NoSchedule"))
        check_format(t, "key", taint.key or None, QUALIFIED_NAME, "expected a taint key: an optional DNS subdomain "
                     "prefix and '/', then at most 63 letters, digits, '-', '_' or '.'")
        check_eks_key(t, "key", taint.key, "taint")
        check_format(t, "value", taint.value, LABEL_VALUE, "expected a taint value: at most 63 letters, digits, "
                     "'-', '_' or '.', starting and ending with a letter or digit")
        if any((o.key, o.effect) == (taint.key, taint.effect) for o in out):
            t.problem("key", taint.key, f"expected one taint per key and effect ({taint.key}:{taint.effect} is "
                      "already set; EKS rejects duplicates)")
        out.append(taint)
        t.done()
    return out


def _other_daemonsets(sec: Section) -> dict[str, str]:
    """What the cluster's own DaemonSets request per node, for the fits-the-node check (manifests/node_fit.py)."""
    out = {"other_daemonsets_cpu": sec.quantity("cpu", "200m"),
           "other_daemonsets_memory": sec.quantity("memory", "512Mi")}
    for key, value in zip(("cpu", "memory"), out.values()):
        if not matches(QUANTITY, value):
            sec.problem(key, value, "expected a Kubernetes quantity such as \"200m\" or \"512Mi\"")
    check_daemonsets_memory(sec, "memory", out["other_daemonsets_memory"])
    sec.done()
    return out


def _ami_type(sec: Section) -> str:
    raw = sec.raw("amiType")
    if raw in RETIRED_AMI_TYPES:
        sec.problem("amiType", raw, f"expected {' or '.join(AMI_TYPES)}: EKS no longer publishes AL2 GPU AMIs "
                    f"(Amazon Linux 2 reached end of support for EKS on 26 November 2025); "
                    f"use {RETIRED_AMI_TYPES[raw]}")
        sec.data.pop("amiType")
    return sec.choice("amiType", AMI_TYPES, "AL2023_x86_64_NVIDIA")


def parse_node_group(sec: Section, catalog: Catalog) -> NodeGroupConfig:
    instance_types = sec.str_list("instanceTypes", ["g6e.xlarge"])
    if not instance_types:
        sec.problem("instanceTypes", [], "expected at least one GPU instance type from the catalog: "
                    + ", ".join(sorted(catalog.instances)))
        instance_types = ["g6e.xlarge"]
    gpu, gpus_per_node = catalog.gpus["L40S"], 1
    # An instance type whose GPU is not in the catalog is reported by catalog_overrides; skip it here.
    known = [t for t in instance_types if t in catalog.instances and catalog.instances[t].gpu in catalog.gpus]
    for t in instance_types:
        if t not in catalog.instances:
            sec.problem("instanceTypes", t, "expected GPU instance types from the catalog: "
                        + ", ".join(sorted(catalog.instances)) + " (or add one under catalog.instanceTypes)")
    if known:
        first = catalog.instances[known[0]]
        gpu, gpus_per_node = catalog.gpus[first.gpu], first.gpus
        for t in known[1:]:
            other = catalog.instances[t]
            if (other.gpu, other.gpus) != (first.gpu, first.gpus):
                sec.problem("instanceTypes", instance_types,
                            "expected instance types with the same GPU model and count per node "
                            "(the simulation and capacity checks assume one node shape)")
                break
    min_size = sec.int("minSize", 0, min=0, max=1000)
    max_size = sec.int("maxSize", 2, min=1, max=1000)
    desired = sec.int("desiredSize", min_size, min=0, max=1000)
    if min_size > max_size:
        sec.problem("minSize", min_size, f"expected minSize <= maxSize ({max_size})")
    if not min_size <= desired <= max_size:
        sec.problem("desiredSize", desired, f"expected between minSize ({min_size}) and maxSize ({max_size})")
    out = NodeGroupConfig(
        name=sec.str("name", "gpu"),
        instance_types=instance_types,
        ami_type=_ami_type(sec),
        capacity_type=sec.choice("capacityType", ["ON_DEMAND", "SPOT"], "ON_DEMAND"),
        disk_size_gib=sec.int("diskSizeGib", 200, min=50, max=16384),
        min_size=min_size, max_size=max_size, desired_size=desired,
        labels={**GPU_LABEL, **_labels(sec)},
        taints=_taints(sec),
        gpu=gpu, gpus_per_node=gpus_per_node,
        **_other_daemonsets(sec.section("otherDaemonSets")),
    )
    sec.done()
    return out


def _labels(sec: Section) -> dict[str, str]:
    labels = sec.str_map("labels", {})
    check_labels(sec, "labels", labels)
    for name, value in labels.items():
        check_eks_key(sec, f"labels.{name}", name, "label")
        check_eks_label_value(sec, f"labels.{name}", value)
    return labels
