"""The winning settings as the exact edit to the stack file: a unified diff of `stacks/Pulumi.<stack>.yaml`.

ruamel.yaml's round-trip mode keeps the file's comments, key order and flow style, so the diff shows only the
lines the settings change (`git apply` takes it as is).
"""

from __future__ import annotations

import difflib
import io
from pathlib import Path

from tuner.space import ANN


def stack_file_diff(path: Path, project: str, service: str, settings: dict) -> str:
    """The unified diff that applies `settings` (tuner/space.py names) to the stack file at `path`."""
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    from stackconfig.roundtrip import stack_yaml

    yaml = stack_yaml()
    before = path.read_text()
    doc = yaml.load(before)
    config = doc["config"]
    svc = next(s for s in config[f"{project}:services"] if s.get("name") == service)
    ng = config[f"{project}:gpuNodeGroup"]
    for key in ("minReplicas", "maxReplicas", "scaleTarget", "containerConcurrency", "gpuMemoryUtilization"):
        if key in settings and svc.get(key) != settings[key]:
            svc[key] = settings[key]
    for key, ann in (("initialScale", "initial-scale"), ("scaleDownDelay", "scale-down-delay"), ("window", "window")):
        if key in settings:
            annotations = svc.setdefault("annotations", {})
            if str(annotations.get(ANN + ann)) != str(settings[key]):
                annotations[ANN + ann] = DoubleQuotedScalarString(str(settings[key]))
    for key in ("maxInputTokens", "maxBatchSize"):
        if key in settings and (svc.get("limits") or {}).get(key) != settings[key]:
            svc.setdefault("limits", {})[key] = settings[key]
    if "instanceType" in settings and list(ng.get("instanceTypes") or []) != [settings["instanceType"]]:
        ng["instanceTypes"] = [settings["instanceType"]]
    for key, setting in (("maxSize", "nodeMax"), ("minSize", "nodeMin"), ("desiredSize", "nodeMin")):
        if setting in settings and ng.get(key) != settings[setting]:
            ng[key] = settings[setting]
    buf = io.StringIO()
    yaml.dump(doc, buf)
    name = f"stacks/{path.name}"
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), buf.getvalue().splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))


# The GPU node group's URN (program.py: GpuNodeGroup "gpu", its aws.eks.NodeGroup "gpu-ng").
NODE_GROUP_URN = "urn:pulumi:{stack}::{project}::{project}:infra:GpuNodeGroup$aws:eks/nodeGroup:NodeGroup::gpu-ng"


def deploy_notes(path: Path, project: str, stack: str, settings: dict) -> list[str]:
    """What `pulumi up` of the edit needs beyond the diff on a live stack: the node group's scaling bounds whenever
    they change (tightened: a manual step first; widened: the refresh that keeps the live desired size), and the
    replacement of a protected (prod) node group when its instance type changes."""
    import yaml

    config = (yaml.safe_load(path.read_text()) or {}).get("config") or {}
    ng = config.get(f"{project}:gpuNodeGroup") or {}
    notes = []
    old_min, old_max = ng.get("minSize", 0), ng.get("maxSize", 2)
    new_min, new_max = settings.get("nodeMin", old_min), settings.get("nodeMax", old_max)
    if new_min > old_min or new_max < old_max:
        cluster = (config.get(f"{project}:cluster") or {}).get("name", "<cluster>")
        notes.append(
            f"gpuNodeGroup minSize {old_min} → {new_min}, maxSize {old_max} → {new_max} "
            "on a live node group: Pulumi "
            "ignores desiredSize after creation (the cluster-autoscaler owns it) and sends the one it created the "
            "group with, so EKS refuses the update when that is outside the new bounds (\"Minimum capacity "
            f"{new_min} can't be greater than desired size …\"; terraform-aws-modules/terraform-aws-eks#2030). "
            "Before `pulumi up`, set all three on the live group, then refresh so Pulumi sees no scaling change:\n"
            f"  aws eks update-nodegroup-config --cluster-name {cluster} --nodegroup-name "
            f"\"$(pulumi stack output gpuNodeGroup --stack {stack})\" --scaling-config "
            f"minSize={new_min},maxSize={new_max},desiredSize=<today's desired size clamped to {new_min}..{new_max}>\n"
            f"  pulumi refresh --yes --stack {stack}")
    elif (new_min, new_max) != (old_min, old_max):
        notes.append(
            f"gpuNodeGroup minSize {old_min} → {new_min}, maxSize {old_max} → {new_max} on a live node group: any "
            "change of the bounds also sends the desired size Pulumi's state holds (it ignores desiredSize after "
            "creation; the update carries the whole scaling config), and EKS sets the group to it. `pulumi up` "
            "refreshes the state first (Pulumi.yaml `options: refresh: always`), so that is today's size: run it "
            "as it is. With `--refresh=false` it would be the size the group was created with, and the nodes the "
            "cluster-autoscaler added since would be removed (docs/deploying.md §9)")
    new_type = settings.get("instanceType")
    environment = config.get(f"{project}:environment", stack)
    if new_type and list(ng.get("instanceTypes") or ["g6e.xlarge"]) != [new_type] and environment == "prod":
        urn = NODE_GROUP_URN.format(stack=stack, project=project)
        notes.append(
            f"instanceTypes → [{new_type}] replaces the node group (EKS cannot change instance types in place), and "
            "prod's node group is protected: `pulumi preview` refuses the replacement. Unprotect it in the state "
            "first (the program protects the new group again; pulumi/pulumi#8873 allows the replace once the old "
            f"state is unprotected):\n  pulumi state unprotect --stack {stack} '{urn}'")
    return notes
