"""GpuNodeGroup: an EKS managed node group of NVIDIA GPU nodes, tainted so only GPU pods land there."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi
import pulumi_aws as aws

from manifests.node_group import NODE_POLICIES, node_group_spec, node_role_trust_policy
from stackconfig.schema import StackConfig


@dataclass
class GpuNodeGroupArgs:
    spec: dict  # node_group_spec(): aws.eks.NodeGroup keyword arguments without the role
    node_role_arn: Optional[str]  # an existing role, or None to create one with NODE_POLICIES
    protect: bool  # production node groups cannot be deleted by accident

    @classmethod
    def from_config(cls, cfg: StackConfig) -> "GpuNodeGroupArgs":
        return cls(node_group_spec(cfg), cfg.cluster.node_role_arn, cfg.environment == "prod")


class GpuNodeGroup(pulumi.ComponentResource):
    node_group: aws.eks.NodeGroup
    node_group_name: pulumi.Output[str]

    def __init__(self, name: str, args: GpuNodeGroupArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:infra:GpuNodeGroup", name, {}, opts)
        child = pulumi.ResourceOptions(parent=self)
        role_arn: pulumi.Input[str]
        attachments: list[pulumi.Resource] = []
        if args.node_role_arn:
            role_arn = args.node_role_arn
        else:
            role = aws.iam.Role(f"{name}-node-role", assume_role_policy=node_role_trust_policy(), opts=child)
            attachments = [aws.iam.RolePolicyAttachment(f"{name}-node-policy-{i}", role=role.name, policy_arn=policy,
                                                        opts=child)
                           for i, policy in enumerate(NODE_POLICIES)]
            role_arn = role.arn
        spec = dict(args.spec)
        scaling = spec.pop("scaling_config")
        self.node_group = aws.eks.NodeGroup(
            f"{name}-ng",
            node_role_arn=role_arn,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(**scaling),
            update_config=aws.eks.NodeGroupUpdateConfigArgs(**spec.pop("update_config")),
            taints=[aws.eks.NodeGroupTaintArgs(**t) for t in spec.pop("taints")],
            **spec,
            opts=pulumi.ResourceOptions(
                parent=self,
                # The pulumi_aws NodeGroup example: without the policies attached, nodes cannot join, and on delete
                # EKS could not clean up the nodes' ENIs (the attachments would go first).
                depends_on=attachments,
                # The cluster autoscaler owns the live node count; Pulumi only sets the bounds. With any change of
                # minSize or maxSize it still sends a desired size: the one in its state (ignored inputs keep their
                # old value), which Pulumi.yaml's `options: refresh: always` makes the live one; without a refresh
                # it is the creation-time size, and EKS would reset the group to it. EKS refuses a minSize raised
                # (maxSize lowered) past the live size: `preflight tune` and docs/deploying.md §9 give the manual
                # step (the program cannot read the live size before the update, and managing it would fight the
                # autoscaler).
                ignore_changes=["scalingConfig.desiredSize"],
                # A replacement (instance types, AMI, capacity type, disk, subnets) fails `pulumi preview` while
                # protected: `pulumi state unprotect` first (docs/deploying.md §9). Not retain_on_delete: the old
                # group's GPU nodes would keep running, unmanaged.
                protect=args.protect,
                custom_timeouts=pulumi.CustomTimeouts(create="30m", update="60m", delete="30m"),
            ),
        )
        self.node_group_name = self.node_group.node_group_name
        self.register_outputs({"nodeGroupName": self.node_group_name})
