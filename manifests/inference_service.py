"""The tuned InferenceService (serving.kserve.io/v1beta1) and, in Standard mode, its HorizontalPodAutoscaler.

Field mapping follows KServe `pkg/apis/serving/v1beta1/component.go` (ComponentExtensionSpec) and
`pkg/controller/v1alpha1/utils/utils.go: SetAutoScalingAnnotations`: in Knative mode `minReplicas`, `maxReplicas`,
`containerConcurrency`, `scaleMetric`, `scaleTarget` and `timeout` sit on the predictor (in Standard mode the replica
bounds are on our HPA or ScaledObject only, `inference_service`); Knative's
`autoscaling.knative.dev/*` annotations on the InferenceService are copied to the Knative revision. In Knative mode
`containerConcurrency`, `timeout` and `serving.knative.dev/progress-deadline` are always written (as the
simulation reads them when unset), so the cluster's own config-defaults and config-deployment never decide them.
In Standard mode KServe would create an HPA with an empty behavior (`reconcilers/hpa/hpa_reconciler.go`); we set
`serving.kserve.io/autoscalerClass: external` and render our own autoscaler so `behavior` is under our control:
a KEDA ScaledObject on the runtime's in-flight requests (manifests/keda.py, the default for scaleMetric
concurrency), or an HPA (cpu/memory, or a Pods metric served by a custom-metrics adapter, `hpa.scaler: hpa`).

This is the one place where each service knob becomes YAML; the simulation reads the dict this returns.
"""

from __future__ import annotations

import copy
import json

from manifests.common import labels, restricted_security_context
from manifests.keda import scaled_object
from manifests.model_cache import cache_uri
from manifests.model_download import predictor_account
from manifests.rollout import progress_deadline_s, ready_timeout_s
from simulation.isvc import DEFAULT_CONTAINER_CONCURRENCY, DEFAULT_TIMEOUT_S
from stackconfig.runtimes import is_custom_predictor, server_image
from stackconfig.server_args import engine_args
from stackconfig.schema import GPU_RESOURCE, Probe, ServiceConfig, StackConfig, traffic_shape
from validation.annotations import (CLASS_ANNOTATION, CONFIG_AUTOSCALER_ANNOTATION, ENGINE_ANNOTATION,
                                    MODE_ANNOTATION, MODEL_ANNOTATION, PREFLIGHT_PREFIX as ANNOTATION_PREFIX,
                                    PROGRESS_DEADLINE_KEY, TRITON_CAP_ANNOTATIONS)
from validation.defaults import SERVING_PORT as SERVER_PORT
from validation.deployment_mode import mode_name
from validation.kserve_template import escape as escape_placeholders

TRITON_PROTOCOL = "v2"  # Triton's HTTP protocol, the one kserve-tritonserver lists first (config/runtimes)


def engine_env(svc: ServiceConfig) -> list[dict]:
    """Environment the runtime reads: the CUDA allocator setting and the user's own variables. The caps are rendered
    as flags, never as variables (TGI's launcher also reads each flag from its upper-case variable, the flag
    winning: the user's variables are checked against the flags at load, simulation/engine_flags.py)."""
    env = {"PYTORCH_CUDA_ALLOC_CONF": svc.pytorch_cuda_alloc_conf, **svc.env}
    return [{"name": k, "value": str(v)} for k, v in env.items() if v is not None]


def revision_timeout_s(svc: ServiceConfig) -> int | None:
    """The revision timeout a Knative-mode service runs: its `timeout`, else Knative's default as the manifest
    renders it (300 s); None in Standard mode, where no queue-proxy enforces one."""
    if svc.deployment_mode != "Knative":
        return None
    return int(DEFAULT_TIMEOUT_S) if svc.timeout_s is None else svc.timeout_s


def triton_caps(svc: ServiceConfig) -> dict[str, str]:
    """The caps the user declares for Triton's config.pbtxt, as annotations (empty for other engines)."""
    if svc.engine != "triton":
        return {}
    declared = {"max_batch_size": svc.caps.max_batch_size, "max_pixels": svc.caps.max_image_pixels,
                "max_queue_delay_microseconds": svc.caps.max_queue_delay_us, "max_queue_size": svc.caps.max_queue_size}
    return {TRITON_CAP_ANNOTATIONS[k]: str(v) for k, v in declared.items() if v is not None}


def _probe(probe: Probe) -> dict:
    return {"httpGet": {"path": probe.path, "port": SERVER_PORT}, "periodSeconds": probe.period_s,
            "failureThreshold": probe.failure_threshold, "initialDelaySeconds": probe.initial_delay_s,
            "timeoutSeconds": probe.timeout_s}


def hpa_name(svc: ServiceConfig) -> str:
    """Our HPA's name: never `<name>-predictor`, the name of KServe's own HPA. With autoscalerClass `external`,
    KServe's HPA reconciler (reconcilers/hpa/hpa_reconciler.go: checkHPAExist) fetches `<name>-predictor`; an HPA
    found there is updated to KServe's defaults (and, once owned, deleted; ≤ 0.15 deletes it at once)."""
    return f"{svc.name}-predictor-hpa"


# Annotations for the gate, the policies (policy/rules_*.py) and Pulumi, which no pod reads: the stack keeps
# them off the pod template (KServe's serviceAnnotationDisallowedList, manifests/kserve_config.py), so changing an
# SLO or a cold-start prior never rolls the GPU pods. Every key `_annotations` writes under these prefixes is here.
AWAIT_READY = "condition=Ready"
STACK_ONLY_PREFIXES = (ANNOTATION_PREFIX, "pulumi.com/")
STACK_ONLY_ANNOTATIONS = ("pulumi.com/waitFor", "pulumi.com/timeoutSeconds",
                          *(ANNOTATION_PREFIX + k for k in ("engine", "model", "expected-load-seconds", "traffic",
                                                            "slo-p99-latency-seconds", "allow-scale-to-zero",
                                                            "policy-waivers")),
                          CONFIG_AUTOSCALER_ANNOTATION, *TRITON_CAP_ANNOTATIONS.values())


def declared_config_autoscaler(cfg: StackConfig) -> str | None:
    """The config-autoscaler keys the stack declares but does not patch (`knative.manageAutoscaler: false`: they
    say what the cluster has), as compact JSON for the annotation the policies read; None when the stack patches
    them (the ConfigMapPatch carries them) or declares none. The same `knative.autoscaler.data()` the gate
    simulates and a patch would write, so policy and gate read one source."""
    data = cfg.knative.autoscaler.data()
    if cfg.knative.manage_autoscaler or not data:
        return None
    return json.dumps(dict(sorted(data.items())), separators=(",", ":"))


# The deploymentMode annotation's value by `kserve.version` (validation/deployment_mode.py `mode_name`): KServe
# 0.15 knows only `Serverless`/`RawDeployment` (any other value gets the default mode); 0.16.0 records
# `Knative`/`Standard` in status.deploymentMode and refuses every later update, and the finalizer removal of a
# delete, whose annotation differs from it as written (inference_service_validation.go validateDeploymentMode;
# fixed in 0.17, kserve#5025).
def _annotations(cfg: StackConfig, svc: ServiceConfig) -> dict[str, str]:
    out = {MODE_ANNOTATION: mode_name(svc.deployment_mode, cfg.kserve.version),
           # pulumi-kubernetes ≥ 4.18 awaits a custom resource only when told which condition means ready: a
           # service that never comes up fails its first `pulumi up` instead of reporting success. On an update it
           # proves less: Pulumi also waits for status.observedGeneration ≥ metadata.generation (await/condition/
           # kubectl.go checkCondition; jsonpath.go does the same), and KServe copies the child's into it (the
           # Deployment's or the Knative Service's, inference_service_status.go PropagateRawStatus/PropagateStatus).
           # So every spec change here must reach the child (hence no replica bounds on a Standard predictor), or
           # the update times out; and once the child's generation is ahead (an HPA scale, a Knative annotation
           # change) an update is satisfied by the previous Ready at once. No waitFor and no status field
           # tracks the InferenceService's own generation, and skipAwait would drop the first deploy's wait
           # too: docs/deploying.md §4 says what `pulumi up` waits for on create and on update.
           "pulumi.com/waitFor": AWAIT_READY,
           "pulumi.com/timeoutSeconds": str(ready_timeout_s(cfg, svc))}
    if svc.deployment_mode == "Standard":
        out[CLASS_ANNOTATION] = "external"
    out.update(svc.annotations)
    if svc.deployment_mode == "Knative":
        # The revision's progress deadline, written even when it is the default: without the annotation Knative
        # takes config-deployment's progress-deadline, the cluster's (600 s as shipped, what the gate assumes).
        out.setdefault(PROGRESS_DEADLINE_KEY, f"{progress_deadline_s(svc):.0f}s")
    out.update({
        ENGINE_ANNOTATION: svc.engine,
        MODEL_ANNOTATION: svc.model.name,
        ANNOTATION_PREFIX + "expected-load-seconds": f"{svc.expected_load_s:g}",
        ANNOTATION_PREFIX + "traffic": traffic_shape(svc.workload),
        **triton_caps(svc),
    })
    if svc.slo:
        out[ANNOTATION_PREFIX + "slo-p99-latency-seconds"] = f"{svc.slo.p99_latency_s:g}"
    if svc.allow_scale_to_zero and svc.min_replicas == 0:
        out[ANNOTATION_PREFIX + "allow-scale-to-zero"] = "true"
    declared = declared_config_autoscaler(cfg)
    if declared and svc.deployment_mode == "Knative":   # only a Knative revision runs with config-autoscaler
        out[CONFIG_AUTOSCALER_ANNOTATION] = declared
    if svc.policy_waivers:   # policyWaivers, for the policy rules (policy/waivers.py); absent when none
        out[ANNOTATION_PREFIX + "policy-waivers"] = json.dumps(svc.policy_waivers, sort_keys=True)
    return out


# KServe's own huggingfaceserver image ends with `USER 1000` (python/huggingface_server.Dockerfile); the
# kserve-tritonserver runtime sets runAsUser 1000 itself (kept by the merge); the TGI and vLLM images run as root
# (no USER), so a custom predictor must not claim runAsNonRoot (the kubelet would refuse to start it).
NON_ROOT_ENGINES = ("vllm", "naive")
POD_LABEL = "serving.kserve.io/inferenceservice"  # kserve constants.InferenceServicePodLabelKey, on every pod


def runs_as_non_root(svc: ServiceConfig) -> bool:
    return svc.engine in NON_ROOT_ENGINES and not is_custom_predictor(svc.engine, svc.image)


def topology_spread(cfg: StackConfig, svc: ServiceConfig) -> list[dict]:
    """Prod services with more than one replica spread over zones, so one zone's outage keeps some serving.
    `ScheduleAnyway`: a skew never leaves a GPU pod Pending while a node in another zone has room."""
    if cfg.environment != "prod" or svc.max_replicas < 2:
        return []
    return [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {POD_LABEL: svc.name}}}]


def pod_disruption_budget(cfg: StackConfig, svc: ServiceConfig) -> dict | None:
    """policy/v1 PodDisruptionBudget for prod services that keep ≥ 2 replicas: a node drain (upgrade, the
    cluster-autoscaler's scale-down) evicts one pod at a time. It does not limit the autoscaler's own scale-down,
    which deletes pods rather than evicting them."""
    if cfg.environment != "prod" or svc.min_replicas < 2:
        return None
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": f"{svc.name}-predictor-pdb", "namespace": svc.namespace,
                         "labels": labels(svc.name, "disruption-budget")},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {POD_LABEL: svc.name}}}}


def server_container(cfg: StackConfig, svc: ServiceConfig) -> dict:
    """`spec.predictor.model` on KServe's serving runtime, or the whole `kserve-container` of a custom
    predictor (stackconfig/runtimes.py says which and why)."""
    resources = {"requests": {"cpu": svc.cpu, "memory": svc.memory, GPU_RESOURCE: str(svc.gpus)},
                 "limits": {"cpu": svc.cpu, "memory": svc.memory, GPU_RESOURCE: str(svc.gpus)}}
    custom = is_custom_predictor(svc.engine, svc.image)
    container: dict = {"name": "kserve-container", "image": server_image(svc.engine, svc.image)} if custom else {
        "modelFormat": {"name": svc.model_format}, "storageUri": cache_uri(cfg, svc)}
    if svc.engine == "triton" and not custom:
        # KServe reads a missing protocolVersion as v1 (predictor_model.go GetProtocol) and defaults it to v2 only
        # for format `triton` (inference_service_defaults.go); kserve-tritonserver serves [v2, grpc-v2] only, so an
        # onnx or tensorrt model without it finds no runtime (NoSupportingRuntime) and is never Ready.
        container["protocolVersion"] = TRITON_PROTOCOL
    # STORAGE_URI: KServe's storage initializer fills /mnt/models and rewrites the variable to that path.
    env = ([{"name": "STORAGE_URI", "value": cache_uri(cfg, svc)}] if custom else []) + engine_env(svc)
    args = engine_args(svc)
    if not custom:   # KServe's Go-template step on the model container: a literal `{{` stays one (kserve_template.py)
        args = [escape_placeholders(a) for a in args]
        env = [dict(e, value=escape_placeholders(e["value"])) for e in env]
    container.update({
        "args": args,
        "env": env,
        "resources": resources,
        "startupProbe": _probe(svc.startup_probe),
        "readinessProbe": _probe(svc.readiness_probe),
        "livenessProbe": _probe(svc.liveness_probe),
        "securityContext": restricted_security_context(non_root=runs_as_non_root(svc)),
    })
    if custom:  # the runtime's port and shared memory (NCCL across GPUs), as kserve-huggingfaceserver mounts it
        container["ports"] = [{"containerPort": SERVER_PORT, "protocol": "TCP"}]
        container["volumeMounts"] = [{"name": "devshm", "mountPath": "/dev/shm"}]
    elif svc.image:  # the runtime's own server in another version replaces its default image
        container["image"] = svc.image
    return container


# How a Standard-mode Deployment rolls: a new pod first, an old one only once it is Ready (maxUnavailable 0). Without
# it KServe sets RollingUpdate maxUnavailable 25 %, maxSurge 25 % (reconcilers/deployment/deployment_reconciler.go
# setDefaultDeploymentSpec; 0.16 may take a cluster-wide rollout from inferenceservice-config instead), and the
# Deployment controller deletes floor(25 %) of the serving pods at once, for a whole GPU cold start. KServe copies
# spec.predictor.deploymentStrategy onto the Deployment as it is (createRawDeployment) and refuses it only in Knative
# mode (inference_service_validation.go validateScalingKPACompExtension). The surge is what the rollout-capacity
# check counts beside the running pods (gate/rollout_capacity.py).
DEPLOYMENT_STRATEGY = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}}


def inference_service(cfg: StackConfig, svc: ServiceConfig) -> dict:
    # The replica bounds sit on the predictor in Knative mode only (KServe writes min-scale and max-scale from them,
    # SetAutoScalingAnnotations). In Standard mode our HPA or ScaledObject carries them: with autoscalerClass
    # external KServe reads neither (deployment_reconciler.go applies minReplicas for class none only), and on the
    # InferenceService a change of them moved its generation alone, never the Deployment's, whose
    # status.observedGeneration KServe reports as the InferenceService's: Pulumi's await then waited out
    # pulumi.com/timeoutSeconds and failed an update KServe had applied (`_annotations`).
    predictor: dict = {"minReplicas": svc.min_replicas, "maxReplicas": svc.max_replicas} \
        if svc.deployment_mode == "Knative" else {}
    predictor.update({
        "tolerations": [t.to_manifest() for t in svc.tolerations],
        "nodeSelector": dict(svc.node_selector),
        # A model server never calls the Kubernetes API: no token in the pod (Knative admits only `false`).
        "automountServiceAccountToken": False,
    })
    if is_custom_predictor(svc.engine, svc.image):
        predictor["containers"] = [server_container(cfg, svc)]
        predictor["volumes"] = [{"name": "devshm", "emptyDir": {"medium": "Memory"}}]
    else:
        predictor["model"] = server_container(cfg, svc)
    account = predictor_account(cfg, svc)
    if account:  # where KServe's storage initializer finds the model's credential (manifests/model_download.py)
        predictor["serviceAccountName"] = account
    spread = topology_spread(cfg, svc)
    if spread:  # Knative needs kubernetes.podspec-topologyspreadconstraints; the stack enables what it uses
        predictor["topologySpreadConstraints"] = spread
    if svc.deployment_mode == "Standard":
        predictor["deploymentStrategy"] = copy.deepcopy(DEPLOYMENT_STRATEGY)
    if svc.deployment_mode == "Knative":
        predictor["scaleMetric"] = svc.scale_metric
        if svc.scale_target is not None:
            predictor["scaleTarget"] = svc.scale_target
        # Always rendered, unset as the simulation reads an unset one: KServe hands both to the Knative Service
        # as they are (ksvc_reconciler.go: ContainerConcurrency, TimeoutSeconds, and ResponseStartTimeoutSeconds =
        # timeout), and Knative's RevisionSpec.SetDefaults fills a nil one (a timeout also when 0) from the
        # cluster's config-defaults (container-concurrency, revision-timeout-seconds), which the stack does not
        # manage: a cluster that changed them would otherwise run other limits than the gate simulated.
        predictor["containerConcurrency"] = (DEFAULT_CONTAINER_CONCURRENCY if svc.container_concurrency is None
                                             else svc.container_concurrency)
        predictor["timeout"] = revision_timeout_s(svc)
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": svc.name, "namespace": svc.namespace,
                     "labels": labels(svc.name, "inference-service"), "annotations": _annotations(cfg, svc)},
        "spec": {"predictor": predictor},
    }


def uses_keda(svc: ServiceConfig) -> bool:
    return svc.deployment_mode == "Standard" and svc.scale_metric == "concurrency" and svc.hpa_scaler == "keda"


def autoscaler(svc: ServiceConfig) -> dict | None:
    """What scales a Standard-mode predictor (KServe's class `external`): a KEDA ScaledObject or our HPA;
    None in Knative mode."""
    return scaled_object(svc) if uses_keda(svc) else horizontal_pod_autoscaler(svc)


def horizontal_pod_autoscaler(svc: ServiceConfig) -> dict | None:
    """autoscaling/v2 HPA on KServe's raw Deployment `<name>-predictor`; None in Knative mode or with KEDA."""
    if svc.deployment_mode != "Standard" or uses_keda(svc):
        return None
    if svc.scale_metric in ("cpu", "memory"):
        # KServe's default CPU target is 80 % (pkg/constants: DefaultCPUUtilization).
        target = svc.scale_target or 80
        metric = {"type": "Resource", "resource": {"name": svc.scale_metric,
                  "target": {"type": "Utilization", "averageUtilization": target}}}
    else:  # in-flight requests per pod through a custom-metrics adapter (e.g. prometheus-adapter)
        metric = {"type": "Pods", "pods": {"metric": {"name": svc.hpa_pods_metric},
                  "target": {"type": "AverageValue", "averageValue": str(svc.scale_target or 1)}}}
    spec: dict = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": f"{svc.name}-predictor"},
        "minReplicas": max(1, svc.min_replicas),
        "maxReplicas": svc.max_replicas,
        "metrics": [metric],
    }
    if svc.hpa_behavior:
        spec["behavior"] = svc.hpa_behavior
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": hpa_name(svc), "namespace": svc.namespace,
                     "labels": labels(svc.name, "autoscaler")},
        "spec": spec,
    }
