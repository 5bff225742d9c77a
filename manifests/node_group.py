"""The GPU node group as plain data: the arguments of `aws.eks.NodeGroup` and of its IAM role.

EKS spells taint effects in its API form (NO_SCHEDULE), Kubernetes in CamelCase (NoSchedule); the translation
lives here. The desired size is left to the cluster autoscaler (the component ignores changes to it).
"""

from __future__ import annotations

import json

from stackconfig.schema import StackConfig, node_group_name_prefix

EKS_EFFECT = {"NoSchedule": "NO_SCHEDULE", "NoExecute": "NO_EXECUTE", "PreferNoSchedule": "PREFER_NO_SCHEDULE"}
# What a managed node needs and nothing more (EKS user guide, "Amazon EKS node IAM role").
NODE_POLICIES = [
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
]


def node_role_trust_policy() -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]})


def accelerator_label(cfg: StackConfig) -> dict[str, str]:
    """`k8s.amazonaws.com/accelerator`: the cluster-autoscaler's AWS provider treats a node with this label as a GPU
    node whose GPUs are not yet advertised until the device plugin registers them, instead of scaling up again
    (kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/README.md, "GPU Node Groups")."""
    return {"k8s.amazonaws.com/accelerator": "nvidia-" + cfg.node_group.gpu.name.lower()}


def node_group_spec(cfg: StackConfig) -> dict:
    """Keyword arguments for aws.eks.NodeGroup, minus the role ARN (an output of the role, wired by the component)."""
    ng = cfg.node_group
    return {
        "cluster_name": cfg.cluster.name,
        # A prefix, not a fixed name: instance types, AMI type, capacity type, disk size and subnets cannot change
        # in place, and Pulumi replaces create-before-delete; a fixed name makes EKS refuse the new node group
        # (ResourceInUseException) while the old one still exists. The provider appends 26 characters.
        "node_group_name_prefix": node_group_name_prefix(cfg.cluster.name, ng.name),
        "subnet_ids": list(cfg.cluster.subnet_ids),
        "ami_type": ng.ami_type,
        "instance_types": list(ng.instance_types),
        "capacity_type": ng.capacity_type,
        "disk_size": ng.disk_size_gib,
        "labels": {**accelerator_label(cfg), **ng.labels},
        "taints": [{"key": t.key, "value": t.value, "effect": EKS_EFFECT[t.effect]} for t in ng.taints],
        "scaling_config": {"min_size": ng.min_size, "max_size": ng.max_size, "desired_size": ng.desired_size},
        "update_config": {"max_unavailable": 1},
        "tags": {"app.kubernetes.io/part-of": "kserve-preflight", "environment": cfg.environment,
                 # Node-template hints for scaling from zero. EKS does not copy node group tags to the group's Auto
                 # Scaling group (aws/containers-roadmap#608), but the cluster-autoscaler (≥ 1.28) reads them from
                 # EKS itself: kubernetes/autoscaler cloudprovider/aws/aws_manager.go buildNodeFromTemplate takes
                 # the managed node group's DescribeNodegroup tags (managed_nodegroup_cache.go
                 # getManagedNodegroupTags; needs eks:DescribeNodegroup) and reads `…/node-template/resources/*`
                 # from them (extractAllocatableResourcesFromTags), over the ASG's tags and its instance-type table:
                 # the GPU count below is the one it plans with. Labels and taints it takes from the node group's
                 # own `labels`/`taints` (getManagedNodegroupLabels/Taints); the `…/node-template/taint/*` tags
                 # are read only from ASG tags, so here only the policy pack reads them.
                 "k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu": str(ng.gpus_per_node),
                 **{f"k8s.io/cluster-autoscaler/node-template/taint/{t.key}": f"{t.value}:{t.effect}"
                    for t in ng.taints}},
    }
