"""The README's EC2 vCPU quota table states what each shipped stack's node group needs (review rev-pulumi finding
6): the instance type's vCPUs (catalog) × desiredSize to create it and × maxSize at the autoscaler's ceiling,
against the quota of its capacity type. A stack edit that changes a figure must change the table."""

from __future__ import annotations

import pytest

from stackconfig.load import ROOT, load_stack, stack_names

QUOTA = {"ON_DEMAND": ("On-Demand", "Running On-Demand G and VT instances"),
         "SPOT": ("Spot", "All G and VT Spot Instance Requests")}


def _nodes(n: int) -> str:
    return f"{n} node" + ("" if n == 1 else "s")


@pytest.mark.parametrize("stack", stack_names())
def test_the_readme_row_is_the_stacks_figure(stack):
    cfg = load_stack(stack)
    ng = cfg.node_group
    assert all(t.startswith("g") for t in ng.instance_types)  # the G and VT quotas; p types have their own
    vcpus = max(cfg.catalog.instances[t].vcpus for t in ng.instance_types)
    kind, quota = QUOTA[ng.capacity_type]
    row = (f"| `{stack}` | {kind} | {quota} | {ng.instance_types[0]} ({vcpus}) | "
           f"{vcpus * ng.desired_size} ({_nodes(ng.desired_size)}) | {vcpus * ng.max_size} ({_nodes(ng.max_size)}) |")
    assert row in (ROOT / "README.md").read_text(encoding="utf-8").splitlines()


def test_the_shared_on_demand_total():
    total = sum(load_stack(s).catalog.instances[load_stack(s).node_group.instance_types[0]].vcpus
                * load_stack(s).node_group.max_size for s in stack_names()
                if load_stack(s).node_group.capacity_type == "ON_DEMAND")
    assert f"share the On-Demand quota: {total} vCPUs at both maxima" in (ROOT / "README.md").read_text("utf-8")
