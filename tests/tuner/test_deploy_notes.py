"""What the tuner tells a user to do before `pulumi up` of its edit on a live stack (tuner/edit.py deploy_notes)."""

from __future__ import annotations

from offline import run_program
from stackconfig.load import ROOT
from tuner.edit import NODE_GROUP_URN, deploy_notes

P = "kserve-preflight"


def _notes(stack, settings):
    return deploy_notes(ROOT / "stacks" / f"Pulumi.{stack}.yaml", P, stack, settings)


def test_raising_min_size_names_the_eks_refusal_and_the_exact_manual_step():
    [note] = _notes("prod", {"nodeMin": 5, "nodeMax": 7})
    assert "minSize 4 → 5, maxSize 7 → 7" in note
    assert "Minimum capacity 5 can't be greater than desired size" in note
    assert ("aws eks update-nodegroup-config --cluster-name inference-prod --nodegroup-name "
            "\"$(pulumi stack output gpuNodeGroup --stack prod)\" --scaling-config minSize=5,maxSize=7,") in note
    assert "pulumi refresh --yes --stack prod" in note


def test_lowering_max_size_gets_the_same_step():
    [note] = _notes("staging", {"nodeMin": 2, "nodeMax": 6})
    assert "maxSize 9 → 6" in note and "minSize=2,maxSize=6" in note


def test_a_prod_instance_type_change_names_the_unprotect_step():
    [note] = _notes("prod", {"instanceType": "g6e.48xlarge"})
    assert "replaces the node group" in note and "`pulumi preview` refuses the replacement" in note
    assert ("pulumi state unprotect --stack prod 'urn:pulumi:prod::kserve-preflight::kserve-preflight:infra:"
            "GpuNodeGroup$aws:eks/nodeGroup:NodeGroup::gpu-ng'") in note


def test_widening_the_bounds_says_the_refresh_keeps_the_live_desired_size():
    """A raised maxSize or lowered minSize still sends a desired size (rev-pulumi finding 1): the refresh that
    Pulumi.yaml turns on makes it the live one; without it the group would be reset to its creation size."""
    [note] = _notes("prod", {"nodeMin": 3, "nodeMax": 8, "instanceType": "g6e.12xlarge", "minReplicas": 2})
    assert "minSize 4 → 3, maxSize 7 → 8" in note
    assert "`options: refresh: always`" in note and "`--refresh=false`" in note
    assert "aws eks update-nodegroup-config" not in note  # no manual step: EKS accepts the live size


def test_no_note_for_edits_a_live_stack_takes_as_they_are():
    assert _notes("prod", {"nodeMin": 4, "nodeMax": 7, "instanceType": "g6e.12xlarge", "minReplicas": 2}) == []
    assert _notes("dev", {"instanceType": "g6e.2xlarge"}) == []  # replaced, but dev's node group is not protected


def test_the_urn_names_what_the_program_registers():
    r = run_program("prod", edit=lambda c: c.update({f"{P}:gate": {"enabled": False}}))
    assert NODE_GROUP_URN.format(stack="prod", project=P) in list(r.monitor.get_registered_resources())
    assert r.options["gpu-ng"].protect is True
