"""`pulumi up` fails when a service does not come up, and the AWS side is wired as EKS and the autoscaler need."""

from __future__ import annotations

import math

import pulumi
import pytest

from manifests.rollout import cold_start_s, ready_timeout_s
from offline import run_program
from stackconfig.load import load_stack

ISVC = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
P = "kserve-preflight"


def NO_GATE(c):
    """These tests are about what is registered: skip the simulation."""
    c[f"{P}:gate"] = {"enabled": False}


def test_inference_services_wait_for_ready_with_a_timeout_from_the_cold_start():
    cfg = load_stack("prod")
    r = run_program("prod", edit=NO_GATE)
    for isvc in r.of_type(ISVC):
        ann = isvc.inputs["metadata"]["annotations"]
        svc = next(s for s in cfg.services if s.name == isvc.inputs["metadata"]["name"])
        assert ann["pulumi.com/waitFor"] == "condition=Ready"
        timeout = int(ann["pulumi.com/timeoutSeconds"])
        # The first `pulumi up`'s cold start: every service's first pods share the model cache's reads.
        assert timeout == ready_timeout_s(cfg, svc) == math.ceil(max(2 * cold_start_s(cfg, svc, first_deploy=True),
                                                                 600) + 120)
    # chat's 10 first pods on 3 new nodes all Ready in 19 rollouts of 20: a 198 s node (U[100, 200]) + 10 GiB at
    # 41 MB/s (U[40, 120]: 260 s) + the 8B model's load (~82 s), above the ~5 minutes of the means.
    assert 500 < cold_start_s(cfg, cfg.services[0]) < 560


def test_a_slower_cold_start_waits_longer():
    def edit(c):
        c[f"{P}:coldStart"] = {"nodeProvisionS": 900}
        c[f"{P}:services"][0]["annotations"]["serving.knative.dev/progress-deadline"] = "30m"  # the rollout check
        c[f"{P}:gate"] = {"enabled": False}

    slow = run_program("dev", edit=edit)
    [isvc] = slow.of_type(ISVC)
    assert int(isvc.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"]) > 1800


def test_deployment_mode_change_replaces_the_inference_service():
    r = run_program("staging", edit=NO_GATE)
    for name in ("chat-isvc", "vision-isvc"):
        opts = r.options[name]
        assert opts.replace_on_changes == ['metadata.annotations["serving.kserve.io/deploymentMode"]']
        assert opts.delete_before_replace is True  # a fixed name: the old one must go first


def test_node_group_waits_for_its_role_policies_and_carries_the_accelerator_label():
    r = run_program("dev", edit=NO_GATE)  # createNodeRole: true
    deps = r.options["gpu-ng"].depends_on
    assert sorted(d._name for d in deps) == ["gpu-node-policy-0", "gpu-node-policy-1", "gpu-node-policy-2"]
    [ng] = r.of_type("aws:eks/nodeGroup:NodeGroup")
    assert ng.inputs["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-l40s"
    assert run_program("prod", edit=NO_GATE).options["gpu-ng"].depends_on == []  # an existing role: nothing to wait for


@pytest.mark.parametrize("edit, fragment", [
    (lambda c: c[f"{P}:gpuNodeGroup"].update(amiType="AL2_x86_64_GPU"), "EKS no longer publishes AL2 GPU AMIs"),
    (lambda c: c[f"{P}:services"][0]["annotations"].update({"serving.knative.dev/progress-deadline": "0s"}),
     "expected a positive duration"),
], ids=["al2-ami", "progress-deadline-zero"])
def test_refused_before_any_resource(edit, fragment, registered):
    with pytest.raises(pulumi.RunError, match="invalid stack config") as err:
        run_program("dev", edit=edit)
    assert fragment in str(err.value)
    assert registered == []
    run_program("dev", edit=NO_GATE)  # control
    assert "gpu-ng" in registered


def test_security_defaults_a_restricted_namespace_admits():
    """Container-level restricted settings (Knative admits them there); runAsNonRoot only where the image runs
    as a non-root user (KServe's huggingfaceserver and storage-initializer: USER 1000); no API token."""
    r = run_program("staging", edit=NO_GATE)
    isvcs = {i.inputs["metadata"]["name"]: i.inputs["spec"]["predictor"] for i in r.of_type(ISVC)}
    for name, pred in isvcs.items():
        sc = pred["model"]["securityContext"]
        assert sc["seccompProfile"] == {"type": "RuntimeDefault"} and sc["capabilities"] == {"drop": ["ALL"]}
        assert sc["allowPrivilegeEscalation"] is False and pred["automountServiceAccountToken"] is False
        assert sc.get("runAsNonRoot") is (True if name == "chat" else None)  # vision: Triton's image runs as root
    [cache] = [d for d in r.of_type("kubernetes:apps/v1:DaemonSet") if d.name == "model-cache-prefetch"]
    pod = cache.inputs["spec"]["template"]["spec"]
    assert pod["containers"][0]["securityContext"]["runAsNonRoot"] is True
    assert pod["automountServiceAccountToken"] is False  # IRSA's token comes from EKS's webhook, not this


def test_prod_multi_replica_services_get_a_disruption_budget_and_zone_spread():
    r = run_program("prod", edit=NO_GATE)
    [pdb] = r.of_type("kubernetes:policy/v1:PodDisruptionBudget")  # chat keeps 4; code keeps 1
    assert pdb.inputs["metadata"]["name"] == "chat-predictor-pdb"
    assert pdb.inputs["spec"] == {"maxUnavailable": 1,
                                  "selector": {"matchLabels": {"serving.kserve.io/inferenceservice": "chat"}}}
    for isvc in r.of_type(ISVC):
        [spread] = isvc.inputs["spec"]["predictor"]["topologySpreadConstraints"]
        assert spread["topologyKey"] == "topology.kubernetes.io/zone"
        assert spread["whenUnsatisfiable"] == "ScheduleAnyway"  # never strands a GPU pod
    dev = run_program("dev", edit=NO_GATE)
    assert not dev.of_type("kubernetes:policy/v1:PodDisruptionBudget")
    assert "topologySpreadConstraints" not in dev.of_type(ISVC)[0].inputs["spec"]["predictor"]
