"""The whole Pulumi program, per shipped stack, under mocks: what it registers and how."""

from __future__ import annotations

import pytest

from offline import run_program
from validation.kubernetes import normalise, validation_errors
from stackconfig.load import load_stack, stack_names

STACKS = stack_names()
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ISVC = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"


@pytest.fixture(scope="module", params=STACKS)
def run(request):
    return request.param, run_program(request.param)


def test_all_three_environments_ship():
    assert STACKS == ["dev", "prod", "staging"]


def test_no_duplicate_urns(run):
    _, r = run
    # Gotcha 8: the mock monitor accepts duplicate URNs that the real engine rejects.
    assert len(r.monitor.get_registered_resources()) == len(r.resources)


def test_every_kubernetes_manifest_validates(run):
    stack, r = run
    manifests = r.kubernetes_manifests()
    assert {m["kind"] for m in manifests} >= {"Namespace", "DaemonSet", "PersistentVolumeClaim", "InferenceService"}
    version = load_stack(stack).cluster.kubernetes_version
    assert [e for m in manifests for e in validation_errors(m, version)] == []


def test_registered_manifests_are_the_rendered_ones(run):
    """The components hand the pure manifests to Pulumi unchanged: no second place where a knob becomes YAML."""
    from manifests import render_stack

    stack, r = run
    by_key = {(m["kind"], m["metadata"]["name"]): normalise(m) for m in r.kubernetes_manifests()}
    for manifest in render_stack(load_stack(stack)):
        assert by_key[(manifest["kind"], manifest["metadata"]["name"])] == manifest


def test_node_group_is_tainted_labelled_and_autoscaler_owned(run):
    stack, r = run
    [ng] = r.of_type(NODE_GROUP)
    assert ng.inputs["amiType"] == "AL2023_x86_64_NVIDIA"
    assert {"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"} in ng.inputs["taints"]
    assert ng.inputs["labels"]["nvidia.com/gpu.present"] == "true"
    assert r.options["gpu-ng"].ignore_changes == ["scalingConfig.desiredSize"]
    # A name prefix, so a replacement (new instance type, AMI type, disk size) can create before it deletes.
    assert "nodeGroupName" not in ng.inputs
    assert ng.inputs["nodeGroupNamePrefix"] == f"{load_stack(stack).cluster.name}-gpu-"
    assert r.options["gpu-ng"].protect is (stack == "prod")
    cfg = load_stack(stack)
    assert ng.inputs["scalingConfig"] == {"minSize": cfg.node_group.min_size, "maxSize": cfg.node_group.max_size,
                                          "desiredSize": cfg.node_group.desired_size}


def test_node_role_only_when_asked_and_only_node_policies(run):
    stack, r = run
    roles = r.of_type("aws:iam/role:Role")
    attachments = r.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    [ng] = r.of_type(NODE_GROUP)
    if load_stack(stack).cluster.create_node_role:
        assert len(roles) == 1 and "ec2.amazonaws.com" in roles[0].inputs["assumeRolePolicy"]
        assert sorted(a.inputs["policyArn"].rsplit("/", 1)[1] for a in attachments) == [
            "AmazonEC2ContainerRegistryReadOnly", "AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy"]
        assert ng.inputs["nodeRoleArn"].endswith("gpu-node-role")
    else:
        assert roles == [] and attachments == []
        assert ng.inputs["nodeRoleArn"] == load_stack(stack).cluster.node_role_arn


def test_device_plugin_daemonset(run):
    _, r = run
    [ds] = [d for d in r.of_type(DAEMONSET) if d.name == "nvidia-ds"]
    pod = ds.inputs["spec"]["template"]["spec"]
    [container] = pod["containers"]
    assert pod["priorityClassName"] == "system-node-critical"
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]
    assert ":" in container["image"].rsplit("/", 1)[1] and not container["image"].endswith(":latest")
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert "privileged" not in container["securityContext"]
    assert [v["hostPath"]["path"] for v in pod["volumes"]] == ["/var/lib/kubelet/device-plugins"]


def test_model_cache_pvc_protected_and_prefetch_ready_only_when_complete(run):
    stack, r = run
    opts = r.options["model-cache-pvc"]
    assert opts.protect is True and opts.retain_on_delete is True
    [ds] = [d for d in r.of_type(DAEMONSET) if d.name == "model-cache-prefetch"]
    [container] = ds.inputs["spec"]["template"]["spec"]["containers"]
    ready = " ".join(container["readinessProbe"]["exec"]["command"])
    from manifests.model_cache import cache_key, fill_timeout_s

    cfg = load_stack(stack)
    for svc in cfg.services:
        assert f"test -f /models/{cache_key(svc)}/.complete" in ready
        assert svc.storage_uri in container["command"][-1]
    assert ds.inputs["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"] == "model-cache"
    # Pulumi waits for every model, longer than its 10-minute default when the weights need it.
    assert ds.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"] == str(fill_timeout_s(cfg))


def test_cache_wait_grows_with_the_weights_and_the_download_rate():
    """2 × (prefetch image pull + all cached downloads at downloadGBps) + 4 rollout steps × (pull + 60 s) + 300 s.
    dev's chat is hf://meta-llama/Meta-Llama-3-8B-Instruct: the whole repository, 30 GiB (catalog repo_gib)."""
    import math

    from manifests.model_cache import fill_timeout_s

    dev = load_stack("dev")
    # dev takes the default priors, each at its slow end (the 5th percentile): U[20, 100] MB/s and U[0.5, 2] GB/s.
    pull = 2 * 2**30 / 24e6
    repo = 30 * 2**30
    assert dev.services[0].model.download_bytes(dev.services[0].storage_uri) == repo
    assert fill_timeout_s(dev) == math.ceil(2 * (pull + repo / 0.575e9) + 4 * (pull + 60) + 300)
    slow = run_program("dev", edit=lambda c: c.__setitem__("kserve-preflight:coldStart", {"downloadGBps": 0.05}))
    [ds] = [d for d in slow.of_type(DAEMONSET) if d.name == "model-cache-prefetch"]
    waited = int(ds.inputs["metadata"]["annotations"]["pulumi.com/timeoutSeconds"])
    assert waited == math.ceil(2 * (pull + repo / 0.05e9) + 4 * (pull + 60) + 300)
    assert waited > 600  # beyond pulumi-kubernetes' 10-minute default, which would fail the first `pulumi up`


def test_prefetch_rollout_takes_a_bounded_number_of_steps_and_the_wait_covers_them(run):
    """pulumi-kubernetes waits for the whole DaemonSet rollout (kstatus Current: every pod updated and Ready,
    provider/pkg/await/daemonset.go). The default maxUnavailable 1 replaces one node at a time, so the rollout grew
    with the node count past any fixed timeout; 25 % makes it at most 4 steps for any number of nodes."""
    import math

    from manifests.model_cache import ROLLOUT_STEPS

    _, r = run
    [ds] = [d for d in r.of_type(DAEMONSET) if d.name == "model-cache-prefetch"]
    strategy = ds.inputs["spec"]["updateStrategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%"}}
    for nodes in range(1, 500):  # Kubernetes rounds the percentage up (DaemonSet rollingUpdate.maxUnavailable)
        assert math.ceil(nodes / math.ceil(nodes * 25 / 100)) <= ROLLOUT_STEPS == 4


def test_inference_services_are_tuned(run):
    from manifests.model_cache import cache_key

    stack, r = run
    cfg = load_stack(stack)
    isvcs = {i.inputs["metadata"]["name"]: normalise(i.inputs) for i in r.of_type(ISVC)}
    assert sorted(isvcs) == sorted(s.name for s in cfg.services)
    for svc in cfg.services:
        predictor = isvcs[svc.name]["spec"]["predictor"]
        model = predictor["model"]
        assert model["storageUri"] == f"pvc://model-cache/{cache_key(svc)}"
        assert model["resources"]["limits"]["nvidia.com/gpu"] == str(svc.gpus)
        assert predictor["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
        assert all(any(t["key"] == taint.key and t.get("effect") == taint.effect for t in predictor["tolerations"])
                   for taint in cfg.node_group.taints)
        startup = model["startupProbe"]
        assert startup["periodSeconds"] * startup["failureThreshold"] >= svc.expected_load_s
        assert {"readinessProbe", "livenessProbe"} <= set(model)
        env = {e["name"]: e["value"] for e in model["env"]}
        assert env["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
        if svc.deployment_mode == "Knative":   # Standard: on the HPA or ScaledObject only (docs/deploying.md §8)
            assert (predictor["minReplicas"], predictor["maxReplicas"]) == (svc.min_replicas, svc.max_replicas)
        else:
            assert "minReplicas" not in predictor and "maxReplicas" not in predictor
        annotations = isvcs[svc.name]["metadata"]["annotations"]
        assert annotations["serving.kserve.io/deploymentMode"] == {"Knative": "Serverless",
                                                                   "Standard": "RawDeployment"}[svc.deployment_mode]
        for key, value in svc.annotations.items():
            assert annotations[key] == value
        if svc.deployment_mode == "Knative":
            assert predictor["containerConcurrency"] == svc.container_concurrency
            assert predictor["timeout"] == svc.timeout_s
        if svc.engine == "vllm":
            assert f"--max-num-seqs={svc.caps.max_batch_size}" in model["args"]
            assert f"--max-model-len={svc.caps.max_input_tokens + svc.caps.max_new_tokens}" in model["args"]


def test_prod_never_scales_gpu_services_to_zero_and_dev_may():
    assert all(s.min_replicas >= 1 for s in load_stack("prod").services)
    assert any(s.min_replicas == 0 for s in load_stack("dev").services)
    assert load_stack("prod").node_group.max_size > load_stack("dev").node_group.max_size


def test_standard_mode_gets_our_autoscaler_with_behavior():
    r = run_program("staging")
    # scaleMetric concurrency: a KEDA ScaledObject on Triton's own metric (tests/stack/test_keda.py)
    [hpa] = r.of_type("kubernetes:keda.sh/v1alpha1:ScaledObject")
    spec = normalise(hpa.inputs["spec"])
    assert spec["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vision-predictor"}
    assert spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"][
        "stabilizationWindowSeconds"] == 600
    [vision] = [i for i in r.of_type(ISVC) if i.inputs["metadata"]["name"] == "vision"]
    annotations = vision.inputs["metadata"]["annotations"]
    # The legacy spelling: KServe <= 0.15 knows no other, >= 0.16 maps it (constants.go: ParseDeploymentMode).
    assert annotations["serving.kserve.io/deploymentMode"] == "RawDeployment"
    assert annotations["serving.kserve.io/autoscalerClass"] == "external"  # KServe must not add a second HPA
    # ...and must not find ours under its own HPA's (or ScaledObject's) name, or it overwrites and then deletes it.
    assert hpa.inputs["metadata"]["name"] == "vision-predictor-scaler"


def test_children_are_parented_to_their_components():
    r = run_program("dev")
    urns = list(r.monitor.get_registered_resources())
    assert any(u.endswith("kserve-preflight:infra:GpuNodeGroup$aws:eks/nodeGroup:NodeGroup::gpu-ng") for u in urns)
    assert any("TunedInferenceService$kubernetes:serving.kserve.io/v1beta1:InferenceService::chat-isvc" in u
               for u in urns)
    assert any("ModelCache$kubernetes:core/v1:PersistentVolumeClaim::model-cache-pvc" in u for u in urns)


def test_kubernetes_objects_use_the_eks_provider():
    r = run_program("dev")
    [provider] = r.of_type("pulumi:providers:kubernetes")
    kubeconfig = provider.inputs["kubeconfig"]
    assert "inference-dev.eks.example.test" in kubeconfig and "get-token" in kubeconfig
    import json
    from offline import FAKE_CA

    [cluster] = json.loads(kubeconfig)["clusters"]  # getCluster's certificateAuthorities[0].data reaches it
    assert cluster["cluster"] == {"server": "https://inference-dev.eks.example.test",
                                  "certificate-authority-data": FAKE_CA}


def test_preview_mode_registers_the_same_resources():
    assert sorted(r.name for r in run_program("prod", preview=True).resources) == sorted(
        r.name for r in run_program("prod").resources)


def test_exports():
    outputs = run_program("prod").outputs()
    assert outputs["namespace"] == "kserve-inference"
    assert len(outputs["inferenceServices"]) == 2


def test_bottlerocket_nodes_get_no_second_device_plugin():
    """Bottlerocket's NVIDIA variants run the device plugin on the host; a DaemonSet would register it twice."""
    r = run_program("dev", edit=lambda c: c["kserve-preflight:gpuNodeGroup"].update(
        amiType="BOTTLEROCKET_x86_64_NVIDIA"))
    assert [d.name for d in r.of_type(DAEMONSET)] == ["model-cache-prefetch"]
    assert [d.name for d in run_program("dev").of_type(DAEMONSET)] == ["nvidia-ds", "model-cache-prefetch"]


def test_prefetch_credentials_for_gated_and_private_models():
    """Gated hf:// models need HF_TOKEN and s3:// buckets an IRSA account; the prefetch pod gets both when set."""
    plain = [d for d in run_program("dev").of_type(DAEMONSET) if d.name == "model-cache-prefetch"][0]
    assert "serviceAccountName" not in plain.inputs["spec"]["template"]["spec"]
    r = run_program("dev", edit=lambda c: c["kserve-preflight:modelCache"].update(
        serviceAccountName="model-cache-reader", credentialsSecret="hf-token"))
    [ds] = [d for d in r.of_type(DAEMONSET) if d.name == "model-cache-prefetch"]
    pod = ds.inputs["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "model-cache-reader"
    assert pod["containers"][0]["envFrom"] == [{"secretRef": {"name": "hf-token"}}]
    assert validation_errors(ds.inputs) == []


def test_namespaced_objects_depend_on_the_namespace_themselves():
    """A component's depends_on does not reach its children (pulumi/pulumi#8721): each child must name the Namespace,
    or the first `pulumi up` creates the PVC, InferenceServices and ScaledObject concurrently with it."""
    import pulumi_kubernetes as k8s

    r = run_program("staging")
    for child in ("model-cache-pvc", "model-cache-prefetch", "chat-isvc", "vision-isvc", "vision-scaledobject"):
        deps = r.options[child].depends_on
        assert any(isinstance(d, k8s.core.v1.Namespace) for d in deps), child
    assert any(isinstance(d, k8s.apiextensions.CustomResource) and d._name == "vision-isvc"
               for d in r.options["vision-scaledobject"].depends_on)


def test_services_are_created_after_the_cache_is_full_and_knative_admits_them():
    """No init container holds a model pod (Knative refuses them by default): the InferenceServices depend on the
    prefetch DaemonSet, which Pulumi awaits until it is Ready (every model complete), and on the config-features
    patch that enables the pod-spec fields they use."""
    import pulumi_kubernetes as k8s

    r = run_program("prod")
    for isvc in r.of_type(ISVC):
        predictor = isvc.inputs["spec"]["predictor"]
        assert "initContainers" not in predictor and "volumes" not in predictor
        deps = r.options[f"{isvc.inputs['metadata']['name']}-isvc"].depends_on
        assert any(isinstance(d, k8s.apps.v1.DaemonSet) for d in deps)
        assert any(isinstance(d, k8s.core.v1.ConfigMapPatch) for d in deps)
    [patch] = [p for p in r.of_type("kubernetes:core/v1:ConfigMapPatch")
               if p.inputs["metadata"]["name"] == "config-features"]
    assert patch.inputs["metadata"]["namespace"] == "knative-serving"
    assert patch.inputs["data"] == {"kubernetes.podspec-nodeselector": "enabled",
                                    "kubernetes.podspec-tolerations": "enabled",
                                    "kubernetes.podspec-topologyspreadconstraints": "enabled"}  # prod spreads zones


def test_without_the_cache_models_download_directly_and_nothing_waits():
    def edit(c):
        c["kserve-preflight:modelCache"].update(enabled=False)
        # as fast as the cache's prefetch prior: at the cache-off default (KServe's measured storage-initializer
        # rate) dev's 900-s progress deadline is refused (tests/stack/test_cold_start_priors.py)
        c["kserve-preflight:coldStart"] = {"downloadGBps": {"dist": "uniform", "low": 0.5, "high": 2.0}}

    r = run_program("dev", edit=edit)
    [isvc] = r.of_type(ISVC)
    predictor = isvc.inputs["spec"]["predictor"]
    assert predictor["model"]["storageUri"].startswith("hf://")
    assert "initContainers" not in predictor and "volumes" not in predictor
    assert not r.of_type("kubernetes:core/v1:PersistentVolumeClaim")


def test_main_file_runs_the_program_as_the_pulumi_language_host_does():
    by_cli = run_program("staging", as_cli=True)
    assert sorted(r.name for r in by_cli.resources) == sorted(r.name for r in run_program("staging").resources)


def test_a_cluster_with_its_own_device_plugin_gets_none_from_the_stack():
    """`devicePlugin.enabled: false` (the GPU Operator already runs one): no DaemonSet rendered or registered, and
    its requests leave the fits-the-node sum; a non-boolean is refused before any resource, naming the key."""
    import pulumi

    from manifests import render_stack
    from manifests.node_fit import daemonset_requests
    from stackconfig.load import project_values, stack_config_values
    from stackconfig.schema import parse_stack_config

    def plugin(enabled):
        return lambda c: c.setdefault("kserve-preflight:devicePlugin", {}).update(enabled=enabled)

    assert [d.name for d in run_program("dev", edit=plugin(False)).of_type(DAEMONSET)] == ["model-cache-prefetch"]
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    cfg_on = parse_stack_config(values, project, "dev")
    cfg_off = parse_stack_config({**values, "devicePlugin": {"enabled": False}}, project, "dev")
    assert "nvidia-device-plugin" in [m["metadata"]["name"] for m in render_stack(cfg_on)]
    assert "nvidia-device-plugin" not in [m["metadata"]["name"] for m in render_stack(cfg_off)]
    assert daemonset_requests(cfg_off)[0] < daemonset_requests(cfg_on)[0]
    with pytest.raises(pulumi.RunError, match=r"devicePlugin\.enabled"):
        run_program("dev", edit=plugin("nope"))
