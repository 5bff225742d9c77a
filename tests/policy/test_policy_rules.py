"""Every rule fires on a deliberately bad fixture with its message, and is quiet on the frozen copies of the
shipped stacks (tests/policy/fixtures/; the CI check of a team's own stacks/ is tests/policy/test_stacks.py)."""

from __future__ import annotations

import pytest

from policy.rules import (ADVISORY, MANDATORY, RULES, RULES_BY_ID, Context, Resource, duration_s, evaluate,
                          image_pinned, mandatory, tolerates)
from policy_fixtures import BAD, FIXTURES, SHIPPED, Stack, bad_stack, broken, shipped

def _fired(resources: list[Resource], rule_id: str) -> list[str]:
    return [v.message for v in evaluate(resources, [RULES_BY_ID[rule_id]])]


@pytest.mark.parametrize("stack", SHIPPED)
def test_fixture_stack_passes_every_mandatory_rule(stack):
    failures = mandatory(evaluate(shipped(stack)))
    assert not failures, f"{len(failures)} mandatory violation(s) in fixture {stack}:\n" + "\n".join(
        f"  - [{v.rule}] {v.resource_type} {v.resource_name}: {v.message}" for v in failures)


@pytest.mark.parametrize("stack", SHIPPED)
def test_fixture_stacks_have_no_advisory_findings_either(stack):
    assert [v for v in evaluate(shipped(stack)) if v.severity == ADVISORY] == []


@pytest.mark.parametrize("rule_id", sorted(BAD))
def test_rule_fires_on_bad_fixture_with_its_message(rule_id):
    messages = _fired(broken(rule_id), rule_id)
    expected = BAD[rule_id][1]
    assert messages, f"{rule_id} stayed quiet on its bad fixture"
    assert any(expected in m for m in messages), messages


@pytest.mark.parametrize("rule_id", sorted(BAD))
def test_rule_is_quiet_on_shipped_prod(rule_id):
    assert _fired(shipped("prod"), rule_id) == []


def test_every_rule_has_a_bad_fixture_and_metadata():
    assert set(BAD) == set(RULES_BY_ID)
    for r in RULES:
        assert r.severity in (MANDATORY, ADVISORY)
        assert r.title and r.source and r.id == r.id.lower()


def test_every_rule_module_registers_its_rules():
    """policy/rules.py imports each rule module; one left out would drop its rules from the pack without a word."""
    from collections import Counter

    assert Counter(r.check.__module__ for r in RULES) == {
        "policy.rules_scaling": 5, "policy.rules_isvc_pod": 7, "policy.rules_server": 4, "policy.rules_platform": 14}


def test_one_bad_stack_breaks_every_rule():
    fired = {v.rule for v in evaluate(bad_stack())}
    assert fired == set(RULES_BY_ID)


def test_messages_name_the_resource_and_a_fix():
    for v in evaluate(bad_stack()):
        assert "/" in v.message.split(":", 1)[0], v.message  # "Kind/name: ..."
        assert any(w in v.message for w in ("Set", "Add", "Raise", "Lower", "Remove", "Pin", "Scale")), v.message


# --- the finer points of individual rules ------------------------------------------------------------------------
def test_container_concurrency_zero_fires_and_standard_mode_is_exempt():
    s = Stack(shipped("prod"))
    s.pred("chat-isvc")["containerConcurrency"] = 0.0
    assert any("containerConcurrency is 0 (unlimited)" in m for m in _fired(s.resources, "isvc-container-concurrency"))
    assert _fired(shipped("staging"), "isvc-container-concurrency") == []  # vision is Standard: no queue-proxy


def test_scale_to_zero_allowed_by_annotation_or_outside_prod():
    s = Stack(shipped("prod"))
    s.pred("chat-isvc")["minReplicas"] = 0.0
    s.props("chat-isvc")["metadata"]["annotations"]["preflight.kserve.io/allow-scale-to-zero"] = "true"
    assert _fired(s.resources, "isvc-prod-min-replicas") == []
    dev = shipped("dev")
    assert any(r.props.get("spec", {}).get("predictor", {}).get("minReplicas") == 0 for r in dev)
    assert _fired(dev, "isvc-prod-min-replicas") == []


def test_environment_comes_from_node_group_tag_then_urn():
    assert Context.of(shipped("prod")).environment == "prod"
    s = Stack(shipped("prod"))
    s.props("gpu-ng")["tags"].pop("environment")
    assert Context.of(s.resources).environment == "prod"  # from urn:pulumi:prod::...


def _staging_with_hpa() -> Stack:
    """Staging with `hpa.scaler: hpa`: our HPA on the adapter's Pods metric instead of the KEDA ScaledObject."""
    from policy.stack import stack_resources

    return Stack(stack_resources("staging", stack_dir=FIXTURES,
                                 edit=lambda c: c["kserve-preflight:services"][1]["hpa"].update(scaler="hpa")))


def test_scale_metric_standard_mode_cases():
    staging = Stack(shipped("staging"))  # ships a KEDA ScaledObject on Triton's in-flight requests
    assert _fired(staging.resources, "isvc-scale-metric") == []
    staging.props("vision-scaledobject")["spec"]["triggers"] = [{"type": "cpu", "metricType": "Utilization",
                                                                 "metadata": {"value": "70"}}]
    assert any("ScaledObject/vision-predictor-scaler scales the GPU predictor on cpu" in m
               for m in _fired(staging.resources, "isvc-scale-metric"))
    orphan = Stack([r for r in shipped("staging") if r.name != "vision-scaledobject"])
    assert any("no HorizontalPodAutoscaler or ScaledObject targets Deployment vision-predictor" in m
               for m in _fired(orphan.resources, "isvc-scale-metric"))
    adapter = _staging_with_hpa()  # ships an HPA on the in-flight Pods metric
    assert _fired(adapter.resources, "isvc-scale-metric") == []
    adapter.props("vision-hpa")["spec"]["metrics"] = [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 70}}}]
    assert any("HorizontalPodAutoscaler/vision-predictor-hpa scales the GPU predictor on Resource cpu" in m
               for m in _fired(adapter.resources, "isvc-scale-metric"))
    clash = _staging_with_hpa()
    clash.props("vision-hpa")["metadata"]["name"] = "vision-predictor"
    assert any("has the name of KServe's own HPA" in m for m in _fired(clash.resources, "isvc-scale-metric"))
    builtin = Stack(shipped("staging"))
    builtin.props("vision-isvc")["metadata"]["annotations"].pop("serving.kserve.io/autoscalerClass")
    assert any("KServe's built-in HPA scales it on cpu" in m for m in _fired(builtin.resources, "isvc-scale-metric"))


def test_max_replicas_unset_is_unbounded():
    s = Stack(shipped("prod"))
    s.pred("chat-isvc").pop("maxReplicas")
    assert any("maxReplicas is unset (unbounded)" in m for m in _fired(s.resources, "isvc-max-replicas"))


def test_max_replicas_message_suggests_the_fitting_value():
    (msg,) = _fired(broken("isvc-max-replicas"), "isvc-max-replicas")
    assert "Lower maxReplicas to 28" in msg  # prod: maxSize 7 × 4 GPUs


def test_startup_probe_missing_and_timeout_below_p99():
    s = Stack(shipped("prod"))
    s.model("chat-isvc").pop("startupProbe")
    assert any("no startupProbe" in m for m in _fired(s.resources, "isvc-startup-probe"))
    s = Stack(shipped("prod"))
    s.pred("chat-isvc")["timeout"] = 10.0
    assert any("below the p99 latency SLO 60 s" in m for m in _fired(s.resources, "isvc-timeout"))


def test_startup_probe_budget_is_the_kubelets_guaranteed_one_and_the_loaders():
    """prod chat loads in 74.5 s (its first pods share the cache's reads with code's at the first deploy). The
    kubelet's ticks run from the pod's admission, so failureThreshold 8 × 10 s may kill at 70 s (d + p·(f − 1)): the
    rule fires as the loader refuses, and both ask for at least 9."""
    from stackconfig.load import project_values, stack_config_values
    from stackconfig.schema import parse_stack_config
    from validation.errors import InputError

    project, raw = stack_config_values("prod", stack_dir=FIXTURES)
    values = project_values(raw, project)
    chat = next(v for v in values["services"] if v["name"] == "chat")
    s = Stack(shipped("prod"))
    assert s.props("chat-isvc")["metadata"]["annotations"]["preflight.kserve.io/expected-load-seconds"] == "74.5"
    probe = s.model("chat-isvc")["startupProbe"]
    for failures, fires in ((7, True), (8, True), (9, False)):
        probe.update(periodSeconds=10.0, failureThreshold=float(failures), initialDelaySeconds=0.0)
        fired = _fired(s.resources, "isvc-startup-probe")
        chat["probes"] = {"startup": {"periodSeconds": 10, "failureThreshold": failures}}
        try:
            parse_stack_config(values, project, "prod")
            refused = []
        except InputError as err:
            refused = [p.allowed for p in err.problems if p.path.endswith("probes.startup")]
        assert bool(fired) == bool(refused) == fires, (failures, fired, refused)
        if fires:
            assert f"budget is {10 * (failures - 1)} s" in fired[0]
            assert "Raise failureThreshold to at least 9" in fired[0]
            assert "failureThreshold at least 9" in refused[0]


def test_timeout_unset_uses_knative_default():
    s = Stack(shipped("prod"))
    s.pred("chat-isvc").pop("timeout")
    s.props("chat-isvc")["metadata"]["annotations"]["preflight.kserve.io/slo-p99-latency-seconds"] = "400"
    assert any("300 s (Knative's default)" in m for m in _fired(s.resources, "isvc-timeout"))


def test_pytorch_alloc_conf_not_required_for_triton():
    s = Stack(shipped("staging"))
    s.model("vision-isvc")["env"] = [e for e in s.model("vision-isvc")["env"]
                                     if e["name"] != "PYTORCH_CUDA_ALLOC_CONF"]
    assert _fired(s.resources, "isvc-pytorch-alloc-conf") == []


def _set_env(container: dict, name: str, value: str | None) -> None:
    container["env"] = [e for e in container["env"] if e["name"] != name] + ([{"name": name, "value": value}]
                                                                            if value is not None else [])


def test_alloc_conf_on_multi_gpu_vllm_must_not_expand_segments():
    """KServe runs vLLM with tensor parallelism = the GPU count; expandable segments then kill every worker at
    start-up in vLLM's custom all-reduce (vllm-project/vllm#42609) unless it is disabled."""
    s = Stack(shipped("prod"))
    model = s.model("chat-isvc")
    for key in ("limits", "requests"):
        model["resources"][key]["nvidia.com/gpu"] = "2"
    _set_env(model, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    [msg] = _fired(s.resources, "isvc-pytorch-alloc-conf")
    assert "InferenceService/chat" in msg and "vLLM with 2 GPUs" in msg and "--disable-custom-all-reduce" in msg
    model["args"].append("--disable-custom-all-reduce")
    assert _fired(s.resources, "isvc-pytorch-alloc-conf") == []             # the documented workaround
    model["args"].pop()
    for value in ("expandable_segments:False", None):                       # PyTorch's default, set or not
        _set_env(model, "PYTORCH_CUDA_ALLOC_CONF", value)
        assert _fired(s.resources, "isvc-pytorch-alloc-conf") == []
    s.props("chat-isvc")["metadata"]["annotations"]["preflight.kserve.io/engine"] = "tgi"   # no custom all-reduce
    _set_env(model, "PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")
    assert _fired(s.resources, "isvc-pytorch-alloc-conf") == []
    _set_env(model, "PYTORCH_CUDA_ALLOC_CONF", None)
    assert any("is not set" in m for m in _fired(s.resources, "isvc-pytorch-alloc-conf"))


def test_model_revision_pinning_reads_a_custom_predictors_storage_uri():
    """A custom predictor (TGI, vLLM's own image) names its model in env STORAGE_URI (kserve predictor_custom.go)."""
    s = Stack(shipped("prod"))
    pred = s.pred("chat-isvc")
    model = pred.pop("model")
    pred["containers"] = [{**model, "name": "kserve-container",
                           "env": [{"name": "STORAGE_URI", "value": "hf://meta-llama/Meta-Llama-3-8B-Instruct"}]}]
    assert any("InferenceService/chat" in m and "names no revision" in m
               for m in _fired(s.resources, "model-revision-pinned"))


def test_hpa_scale_down_window_below_the_minimum_is_flagged():
    """An explicit short scaleDown window flaps; none set is Kubernetes' default 300 s (autoscaling/v2), not a miss.
    Staging's vision is pinned at 1 replica (quiet whatever the window): here it may scale to 2."""
    s = _staging_with_hpa()
    s.props("vision-hpa")["spec"]["maxReplicas"] = 2
    s.props("vision-hpa")["spec"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] = 30
    assert any("behavior.scaleDown.stabilizationWindowSeconds 30 (at least 120 s expected" in m
               for m in _fired(s.resources, "isvc-scale-down-stabilization"))
    s.props("vision-hpa")["spec"].pop("behavior")
    assert _fired(s.resources, "isvc-scale-down-stabilization") == []
    keda = Stack(shipped("staging"))  # KEDA copies advanced.horizontalPodAutoscalerConfig.behavior into its HPA
    keda.props("vision-scaledobject")["spec"]["maxReplicaCount"] = 2
    assert _fired(keda.resources, "isvc-scale-down-stabilization") == []
    behavior = keda.props("vision-scaledobject")["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]
    behavior["scaleDown"]["stabilizationWindowSeconds"] = 0
    assert any("ScaledObject/vision-predictor-scaler has behavior.scaleDown.stabilizationWindowSeconds 0" in m
               for m in _fired(keda.resources, "isvc-scale-down-stabilization"))
    keda.props("vision-scaledobject")["spec"].pop("advanced")
    assert _fired(keda.resources, "isvc-scale-down-stabilization") == []


def test_knative_scale_down_hold_is_window_plus_delay_against_a_minimum():
    """The reviewer's flapping story: window "6s" passed (it was set) though it holds a pod 10× shorter than the
    default 60 s, which failed. Now the hold (window + delay, Knative's defaults 60 s + 0 where unset) must reach
    120 s: "6s" alone fails, "6s" with a 2m delay passes, "120s" alone passes, "90s" alone fails."""
    s = Stack(shipped("prod"))
    annotations = s.props("chat-isvc")["metadata"]["annotations"]
    annotations.pop("autoscaling.knative.dev/scale-down-delay")
    for window, delay, fires in (("6s", None, 1), ("6s", "2m", 0), ("120s", None, 0), ("90s", None, 1),
                                 (None, "1m", 0), (None, "30s", 1)):
        for key, value in (("window", window), ("scale-down-delay", delay)):
            annotations.pop(f"autoscaling.knative.dev/{key}", None)
            if value is not None:
                annotations[f"autoscaling.knative.dev/{key}"] = value
        fired = _fired(s.resources, "isvc-scale-down-stabilization")
        assert len(fired) == fires, (window, delay, fired)
    assert "window 60s (default) + scale-down-delay 30s keeps a GPU replica only ~90 s" in fired[0]


def test_stabilization_minimum_follows_the_traffic_shape():
    s = Stack(shipped("prod"))
    annotations = s.props("chat-isvc")["metadata"]["annotations"]
    for key in ("autoscaling.knative.dev/scale-down-delay", "autoscaling.knative.dev/window"):
        annotations.pop(key)
    assert annotations["preflight.kserve.io/traffic"] == "spiky"  # a trace replay
    assert len(_fired(s.resources, "isvc-scale-down-stabilization")) == 1
    annotations["preflight.kserve.io/traffic"] = "steady"   # steady traffic may keep Knative's default 60 s
    assert _fired(s.resources, "isvc-scale-down-stabilization") == []
    annotations["autoscaling.knative.dev/window"] = "6s"   # but not less: the flapping story's waves are "steady"
    [msg] = _fired(s.resources, "isvc-scale-down-stabilization")
    assert "~6 s after its load ends (at least 60 s expected for steady traffic)" in msg
    annotations.pop("autoscaling.knative.dev/window")
    annotations.pop("preflight.kserve.io/traffic")  # unknown counts as spiky
    assert len(_fired(s.resources, "isvc-scale-down-stabilization")) == 1


def test_taint_toleration_covers_device_plugin_and_model_cache():
    s = Stack(shipped("prod"))
    s.pod("nvidia-ds")["tolerations"] = []
    s.pod("model-cache-prefetch")["tolerations"] = [{"key": "other", "operator": "Exists"}]
    fired = _fired(s.resources, "gpu-taint-tolerated")
    assert any(m.startswith("DaemonSet/nvidia-device-plugin:") for m in fired)
    assert any(m.startswith("DaemonSet/model-cache-prefetch:") for m in fired)


def test_taint_follows_the_node_group():
    s = Stack(shipped("prod"))
    s.props("gpu-ng")["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NO_EXECUTE"}]
    assert any("dedicated=gpu:NoExecute" in m for m in _fired(s.resources, "gpu-taint-tolerated"))


def test_image_pinning_rules():
    assert image_pinned("nvcr.io/nvidia/tritonserver:25.08-py3")
    assert image_pinned("registry:5000/team/img@sha256:" + "a" * 64)
    assert not image_pinned("registry:5000/team/img")
    assert not image_pinned("vllm/vllm-openai:latest")
    s = Stack(shipped("staging"))
    s.model("vision-isvc")["image"] = "nvcr.io/nvidia/tritonserver:latest"
    assert any("InferenceService/vision" in m for m in _fired(s.resources, "image-tag-pinned"))


def test_model_revision_pinning_reads_the_cache_prefetch_list_and_applies_in_prod_only():
    """With the cache on, the source URI is in the prefetch DaemonSet's fetch list, not the InferenceService's
    storageUri (pvc://): an unpinned source fires there; a pinned one, or the same outside prod, does not."""
    s = Stack(shipped("prod"))
    ds = s.container("model-cache-prefetch")
    pinned = "hf://mistralai/Mistral-7B-Instruct-v0.3:c170c708c41dac9275d15a8fff4eca08d52bab71"
    assert any(pinned in a for a in ds["command"])          # sh -c <script>: `fetch '<uri>' <dir> &` per model
    assert not _fired(s.resources, "model-revision-pinned")
    ds["command"] = [a.replace(pinned, "hf://mistralai/Mistral-7B-Instruct-v0.3") for a in ds["command"]]
    [msg] = _fired(s.resources, "model-revision-pinned")
    assert "model-cache-prefetch" in msg and "hf://mistralai/Mistral-7B-Instruct-v0.3 names no revision" in msg
    s.model("chat-isvc")["storageUri"] = "hf://meta-llama/Meta-Llama-3-8B-Instruct:main"   # a branch moves
    assert any("names the revision 'main', a branch or tag that can move" in m
               for m in _fired(s.resources, "model-revision-pinned"))
    dev = Stack(shipped("dev"))                            # dev's chat is unpinned: allowed outside prod
    assert "hf://" in str(dev.container("model-cache-prefetch")) and not _fired(dev.resources, "model-revision-pinned")


def test_node_group_capacity_below_warm_replicas():
    s = Stack(shipped("staging"))
    s.props("gpu-ng")["scalingConfig"].update(minSize=1.0, maxSize=1.0)
    assert any("minReplicas need 3 GPUs" in m for m in _fired(s.resources, "nodegroup-capacity"))


def test_helpers():
    assert duration_s("1h30m") == 5400 and duration_s("90s") == 90 and duration_s("bad") is None
    taint = {"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}
    assert tolerates({"operator": "Exists"}, taint)
    assert tolerates({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, taint)
    assert not tolerates({"key": "nvidia.com/gpu", "value": "false"}, taint)
    assert not tolerates({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, taint)


def test_the_stacks_config_autoscaler_counts_for_stabilization():
    """A scale-down delay or stable window the stack patches into knative-serving/config-autoscaler
    (`knative.autoscaler`) applies to every revision without the annotation (decider.go MakeDecider)."""
    s = Stack(shipped("prod"))
    annotations = s.props("chat-isvc")["metadata"]["annotations"]
    for key in ("autoscaling.knative.dev/scale-down-delay", "autoscaling.knative.dev/window"):
        annotations.pop(key)
    assert len(_fired(s.resources, "isvc-scale-down-stabilization")) == 1
    for data, fires in (({"scale-down-delay": "5m"}, 0), ({"stable-window": "120s"}, 0),
                        ({"max-scale-up-rate": "10"}, 1)):
        patch = Resource("kubernetes:core/v1:ConfigMapPatch", "knative-autoscaler-patch", {
            "metadata": {"name": "config-autoscaler", "namespace": "knative-serving"}, "data": data})
        assert len(_fired([*s.resources, patch], "isvc-scale-down-stabilization")) == fires, data


def test_tgi_admission_limit_must_admit_what_the_queue_proxy_sends():
    """Pulumi.tgi.yaml: containerConcurrency 8, TGI's router admitting 2 → 70 % 429s in the gate. The rule fires
    below containerConcurrency (or the KPA target), names both, and is quiet at or above it, with TGI's default
    128, for other engines and in Standard mode (no queue-proxy)."""
    from policy_fixtures import _tgi_admitting

    def fired(limit, **pred):
        s = Stack(shipped("prod"))   # chat: containerConcurrency 16, scaleTarget 12
        if limit is not None:
            _tgi_admitting(s, "chat-isvc", limit)
        else:
            s.props("chat-isvc")["metadata"]["annotations"]["preflight.kserve.io/engine"] = "tgi"
        s.pred("chat-isvc").update(pred)
        return _fired(s.resources, "isvc-server-admission-limit")

    [msg] = fired(8)
    assert "--max-concurrent-requests is 8, below the 16 requests" in msg and "containerConcurrency 16" in msg
    assert "limits.maxConcurrentRequests" in msg
    assert fired(16) == [] and fired(None) == []
    assert fired(100, containerConcurrency=200.0)             # above TGI's default when it is unset
    assert "below the 12 requests" in fired(8, containerConcurrency=8.0, scaleTarget=12.0)[0]
    assert "unlimited" in fired(64, containerConcurrency=0.0)[0]
    s = Stack(shipped("prod"))
    s.model("chat-isvc")["args"].append("--max-concurrent-requests=2")   # vLLM: no router limit to compare
    assert _fired(s.resources, "isvc-server-admission-limit") == []
    s = Stack(shipped("staging"))                              # vision: Standard mode
    _tgi_admitting(s, "vision-isvc", 1)
    assert _fired(s.resources, "isvc-server-admission-limit") == []


def test_unlimited_concurrency_message_names_the_queue_proxys_503_not_429():
    """Knative's queue-proxy answers 503 when its queue overflows (reference knative-kserve.md); 429 never comes
    from Knative, only from a gateway or a server's own admission limit."""
    [msg] = _fired(broken("isvc-container-concurrency"), "isvc-container-concurrency")
    assert "503" in msg and "429" not in msg


def test_tgi_without_the_flag_admits_tgis_default_the_simulations_too():
    """No --max-concurrent-requests: TGI's router admits its default, 128 (launcher main.rs), the number the
    simulation's TGI server runs with; containerConcurrency 129 is one more than it admits, 128 is not."""
    from dataclasses import fields

    from simulation.gpu.tgi import TgiSpec

    default = next(f.default for f in fields(TgiSpec) if f.name == "max_concurrent_requests")
    assert default == 128
    s = Stack(shipped("prod"))
    s.props("chat-isvc")["metadata"]["annotations"]["preflight.kserve.io/engine"] = "tgi"
    assert not any(a.startswith("--max-concurrent-requests") for a in s.model("chat-isvc").get("args", []))
    s.pred("chat-isvc").update(containerConcurrency=float(default + 1))
    [msg] = _fired(s.resources, "isvc-server-admission-limit")
    assert f"--max-concurrent-requests is {default} (TGI's default), below the {default + 1} requests" in msg
    s.pred("chat-isvc").update(containerConcurrency=float(default))
    assert _fired(s.resources, "isvc-server-admission-limit") == []


def test_the_policys_revision_timeout_default_is_the_simulations():
    """A predictor without `timeout` runs with Knative's revision-timeout-seconds, 300 s (defaults.go): the policy
    judges it with the very number the simulation's queue-proxy cuts requests off at."""
    from simulation.isvc import ServingSpec

    s = Stack(shipped("prod"))
    s.pred("chat-isvc").pop("timeout")
    simulated = ServingSpec.from_manifest(s.props("chat-isvc")).timeout_s
    assert simulated == 300
    annotations = s.props("chat-isvc")["metadata"]["annotations"]
    annotations["preflight.kserve.io/slo-p99-latency-seconds"] = f"{simulated + 1:g}"
    [msg] = _fired(s.resources, "isvc-timeout")
    assert f"timeout is {simulated:g} s (Knative's default), below the p99 latency SLO" in msg
    annotations["preflight.kserve.io/slo-p99-latency-seconds"] = f"{simulated:g}"
    assert _fired(s.resources, "isvc-timeout") == []


def test_an_hpa_without_a_scale_down_window_gets_the_simulations_default(monkeypatch):
    """Unset, behavior.scaleDown.stabilizationWindowSeconds is Kubernetes' 300 s (autoscaling/v2), the simulated
    HPA's default: the rule judges that number, so it passes a 300 s minimum and fails a 301 s one."""
    import sys

    from simulation.autoscaler.hpa import HpaSpec

    default = HpaSpec().scale_down.window_s
    assert default == 300
    s = _staging_with_hpa()
    s.props("vision-hpa")["spec"]["maxReplicas"] = 2   # not pinned at 1 (quiet whatever the window)
    s.props("vision-hpa")["spec"]["behavior"]["scaleDown"].pop("stabilizationWindowSeconds")
    rules = sys.modules[RULES_BY_ID["isvc-scale-down-stabilization"].check.__module__]
    for minimum, fires in ((default, False), (default + 1, True)):
        monkeypatch.setitem(rules.MIN_SCALE_DOWN_HOLD_S, "spiky", minimum)
        fired = _fired(s.resources, "isvc-scale-down-stabilization")
        assert bool(fired) == fires, (minimum, fired)
    assert f"stabilizationWindowSeconds {default:g} (Kubernetes' default)" in fired[0]
