"""What EKS and KServe refuse only after `pulumi up` has started: refused by the program before any resource."""

from __future__ import annotations

import pytest

from offline import run_program
from tests.program_refusal import refusal

P = "kserve-preflight"


def NO_GATE(c):
    c[f"{P}:gate"] = {"enabled": False}


def _labels(labels):
    def edit(c):
        c[f"{P}:gpuNodeGroup"]["labels"] = labels
        NO_GATE(c)
    return edit


@pytest.mark.parametrize("key", ["node-role.kubernetes.io/gpu", "node.kubernetes.io/lifecycle", "kubernetes.io/role",
                                 "team.k8s.io/pool", "eks.amazonaws.com/nodegroup"])
def test_a_reserved_label_key_is_refused(key, registered):
    message = refusal("dev", _labels({key: "true"}), registered)
    assert f"gpuNodeGroup.labels.{key}: got '{key}'" in message
    assert "without the reserved prefixes kubernetes.io/, k8s.io/, eks.amazonaws.com/" in message
    assert "Label cannot contain reserved prefixes" in message


def test_an_own_prefix_label_and_the_programs_accelerator_label_pass(registered):
    r = run_program("dev", edit=_labels({"example.com/gpu-pool": "chat", "workload": "llm"}))
    [ng] = r.of_type("aws:eks/nodeGroup:NodeGroup")
    assert ng.inputs["labels"]["example.com/gpu-pool"] == "chat"
    assert ng.inputs["labels"]["k8s.amazonaws.com/accelerator"] == "nvidia-l40s"  # not a reserved prefix
    assert "gpu-ng" in registered


def test_a_reserved_taint_key_is_refused(registered):
    def edit(c):
        c[f"{P}:gpuNodeGroup"]["taints"] = [{"key": "nvidia.com/gpu", "value": "true"},
                                            {"key": "node.kubernetes.io/gpu", "value": "true"}]
        NO_GATE(c)

    message = refusal("dev", edit, registered)
    assert "gpuNodeGroup.taints[1].key: got 'node.kubernetes.io/gpu'" in message
    assert "Taint cannot contain reserved prefixes" in message


def _vision_name(name, namespace=None, kserve=None):
    def edit(c):
        c[f"{P}:services"][1]["name"] = name
        if namespace:
            c[f"{P}:cluster"]["namespace"] = namespace
        if kserve:
            c[f"{P}:kserve"] = kserve
        NO_GATE(c)
    return edit


def test_a_standard_mode_name_too_long_for_the_predictor_host_is_refused(registered):
    name = "vision-transformer-large-imagenet-clfr"  # 38: '<name>-predictor-kserve-inference' is 65 characters
    message = refusal("staging", _vision_name(name), registered)
    assert f"services[1].name: got '{name}'; expected at most 36 characters, a name whose Standard-mode" in message
    assert ("'vision-transformer-large-imagenet-clfr-predictor-kserve-inference.example.com' from "
            "kserve.domainTemplate '{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}'") in message
    assert "has 65 characters (DNS allows 63)" in message


def test_a_long_namespace_leaves_no_room_for_any_standard_mode_name(registered):
    message = refusal("staging", _vision_name("vision", "n" * 53), registered)
    assert "expected a shorter cluster.namespace (no name fits)" in message


def test_the_clusters_own_domain_template_decides(registered):
    name = "vision-transformer-large-imagenet-clfr"
    dotted = {"domainTemplate": "{{.Name}}.{{.Namespace}}.{{.IngressDomain}}", "ingressDomain": "models.example.org"}
    run_program("staging", edit=_vision_name(name, kserve=dotted))  # separate labels: 48 and 16 characters
    assert f"{name}-isvc" in registered
    registered.clear()
    tight = {"domainTemplate": "{{ .Name }}-{{ .Namespace }}-x.{{ .IngressDomain }}"}
    message = refusal("staging", _vision_name("vision-transformer-large-imagenet-cl", kserve=tight), registered)
    assert "services[1].name" in message and "has 65 characters" in message  # fits the default, not this one


def test_a_domain_template_without_fields_is_refused(registered):
    message = refusal("staging", _vision_name("vision", kserve={"domainTemplate": "static.example.com"}), registered)
    assert "kserve.domainTemplate: got 'static.example.com'; expected a Go template" in message


@pytest.mark.parametrize("template", ["{{ .Name }-{{ .Namespace }}.{{ .IngressDomain }}",
                                      "{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }",
                                      "{{ .Name }}}}-x.{{ .IngressDomain }}"])
def test_a_domain_template_with_unbalanced_delimiters_is_refused(registered, template):
    """It rendered to None (a leftover '{{'), which skipped the host check: KServe would fail every service."""
    message = refusal("staging", _vision_name("vision", kserve={"domainTemplate": template}), registered)
    assert f"kserve.domainTemplate: got {template!r}; expected a Go template" in message and "closed by '}}'" in message


def test_the_longest_name_that_fits_passes_and_knative_mode_is_not_limited(registered):
    run_program("staging", edit=_vision_name("vision-transformer-large-imagenet-cl"))  # 36 characters: 63
    assert "vision-isvc" not in registered and "vision-transformer-large-imagenet-cl-isvc" in registered

    def knative(c):
        c[f"{P}:services"][0]["name"] = "chat-transformer-large-imagenet-clfr-x"  # Knative: its own domain
        NO_GATE(c)

    run_program("staging", edit=knative)


def _memory(memory):
    def edit(c):
        c[f"{P}:services"][0]["resources"]["memory"] = memory
        NO_GATE(c)
    return edit


def test_a_pod_that_fits_only_the_nominal_memory_is_refused(registered):
    """30900Mi fits 32 GiB less kube-reserved and eviction (31,775 MiB) but not the kubelet's capacity, which is
    the kernel's MemTotal (Karpenter measures 3.2 % less than nominal on a g5.2xlarge)."""
    message = refusal("dev", _memory("30900Mi"), registered)
    assert "services[0].resources: got {'cpu': '3', 'memory': '30900Mi'}" in message
    assert "a g6e.xlarge offers 3920m CPU / 29.4 GiB allocatable (its 32 GiB less 5% the kernel keeps" in message
    assert "so it never schedules" in message
    run_program("dev", edit=_memory("28Gi"))  # control: within the 28.6 GiB left beside the DaemonSets
    assert "chat-isvc" in registered


def test_the_gate_keeps_minsize_nodes_warm_not_the_first_desired_size():
    """desiredSize only sizes the new node group: the cluster-autoscaler removes nodes left empty for
    scale-down-unneeded-time (10 min) down to minSize, so the gate cannot count on the others being warm."""
    from gate import cluster_profile
    from stackconfig.load import load_stack, project_values, stack_config_values
    from stackconfig.schema import parse_stack_config

    project, raw = stack_config_values("prod")
    values = project_values(raw, project)
    values["gpuNodeGroup"].update(minSize=2, desiredSize=4)
    cfg = parse_stack_config(values, project, "prod")
    assert cluster_profile(cfg)["warm_nodes"] == 2
    assert cluster_profile(load_stack("prod"))["warm_nodes"] == 4  # prod keeps its 4 nodes with minSize 4


def test_the_model_cache_claim_keeps_its_size_after_creation():
    """A bound PVC's storage request cannot shrink, grows only with allowVolumeExpansion, and EFS ignores it: a
    sizeGib edit must not make `pulumi up` patch (and fail on) the live claim."""
    r = run_program("dev", edit=NO_GATE)
    opts = r.options["model-cache-pvc"]
    assert opts.ignore_changes == ["spec.resources.requests.storage"]
    assert opts.protect is True and opts.retain_on_delete is True
    [pvc] = r.of_type("kubernetes:core/v1:PersistentVolumeClaim")
    assert pvc.inputs["spec"]["resources"]["requests"]["storage"] == "100Gi"  # still the size it is created with


def test_the_kubeconfig_authenticates_as_the_stacks_aws_profile():
    """`aws eks get-token` must run as the identity the AWS provider uses (`aws:profile`), not the shell's."""
    import json

    def with_profile(c):
        c["aws:profile"] = "inference-admin"
        NO_GATE(c)

    def args(edit):
        [provider] = run_program("dev", edit=edit).of_type("pulumi:providers:kubernetes")
        [user] = json.loads(provider.inputs["kubeconfig"])["users"]
        return user["user"]["exec"]["args"]

    with_it = args(with_profile)
    assert with_it[:4] == ["eks", "get-token", "--cluster-name", "inference-dev"]
    assert with_it[with_it.index("--profile") + 1] == "inference-admin"
    assert "--profile" not in args(NO_GATE)  # control: no aws:profile, the default credential chain
