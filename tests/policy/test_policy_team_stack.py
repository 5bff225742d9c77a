"""Rule logic fixed after review rev13-policy (a platform engineer's own `qa` stack, tests/policy/team_qa.yaml):
findings 2 (declared config-autoscaler), 3 (Standard-mode admission limit), 4 (scale-to-zero timeout), 5 (pinned
services), 6 (the p99 SLO) and 12 (a hand-written InferenceService's Knative annotations). Each case has a control
on the other side of the edge, so a rule that never fires fails too."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Callable, Optional

import yaml

from offline import run_program
from policy.resources import Resource
from policy.rules import RULES_BY_ID, evaluate
from policy.stack import resources_from_run
from policy_fixtures import FIXTURES

QA = Path(__file__).with_name("team_qa.yaml")
P = "kserve-preflight:"


@functools.lru_cache(maxsize=None)
def _qa_config() -> dict:
    return yaml.safe_load(QA.read_text())["config"]


def qa(edit: Optional[Callable[[dict, Callable[[str], dict]], None]] = None) -> list[Resource]:
    """The qa stack's resources (the real program under mocks), after `edit(config, svc)`; `svc(name)` is that
    service's mapping in the config."""
    config = copy.deepcopy(_qa_config())

    def svc(name: str) -> dict:
        return next(s for s in config[P + "services"] if s["name"] == name)

    if edit:
        edit(config, svc)
    # stack_dir: the frozen fixtures, so a team without a `staging` stack in stacks/ runs this too (finding 1)
    return resources_from_run(run_program("staging", values=config, stack_dir=FIXTURES), "qa")


def fired(resources: list[Resource], rule_id: str) -> list[str]:
    return [v.message for v in evaluate(resources, [RULES_BY_ID[rule_id]])]


def isvc(resources: list[Resource], name: str) -> Resource:
    return next(r for r in resources if r.name == f"{name}-isvc")


def test_the_unedited_qa_stack_passes():
    assert [v for v in evaluate(qa()) if v.mandatory] == []


# ----- 2: the config-autoscaler values a stack declares but does not patch ---------------------------------------
def _spiky_tgi_cluster_delay(manage: bool, autoscaler: dict) -> Callable[[dict, Callable[[str], dict]], None]:
    """qa's tgi made spiky (gamma cv 1.5) without its own scale-down-delay; the cluster's delay in
    `knative.autoscaler`, patched or (`manageAutoscaler: false`) declared."""
    def edit(config, svc):
        tgi = svc("tgi")
        tgi["maxReplicas"] = 2
        tgi["workload"].update(kind="gamma", cv=1.5)
        del tgi["annotations"]["autoscaling.knative.dev/scale-down-delay"]
        config[P + "knative"] = {"manageAutoscaler": manage, "autoscaler": autoscaler}
    return edit


def test_scale_down_reads_the_declared_cluster_values_when_the_stack_does_not_patch_them():
    """Review finding 2: with `manageAutoscaler: false` the stack says what the cluster's config-autoscaler holds;
    the gate simulates those values (gate/__init__.py: scenario_for), so the policy must read them too."""
    for manage in (True, False):
        resources = qa(_spiky_tgi_cluster_delay(manage, {"scale-down-delay": "5m"}))
        assert fired(resources, "isvc-scale-down-stabilization") == [], manage
    [msg] = fired(qa(_spiky_tgi_cluster_delay(False, {"scale-down-delay": "0s", "stable-window": "6s"})),
                  "isvc-scale-down-stabilization")
    assert "window 6s + scale-down-delay 0s" in msg and "~6 s" in msg


def test_declared_values_ride_on_knative_services_only_and_never_beside_a_patch():
    """The annotation carries exactly what the gate simulates (`knative.autoscaler.data()`), on Knative-mode
    services, and only when no ConfigMapPatch carries them."""
    import json

    from manifests.inference_service import CONFIG_AUTOSCALER_ANNOTATION, STACK_ONLY_ANNOTATIONS
    from policy.bounds import CONFIG_AUTOSCALER_ANNOTATION as READ

    assert CONFIG_AUTOSCALER_ANNOTATION == READ and READ in STACK_ONLY_ANNOTATIONS   # never reaches a pod
    declared = {"scale-down-delay": "5m", "stable-window": "90s"}
    unmanaged = qa(_spiky_tgi_cluster_delay(False, declared))
    ann = isvc(unmanaged, "tgi").props["metadata"]["annotations"]
    assert json.loads(ann[READ]) == declared
    assert READ not in isvc(unmanaged, "chat").props["metadata"]["annotations"]   # Standard mode: no revision
    assert not [r for r in unmanaged if r.name == "knative-autoscaler-patch"]
    managed = qa(_spiky_tgi_cluster_delay(True, declared))
    assert [r for r in managed if r.name == "knative-autoscaler-patch"]
    assert all(READ not in r.props.get("metadata", {}).get("annotations", {}) for r in managed)


# ----- 5: a service pinned at equal replica bounds cannot flap -----------------------------------------------------
def _spiky(svc: dict) -> None:
    svc["workload"].update(kind="gamma", cv=1.5)


def test_scale_down_is_quiet_for_a_knative_service_pinned_at_min_equal_max():
    """Review finding 5: tgi at minReplicas 1 = maxReplicas 1, spiky, no scale-down-delay: Knative never scales
    it down (min-scale = max-scale = 1), so there is no flapping to prevent. maxReplicas 2 can flap: it fails."""
    def pinned(max_replicas: int):
        def edit(config, svc):
            del svc("tgi")["annotations"]["autoscaling.knative.dev/scale-down-delay"]
            _spiky(svc("tgi"))
            svc("tgi")["maxReplicas"] = max_replicas
        return edit

    assert fired(qa(pinned(1)), "isvc-scale-down-stabilization") == []
    [msg] = fired(qa(pinned(2)), "isvc-scale-down-stabilization")
    assert "tgi" in msg and "flapping" in msg


def test_scale_down_is_quiet_for_a_keda_scaled_service_pinned_at_min_equal_max():
    """chat (Standard, KEDA ScaledObject) at 2 = 2 with a 60 s stabilization window: quiet; at 2..3 it fails."""
    def pinned(max_replicas: int):
        def edit(config, svc):
            chat = svc("chat")
            chat.update(minReplicas=2, maxReplicas=max_replicas)
            chat["hpa"]["behavior"] = {"scaleDown": {"stabilizationWindowSeconds": 60}}
            _spiky(chat)
            config[P + "gpuNodeGroup"]["maxSize"] = 5
        return edit

    assert fired(qa(pinned(2)), "isvc-scale-down-stabilization") == []
    [msg] = fired(qa(pinned(3)), "isvc-scale-down-stabilization")
    assert "chat-predictor-scaler" in msg and "stabilizationWindowSeconds 60" in msg


def test_replica_bounds_of_each_autoscaler_kind():
    """An HPA's unset minReplicas is 1; a ScaledObject's unset counts are KEDA's 0 and 100."""
    from policy.bounds import autoscaler_bounds, knative_bounds
    from policy.resources import SCALED_OBJECT_TYPE

    hpa = Resource("kubernetes:autoscaling/v2:HorizontalPodAutoscaler", "h", {"spec": {"maxReplicas": 1}})
    keda = Resource(SCALED_OBJECT_TYPE, "k", {"spec": {}})
    assert autoscaler_bounds(hpa) == (1.0, 1.0) and autoscaler_bounds(keda) == (0.0, 100.0)
    isvc_ = Resource("kubernetes:serving.kserve.io/v1beta1:InferenceService", "i", {"spec": {"predictor": {}}})
    assert knative_bounds(isvc_) == (1.0, None)   # KServe's default min 1; no max: unbounded, never pinned


# ----- 3: Standard mode: the scaler's in-flight target against TGI's admission limit ------------------------------
def _tgi_standard(target: int, limit: int, scaler: str = "keda"):
    """The reviewer's qa-tgi-std: tgi in Standard mode with a KEDA ScaledObject (or an HPA on the Pods metric)."""
    def edit(config, svc):
        tgi = svc("tgi")
        for key in ("containerConcurrency", "timeout", "annotations"):
            del tgi[key]
        tgi.update(deploymentMode="Standard", maxReplicas=2, scaleTarget=target, hpa={"scaler": scaler})
        tgi["limits"]["maxConcurrentRequests"] = limit
        svc("chat")["maxReplicas"] = 2
    return edit


def test_standard_mode_scaler_target_at_or_above_the_admission_limit_never_scales_out():
    """Review finding 3. The router caps what a pod holds at --max-concurrent-requests, so the per-pod average
    KEDA's HPA reads never exceeds it, and the HPA adds a pod only above target × 1.1 (its default tolerance):
    target 12 or 8 against limit 8 never scales out (the gate: 1 ready replica, 58 % 429s); 7 can (7.7 < 8)."""
    for target in (12, 8):
        [msg] = fired(qa(_tgi_standard(target, 8)), "isvc-server-admission-limit")
        assert "ScaledObject/tgi-predictor-scaler" in msg and "never scales out" in msg, msg
        assert "scaleTarget to at most 7" in msg
    assert fired(qa(_tgi_standard(7, 8)), "isvc-server-admission-limit") == []
    [msg] = fired(qa(_tgi_standard(12, 8, "hpa")), "isvc-server-admission-limit")   # the HPA Pods metric
    assert "HorizontalPodAutoscaler/tgi-predictor-hpa" in msg and "maxConcurrentRequests to at least 14" in msg


def test_standard_mode_reads_the_hpas_own_scale_up_tolerance():
    """`behavior.scaleUp.tolerance` (KEP-4951) replaces the controller's 0.1: at 0, target 7 < limit 8 scales out,
    at 0.2 it does not (8.4 ≥ 8)."""
    from policy.rules_server import scale_up_tolerance

    for tolerance, fires in (("0", False), ("200m", True)):
        resources = qa(_tgi_standard(7, 8))
        so = next(r for r in resources if r.name == "tgi-scaledobject")
        so.props["spec"]["advanced"] = {"horizontalPodAutoscalerConfig": {"behavior": {"scaleUp": {
            "tolerance": tolerance}}}}
        assert scale_up_tolerance(so) == float(tolerance.replace("200m", "0.2"))
        assert bool(fired(resources, "isvc-server-admission-limit")) == fires, tolerance


# ----- 6: isvc-timeout compares with the p99 SLO, and says so ------------------------------------------------------
def test_timeout_rule_names_the_p99_slo_not_an_expected_latency():
    """Review finding 6: the annotation is the SLO bound. qa's tgi with timeout 30 s and SLO 45 s fails (the gate
    predicted p99 27 s: the rule stays mandatory, see its docstring), and the message says what it compares and
    offers the other fix, lowering the SLO; timeout 45 passes."""
    def timeout(seconds: int):
        return lambda config, svc: svc("tgi").update(timeout=seconds)

    rule = RULES_BY_ID["isvc-timeout"]
    assert "p99 latency SLO" in rule.title and "expected p99" not in rule.title
    [msg] = fired(qa(timeout(30)), "isvc-timeout")
    assert "below the p99 latency SLO 45 s" in msg and "lower the SLO (slo.p99LatencyS) to 30 s" in msg, msg
    assert fired(qa(timeout(45)), "isvc-timeout") == []


# ----- 4: a scale-to-zero service's timeout against its cold start -------------------------------------------------
def test_scale_to_zero_timeout_below_the_cold_start_fails():
    """Review finding 4 (guide 001 §8): qa's tgi at minReplicas 0 loads its model in 71.5 s (p95, the rendered
    expected-load-seconds); a new node takes at least 60 s more. Timeouts 60 and 120 s cut the waking request with
    504; 300 s covers it; minReplicas 1 has no cold request."""
    def s2z(timeout: int, min_replicas: int = 0):
        return lambda config, svc: svc("tgi").update(minReplicas=min_replicas, timeout=timeout)

    resources = qa(s2z(60))
    load = float(isvc(resources, "tgi").props["metadata"]["annotations"]["preflight.kserve.io/expected-load-seconds"])
    assert load == 71.5
    [msg] = fired(resources, "isvc-timeout")
    assert "minReplicas is 0" in msg and "504" in msg and "at least 132 s" in msg, msg
    assert len(fired(qa(s2z(120)), "isvc-timeout")) == 1
    assert fired(qa(s2z(300)), "isvc-timeout") == []
    assert fired(qa(s2z(60, min_replicas=1)), "isvc-timeout") == []


def test_the_node_launch_is_the_cold_start_priors_fastest():
    from policy.rules_server import NODE_PROVISION_MIN_S
    from stackconfig.platform import COLD_START_DEFAULTS

    node = COLD_START_DEFAULTS["nodeProvisionS"]
    assert node.kind == "uniform" and node.a == NODE_PROVISION_MIN_S


# ----- 12: a hand-written InferenceService's Knative annotations (guide 000 §8's template) -------------------------
GUIDE_000_8 = {"autoscaling.knative.dev/metric": "concurrency", "autoscaling.knative.dev/target": "1",
               "autoscaling.knative.dev/minScale": "1", "autoscaling.knative.dev/maxScale": "8"}


def _hand_written(ann: dict, predictor: Optional[dict] = None, args: Optional[list] = None) -> Resource:
    """Guide 000 §8's InferenceService template as CrossGuard sees it in a user's own program."""
    container = {"name": "kserve-container", "image": "myrepo/gpu-infer:1.0.0", "args": args or [],
                 "resources": {"limits": {"nvidia.com/gpu": "1", "cpu": "4", "memory": "16Gi"},
                               "requests": {"cpu": "2", "memory": "8Gi"}}}
    props = {"apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
             "metadata": {"name": "gpu-infer", "namespace": "ml", "annotations": ann},
             "spec": {"predictor": {"containers": [container], **(predictor or {})}}}
    return Resource("kubernetes:serving.kserve.io/v1beta1:InferenceService", "gpu-infer", props)


def test_max_replicas_reads_the_legacy_max_scale_annotation_kserve_passes_through():
    """Review finding 12: the template bounds the revision at 8 with `maxScale`, which KServe copies to the
    revision (its disallowed list holds only `max-scale`/`min-scale`) and Knative reads (MaxScaleAnnotation's
    KeyPriority). `max-scale` on the InferenceService is dropped by KServe: still unbounded, and said so."""
    assert fired([_hand_written(GUIDE_000_8)], "isvc-max-replicas") == []
    no_bound = {k: v for k, v in GUIDE_000_8.items() if k != "autoscaling.knative.dev/maxScale"}
    [msg] = fired([_hand_written(no_bound)], "isvc-max-replicas")
    assert "unbounded" in msg and "never reaches the revision" not in msg
    [msg] = fired([_hand_written({**no_bound, "autoscaling.knative.dev/max-scale": "8"})], "isvc-max-replicas")
    assert "max-scale on the InferenceService is on KServe's serviceAnnotationDisallowedList" in msg
    from policy.bounds import max_replicas

    assert max_replicas(_hand_written(GUIDE_000_8, {"maxReplicas": 2})) == 2   # maxReplicas wins (max-scale)
    standard = {**GUIDE_000_8, "serving.kserve.io/deploymentMode": "Standard"}
    assert max_replicas(_hand_written(standard)) is None   # no Knative revision reads it


def test_admission_limit_reads_the_knative_target_annotation():
    """A TGI service whose KPA target comes from `autoscaling.knative.dev/target` (no scaleTarget): 16 requests per
    pod against a limit of 8 answers 429 before Knative scales; a target of 8 fits."""
    def tgi(target: str) -> Resource:
        ann = {**GUIDE_000_8, "autoscaling.knative.dev/target": target, "preflight.kserve.io/engine": "tgi"}
        return _hand_written(ann, {"containerConcurrency": 4}, ["--max-concurrent-requests=8"])

    [msg] = fired([tgi("16")], "isvc-server-admission-limit")
    assert "scaleTarget 16" in msg
    assert fired([tgi("8")], "isvc-server-admission-limit") == []
