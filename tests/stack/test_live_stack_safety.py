"""What keeps a live stack's state safe across changes (review rev-pulumi findings 1 and 5)."""

from __future__ import annotations

import yaml

from offline import run_program
from stackconfig.load import ROOT

P = "kserve-preflight"


def NO_GATE(c):
    c[f"{P}:gate"] = {"enabled": False}


def test_the_project_refreshes_before_every_update():
    """The node group ignores desiredSize, so a changed minSize or maxSize sends the desired size in Pulumi's
    state; unrefreshed, the creation-time one, which EKS applies (nodes with running predictors removed). The CLI
    refreshes first only when told: `options: refresh: always` in Pulumi.yaml (pulumi/pulumi `isRefresh`)."""
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text(encoding="utf-8"))
    assert project["options"] == {"refresh": "always"}
    r = run_program("dev", edit=NO_GATE)
    assert r.options["gpu-ng"].ignore_changes == ["scalingConfig.desiredSize"]  # why the refresh matters


def test_the_namespace_is_retained_on_delete_like_the_claim_in_it():
    """Deleting a Namespace deletes every object in it, so a `pulumi destroy` or a new cluster.namespace would take
    the model-cache claim the ModelCache component retains: the Namespace is retained too."""
    for namespace in (None, "inference"):
        def edit(c, namespace=namespace):
            NO_GATE(c)
            if namespace:
                c[f"{P}:cluster"]["namespace"] = namespace
                c[f"{P}:modelCache"]["namespace"] = namespace

        r = run_program("dev", edit=edit)
        [ns] = r.of_type("kubernetes:core/v1:Namespace")
        [pvc] = r.of_type("kubernetes:core/v1:PersistentVolumeClaim")
        assert pvc.inputs["metadata"]["namespace"] == ns.inputs["metadata"]["name"]
        assert r.options["serving-namespace"].retain_on_delete is True
        assert r.options["model-cache-pvc"].retain_on_delete is True
        assert not r.options["serving-namespace"].protect  # a rename or destroy still proceeds;
                                                           # only the delete is skipped
