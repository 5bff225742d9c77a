"""What the cluster's admission webhooks would refuse, checked offline on the rendered objects.

Schema validation (validation/kubernetes.py) says a manifest is well-formed; the webhooks then apply rules that
depend on the cluster's configuration. This module applies the ones that bite a GPU InferenceService, each with
the upstream function it follows (knative/serving and kserve/kserve, checked 2026-08 `main`):

Knative Serving webhook — KServe copies a Knative-mode predictor's pod spec into the Knative Service
(kserve `reconcilers/knative/ksvc_reconciler.go`), so Knative's pod-spec rules apply to it (kserve/kserve#2554):
- `pkg/apis/serving/fieldmask.go: PodSpecMask`: pod fields behind `config-features` flags, off by default
  (affinity, nodeSelector, tolerations, topology spread, priorityClassName, …); `automountServiceAccountToken`
  only `false`; restartPolicy, nodeName, terminationGracePeriodSeconds … never.
- `pkg/apis/serving/k8s_validation.go: validateInitContainers` ("pod spec support for init-containers is off"),
  `validatePersistentVolumeClaims` ("Persistent volume claim support is disabled", "… write support is
  disabled"), `validateVolume` (emptyDir, hostPath, csi, ephemeral, image volumes behind their flags),
  `validateEnvValueFrom` (fieldRef behind `kubernetes.podspec-fieldref`), `validateEnvVar` (`reservedEnvVars`:
  PORT, K_SERVICE, K_CONFIGURATION, K_REVISION are the revision's own).
- `fieldmask.go: PodSecurityContextMask` (pod-level securityContext behind `kubernetes.podspec-securitycontext`;
  only a RuntimeDefault or Unconfined seccompProfile with `secure-pod-defaults` Enabled or, from Knative 1.20,
  AllowRootBounded), `SecurityContextMask` (no privileged, seLinuxOptions, procMount), `CapabilitiesMask`
  (capabilities.add behind `kubernetes.containerspec-addcapabilities`; just NET_BIND_SERVICE with
  `secure-pod-defaults` Enabled or AllowRootBounded), `ContainerMask` (no lifecycle, stdin, tty …).
  `VolumeSourceMask` has no ephemeral volumes before Knative 1.23 (`ClusterAdmission.knative_version`).
- `pkg/apis/serving/v1/revision_defaults.go: defaultSecurityContext` with `secure-pod-defaults` Enabled, then the
  kubelet (`pkg/kubelet/kuberuntime/security_context_others.go: verifyRunAsNonRoot`): `run_as_root_refusals`.
KServe webhook — `pkg/apis/serving/v1beta1/inference_service_validation.go`:
- `validateInferenceServiceName` (IsvcNameFmt), `validateInferenceServiceAutoscaler` (AutoscalerAllowedClassList),
  `validateAutoScalingCompExtension` → `validateScalingHPACompExtension` (class hpa: cpu/memory only,
  AutoscalerAllowedHPAMetricsList; the target rule `metric == MetricCPU && target < 1 || target > 100` mirrors
  KServe's Go precedence, && before ||, even though it looks like a bug upstream: a cpu target below 1 and ANY
  metric's target above 100 are refused, memory's too, although memory's target is in MiB; then a memory target
  below 1), `validateScalingKedaCompExtension` (no scaleMetric; metric sources with a query and a value),
  `validateScalingKPACompExtension` (concurrency/rps; rps target ≥ 1; no deploymentStrategy), and on update
  `validateDeploymentMode` (validation/deployment_mode.py).
- `pkg/validation/env_policy.go` (KServe ≥ 0.18, `validateBlockedEnvVars`): no container sets `PYTHONPATH`.
- `pkg/controller/v1alpha1/utils/utils.go: ValidateInitialScaleAnnotation`: `initial-scale: 0` without the
  autoscaler's `allow-zero-initial-scale` is dropped silently — reported here because the intent is lost.
KServe controller — `components/predictor.go: reconcileModel`: a `spec.predictor.model` without `runtime` runs on
the highest-priority auto-selected runtime that serves its format at its protocol (`predictor_model.go:
GetSupportingRuntimes`; a missing `protocolVersion` is v1, `GetProtocol`, except format `triton`, which the
defaulting webhook sets to v2, `inference_service_defaults.go`); none → `NoSupportingRuntime`, never Ready.
Checked against KServe's default ClusterServingRuntimes (`config/runtimes/*.yaml`), not a cluster's own.
Knative's autoscaling annotations on the revision — `pkg/apis/autoscaling/annotation_validation.go:
validateMinMaxScale`: `activation-scale` must parse as an int32, be ≥ min-scale ("min-scale=%d is greater than
activation-scale=%d"), ≤ a non-zero max-scale ("max-scale=%d is less than activation-scale=%d") and > 1. KServe
writes min-scale from `minReplicas` (1 when unset) and max-scale from a non-zero `maxReplicas` over the service's
own annotations (`pkg/controller/v1alpha1/utils/utils.go: SetAutoScalingAnnotations`), so the bounds are
[max(2, minReplicas), maxReplicas] (`activation_scale_refusals`).
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Iterator, Mapping

from validation.cluster_admission import KNATIVE_FEATURE_SINCE, ClusterAdmission, Refusal, release
from validation.deployment_mode import (MODE_ANNOTATION, STANDARD_MODES, deployment_mode_update_refusals,
                                        mode_name_refusals)


# PodSpecMask: pod-spec field → the flag that admits it.
POD_FEATURES = {
    "affinity": "kubernetes.podspec-affinity",
    "topologySpreadConstraints": "kubernetes.podspec-topologyspreadconstraints",
    "hostAliases": "kubernetes.podspec-hostaliases",
    "nodeSelector": "kubernetes.podspec-nodeselector",
    "runtimeClassName": "kubernetes.podspec-runtimeclassname",
    "tolerations": "kubernetes.podspec-tolerations",
    "shareProcessNamespace": "kubernetes.podspec-shareprocessnamespace",
    "priorityClassName": "kubernetes.podspec-priorityclassname",
    "schedulerName": "kubernetes.podspec-schedulername",
    "initContainers": "kubernetes.podspec-init-containers",
    "dnsPolicy": "kubernetes.podspec-dnspolicy",
    "dnsConfig": "kubernetes.podspec-dnsconfig",
    "hostIPC": "kubernetes.podspec-hostipc",
    "hostPID": "kubernetes.podspec-hostpid",
    "hostNetwork": "kubernetes.podspec-hostnetwork",
}
POD_NEVER = ("restartPolicy", "terminationGracePeriodSeconds", "activeDeadlineSeconds", "nodeName", "hostname",
             "subdomain", "readinessGates", "ephemeralContainers", "overhead", "preemptionPolicy", "os")
# validateVolume / VolumeSourceMask: volume source → flag (secret, configMap, projected are always admitted).
VOLUME_FEATURES = {"emptyDir": "kubernetes.podspec-volumes-emptydir",
                   "persistentVolumeClaim": "kubernetes.podspec-persistent-volume-claim",
                   "hostPath": "kubernetes.podspec-volumes-hostpath", "csi": "kubernetes.podspec-volumes-csi",
                   "ephemeral": "kubernetes.podspec-volumes-ephemeral", "image": "kubernetes.podspec-volumes-image"}
VOLUME_ALWAYS = ("name", "secret", "configMap", "projected")
# PodSecurityContextMask: the seccompProfile types secure-pod-defaults lets a pod-level securityContext carry.
SECURE_DEFAULT_SECCOMP = ("RuntimeDefault", "Unconfined")
# ContainerMask's allowed fields, plus the fields of KServe's ModelSpec that KServe consumes itself.
CONTAINER_ALLOWED = {"name", "args", "command", "env", "workingDir", "envFrom", "image", "imagePullPolicy",
                     "livenessProbe", "ports", "readinessProbe", "resources", "securityContext", "startupProbe",
                     "terminationMessagePath", "terminationMessagePolicy", "volumeMounts"}
KSERVE_MODEL_FIELDS = {"modelFormat", "storageUri", "runtime", "protocolVersion", "storage"}
# Predictor fields that are KServe's own (ComponentExtensionSpec, PredictorSpec), not pod-spec fields.
PREDICTOR_OWN = {"minReplicas", "maxReplicas", "scaleMetric", "scaleMetricType", "scaleTarget", "autoScaling",
                 "containerConcurrency", "timeout", "canaryTrafficPercent", "logger", "batcher", "labels",
                 "annotations", "deploymentStrategy", "workerSpec", "model", "containers", "name"}

# KServe v0.15.2 config/runtimes/*.yaml, the single-node ClusterServingRuntimes: name → (the model formats it
# auto-selects, the protocols it serves). Unchanged through v0.19 for the formats the stack renders.
DEFAULT_RUNTIMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "kserve-huggingfaceserver": (("huggingface",), ("v2", "v1")),
    "kserve-tritonserver": (("tensorrt", "tensorflow", "onnx", "triton"), ("v2", "grpc-v2")),
    "kserve-tensorflow-serving": (("tensorflow",), ("v1", "grpc-v1")),
    "kserve-torchserve": (("pytorch",), ("v1", "v2", "grpc-v2")),
    "kserve-sklearnserver": (("sklearn",), ("v1", "v2")),
    "kserve-xgbserver": (("xgboost",), ("v1", "v2")),
    "kserve-lgbserver": (("lightgbm",), ("v1", "v2")),
    "kserve-mlserver": (("sklearn", "xgboost", "lightgbm", "mlflow"), ("v2",)),
    "kserve-paddleserver": (("paddle",), ("v1", "v2")),
    "kserve-pmmlserver": (("pmml",), ("v1", "v2")),
}
# knative/serving pkg/apis/serving/k8s_validation.go reservedEnvVars ("%q is a reserved environment variable").
KNATIVE_RESERVED_ENV = frozenset({"PORT", "K_SERVICE", "K_CONFIGURATION", "K_REVISION"})
# kserve pkg/validation/env_policy.go DefaultBlockedEnvVars: name → the first KServe release refusing it (#5340).
KSERVE_BLOCKED_ENV: dict[str, tuple[int, int]] = {"PYTHONPATH": (0, 18)}


def kserve_blocked_env(version: tuple[int, int]) -> set[str]:
    return {name for name, since in KSERVE_BLOCKED_ENV.items() if version >= since}


ISVC_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")  # kserve IsvcNameFmt
AUTOSCALER_CLASSES = ("hpa", "external", "keda", "none")  # kserve constants.AutoscalerAllowedClassList
HPA_METRICS = ("cpu", "memory")  # constants.AutoscalerAllowedHPAMetricsList
KPA_METRICS = ("concurrency", "rps")  # constants.AutoscalerAllowedKPAMetricsList
CLASS_ANNOTATION = "serving.kserve.io/autoscalerClass"
INITIAL_SCALE = "autoscaling.knative.dev/initial-scale"
ACTIVATION_SCALE = "autoscaling.knative.dev/activation-scale"
# knative register.go MaxScaleAnnotation (kmap.KeyPriority: the kebab key wins).
MAX_SCALE_KEYS = ("autoscaling.knative.dev/max-scale", "autoscaling.knative.dev/maxScale")
KSERVE_DEFAULT_MIN_REPLICAS = 1  # kserve constants.DefaultMinReplicas
_GO_INT = re.compile(r"^[+-]?[0-9]+$")


def _feature_off(cluster: ClusterAdmission, flag: str) -> str:
    if not cluster.knows(flag):  # no flag to enable on this release (cluster_admission.KNATIVE_FEATURE_SINCE)
        return (f"Knative Serving {release(cluster.knative_version)} never admits it: its config-features has no "
                f"`{flag}` (that key and the field it admits come with Knative "
                f"{release(KNATIVE_FEATURE_SINCE[flag])}; knative.version says which release the cluster runs)")
    return (f"Knative refuses it: `{flag}` is {cluster.knative_features.get(flag, 'disabled')!r} in "
            f"knative-serving/config-features; enable it there (or let the stack manage it: knative.features)")


def _containers(pred: Mapping) -> Iterator[tuple[str, Mapping]]:
    if isinstance(pred.get("model"), Mapping):
        yield "spec.predictor.model", pred["model"]
    for i, c in enumerate(pred.get("containers") or []):
        if isinstance(c, Mapping):
            yield f"spec.predictor.containers[{i}]", c


def knative_pod_refusals(obj: str, pred: Mapping, cluster: ClusterAdmission) -> Iterator[Refusal]:
    """Knative's pod-spec rules on a Knative-mode predictor (see the module docstring for the sources)."""
    p = "spec.predictor"
    for key, flag in POD_FEATURES.items():
        if pred.get(key) and not cluster.admits(flag):
            rule = "k8s_validation.go validateInitContainers" if key == "initContainers" else "fieldmask.go PodSpecMask"
            yield Refusal(obj, f"{p}.{key}", rule, _feature_off(cluster, flag))
    for key in POD_NEVER:
        if key in pred:
            yield Refusal(obj, f"{p}.{key}", "fieldmask.go PodSpecMask", "Knative never admits this pod field")
    if pred.get("automountServiceAccountToken") is True:
        yield Refusal(obj, f"{p}.automountServiceAccountToken", "fieldmask.go PodSpecMask",
                      "Knative admits only `false` here; leave it unset for the default")
    sc = pred.get("securityContext")
    if isinstance(sc, Mapping) and sc and not cluster.admits("kubernetes.podspec-securitycontext"):
        # PodSecurityContextMask keeps only a RuntimeDefault or Unconfined seccompProfile when secure-pod-defaults
        # is Enabled or AllowRootBounded (cluster.admits)
        seccomp_only = (set(sc) == {"seccompProfile"} and cluster.admits("secure-pod-defaults")
                        and (sc.get("seccompProfile") or {}).get("type") in SECURE_DEFAULT_SECCOMP)
        if not seccomp_only:
            yield Refusal(obj, f"{p}.securityContext", "fieldmask.go PodSecurityContextMask",
                          _feature_off(cluster, "kubernetes.podspec-securitycontext")
                          + "; or set these fields in the container's securityContext, which Knative admits")
    for i, vol in enumerate(pred.get("volumes") or []):
        yield from _volume_refusals(obj, f"{p}.volumes[{i}]", vol, cluster)
    for path, c in _containers(pred):
        yield from _container_refusals(obj, path, c, cluster)


def _volume_refusals(obj: str, path: str, vol: Mapping, cluster: ClusterAdmission) -> Iterator[Refusal]:
    for key in vol:
        if key in VOLUME_ALWAYS:
            continue
        flag = VOLUME_FEATURES.get(key)
        if flag is None:
            yield Refusal(obj, f"{path}.{key}", "fieldmask.go VolumeSourceMask",
                          "Knative admits only secret, configMap, projected and flag-gated volume sources")
        elif not cluster.admits(flag):
            rule = ("k8s_validation.go validatePersistentVolumeClaims" if key == "persistentVolumeClaim"
                    else "k8s_validation.go validateVolume" if cluster.knows(flag)
                    else "fieldmask.go VolumeSourceMask")  # a source this release's mask does not have
            yield Refusal(obj, f"{path}.{key}", rule, _feature_off(cluster, flag))
        elif key == "persistentVolumeClaim" and not (vol[key] or {}).get("readOnly") \
                and not cluster.admits("kubernetes.podspec-persistent-volume-write"):
            yield Refusal(obj, f"{path}.{key}", "k8s_validation.go validatePersistentVolumeClaims",
                          "a writable PVC: " + _feature_off(cluster, "kubernetes.podspec-persistent-volume-write"))


def _container_refusals(obj: str, path: str, c: Mapping, cluster: ClusterAdmission) -> Iterator[Refusal]:
    for key in sorted(set(c) - CONTAINER_ALLOWED - KSERVE_MODEL_FIELDS):
        yield Refusal(obj, f"{path}.{key}", "fieldmask.go ContainerMask", "Knative never admits this container field")
    for i, env in enumerate(c.get("env") or []):
        if (env or {}).get("name") in KNATIVE_RESERVED_ENV:
            yield Refusal(obj, f"{path}.env[{i}].name", "k8s_validation.go validateEnvVar",
                          f"{env['name']!r} is a reserved environment variable: Knative sets it in the revision")
        source = (env or {}).get("valueFrom") or {}
        for key in ("fieldRef", "resourceFieldRef"):
            if key in source and not cluster.admits("kubernetes.podspec-fieldref"):
                yield Refusal(obj, f"{path}.env[{i}].valueFrom.{key}", "k8s_validation.go validateEnvValueFrom",
                              _feature_off(cluster, "kubernetes.podspec-fieldref"))
    sc = c.get("securityContext") or {}
    if sc.get("privileged") is True:
        yield Refusal(obj, f"{path}.securityContext.privileged", "fieldmask.go SecurityContextMask",
                      "Knative admits only privileged: false")
    for key in ("seLinuxOptions", "procMount", "windowsOptions"):
        if key in sc:
            yield Refusal(obj, f"{path}.securityContext.{key}", "fieldmask.go SecurityContextMask",
                          "Knative never admits this securityContext field")
    add = (sc.get("capabilities") or {}).get("add")
    if add and not cluster.admits("kubernetes.containerspec-addcapabilities") and not (
            list(add) == ["NET_BIND_SERVICE"] and cluster.admits("secure-pod-defaults")):
        yield Refusal(obj, f"{path}.securityContext.capabilities.add", "fieldmask.go CapabilitiesMask",
                      _feature_off(cluster, "kubernetes.containerspec-addcapabilities"))
    for i, mount in enumerate(c.get("volumeMounts") or []):
        if (mount or {}).get("mountPropagation") and not cluster.admits("kubernetes.podspec-volumes-mount-propagation"):
            yield Refusal(obj, f"{path}.volumeMounts[{i}].mountPropagation", "k8s_validation.go validateVolumeMounts",
                          _feature_off(cluster, "kubernetes.podspec-volumes-mount-propagation"))


# Serving images whose user is root: the image repository's last path component (any registry, tag or digest) →
# why. An image not named here (a custom or mirrored-and-renamed one) is accepted: its user is unknown offline.
# KServe's huggingfaceserver runs as USER 1000 (python/huggingface_server.Dockerfile, v0.15–v0.19), so it is not here.
ROOT_IMAGES: dict[str, str] = {
    "text-generation-inference": "TGI's Dockerfile sets no USER, v1.4 through v3.3",
    "vllm-openai": "vLLM's docker/Dockerfile sets no USER in its vllm-openai target",
    "tritonserver": "Triton's build.py creates user triton-server (uid 1000) but sets no USER",
}
# What runs instead, per root image.
NON_ROOT_ALTERNATIVE = {
    "text-generation-inference": "an image that runs as a non-root user, e.g. KServe's huggingfaceserver "
                                 "(runtime.image kserve/huggingfaceserver:v0.15.2-gpu, USER 1000) with engine vllm",
    "vllm-openai": "an image that runs as a non-root user, e.g. KServe's huggingfaceserver "
                   "(runtime.image kserve/huggingfaceserver:v0.15.2-gpu, USER 1000), which serves vLLM",
    "tritonserver": "runAsUser: 1000 (the image's triton-server user), as KServe's kserve-tritonserver runtime sets",
}
KUBELET_NON_ROOT = "kubelet kuberuntime/security_context_others.go verifyRunAsNonRoot"


def _image_repository(image: str) -> str:
    """`ghcr.io/huggingface/text-generation-inference:3.3.4@sha256:…` → `text-generation-inference`."""
    return image.split("@", 1)[0].rsplit("/", 1)[-1].split(":", 1)[0]


def run_as_root_refusals(obj: str, pred: Mapping, cluster: ClusterAdmission, knative_mode: bool) -> Iterator[Refusal]:
    """Containers the kubelet never starts: `runAsNonRoot: true` on a container whose user is root
    (verifyRunAsNonRoot: 'container has runAsNonRoot and image will run as root', or "container's runAsUser breaks
    non-root policy" for runAsUser 0; CreateContainerConfigError on every try, so the revision never becomes Ready
    and `pulumi up` waits out its timeout). `runAsNonRoot` is the container's, else the pod's; in Knative mode,
    when both are unset and `secure-pod-defaults` is Enabled, Knative's revision defaulting sets it to true
    (`ClusterAdmission.sets_run_as_non_root`; AllowRootBounded and Disabled do not, and an explicit `false` is
    kept). The user is `runAsUser` (container, else pod), else the image's own: known only for `ROOT_IMAGES`, so
    an unknown or custom image without runAsUser is accepted. Only `spec.predictor.containers`: a
    `spec.predictor.model` runs on a serving runtime whose securityContext KServe merges in
    (kserve-huggingfaceserver's image is USER 1000, kserve-tritonserver sets runAsUser 1000)."""
    pod_sc = pred.get("securityContext") if isinstance(pred.get("securityContext"), Mapping) else {}
    for i, c in enumerate(pred.get("containers") or []):
        if not isinstance(c, Mapping):
            continue
        sc = c.get("securityContext") if isinstance(c.get("securityContext"), Mapping) else {}
        given = sc.get("runAsNonRoot") if sc.get("runAsNonRoot") is not None else pod_sc.get("runAsNonRoot")
        defaulted = given is None and knative_mode and cluster.sets_run_as_non_root()
        if given is not True and not defaulted:
            continue
        user = sc.get("runAsUser") if sc.get("runAsUser") is not None else pod_sc.get("runAsUser")
        image = str(c.get("image", ""))
        repo = _image_repository(image)
        if user is not None and user != 0 or user is None and repo not in ROOT_IMAGES:
            continue
        path = f"spec.predictor.containers[{i}]"
        if defaulted:
            cause = ("secure-pod-defaults is 'enabled' in knative-serving/config-features "
                     "(knative.features.secure-pod-defaults), so Knative's revision defaulting sets runAsNonRoot: true "
                     "on the container (revision_defaults.go defaultSecurityContext)")
            rule = "revision_defaults.go defaultSecurityContext, " + KUBELET_NON_ROOT
        else:
            cause = "its securityContext sets runAsNonRoot: true"
            rule = KUBELET_NON_ROOT
        if user is not None:  # runAsUser 0
            yield Refusal(obj, f"{path}.securityContext.runAsUser", rule, f"runAsUser 0 is root and {cause}: the "
                          "kubelet refuses to start it (CreateContainerConfigError: \"container's runAsUser breaks "
                          "non-root policy\") and the pod never becomes Ready; set a non-zero runAsUser")
            continue
        fixes = NON_ROOT_ALTERNATIVE[repo]
        if defaulted:
            fixes += ("; or, if the cluster's config-features says otherwise, set knative.features."
                      "secure-pod-defaults to what it has (AllowRootBounded and disabled set no runAsNonRoot)")
        yield Refusal(obj, f"{path}.image", rule, f"{image!r} (the service's runtime.image, or its engine's "
                      f"default) runs as root ({ROOT_IMAGES[repo]}) and {cause}: the kubelet refuses to start it "
                      "(CreateContainerConfigError: 'container has runAsNonRoot and image will run as root'), so the "
                      f"pod never becomes Ready and `pulumi up` waits out its timeout; use {fixes}")


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def kserve_refusals(isvc: Mapping, cluster: ClusterAdmission, previous: Mapping | None = None) -> Iterator[Refusal]:
    """KServe's InferenceService webhook rules (module docstring) and its silent initial-scale drop."""
    meta = isvc.get("metadata") or {}
    name, ann = str(meta.get("name", "")), meta.get("annotations") or {}
    obj = f"InferenceService/{name}"
    pred = ((isvc.get("spec") or {}).get("predictor")) or {}
    rule = "inference_service_validation.go "
    if not ISVC_NAME.fullmatch(name):
        yield Refusal(obj, "metadata.name", rule + "validateInferenceServiceName",
                      f"expected a name matching {ISVC_NAME.pattern}")
    cls = ann.get(CLASS_ANNOTATION)
    if cls is not None and cls not in AUTOSCALER_CLASSES:
        yield Refusal(obj, f"metadata.annotations[{CLASS_ANNOTATION}]", rule + "validateInferenceServiceAutoscaler",
                      f"[{cls}] is not a supported autoscaler class type; expected one of {AUTOSCALER_CLASSES}")
    metric, target = pred.get("scaleMetric"), _number(pred.get("scaleTarget"))
    metrics = ((pred.get("autoScaling") or {}).get("metrics")) or []
    mode = ann.get(MODE_ANNOTATION, "Serverless")
    if mode in STANDARD_MODES and (cls or "hpa") == "hpa":  # the hpa reconciler is the Standard-mode default
        where = rule + "validateScalingHPACompExtension"
        hpa_metric = metric or "cpu"
        if hpa_metric not in HPA_METRICS:
            yield Refusal(obj, "spec.predictor.scaleMetric", where, f"[{metric}] is not a supported metric: "
                          "autoscaler class hpa scales on cpu or memory only (use class keda or external)")
        elif target is not None and (hpa_metric == "cpu" and target < 1 or target > 100):
            # KServe's `metric == MetricCPU && target < 1 || target > 100`, with Go's precedence (&& before ||)
            # kept: a target over 100 is refused for memory too, though memory's is in MiB (upstream's rule as
            # written, perhaps a bug there; the webhook applies it, so this does)
            yield Refusal(obj, "spec.predictor.scaleTarget", where, "the target utilization percentage should be "
                          "a [1-100] integer")
        elif hpa_metric == "memory" and target is not None and target < 1:
            yield Refusal(obj, "spec.predictor.scaleTarget", where, "the target memory should be greater than 1 MiB")
        for i, m in enumerate(metrics):
            if (m or {}).get("type") != "Resource":
                yield Refusal(obj, f"spec.predictor.autoScaling.metrics[{i}].type", where,
                              "valid metric source types are Resource")
    elif mode in STANDARD_MODES and cls == "keda":
        where = rule + "validateScalingKedaCompExtension"
        if metric is not None:
            yield Refusal(obj, "spec.predictor.scaleMetric", where, "ScaleMetric is not supported for KEDA")
        for i, m in enumerate(metrics):
            yield from _keda_metric_refusals(obj, f"spec.predictor.autoScaling.metrics[{i}]", m or {}, where)
    elif mode not in STANDARD_MODES:
        where = rule + "validateScalingKPACompExtension"
        if "deploymentStrategy" in pred:
            yield Refusal(obj, "spec.predictor.deploymentStrategy", where,
                          "customizing deploymentStrategy is only supported for raw deployment mode")
        if (metric or "concurrency") not in KPA_METRICS:
            yield Refusal(obj, "spec.predictor.scaleMetric", where, f"[{metric}] is not a supported metric "
                          f"in Knative mode; expected one of {KPA_METRICS}")
        elif metric == "rps" and target is not None and target < 1:
            yield Refusal(obj, "spec.predictor.scaleTarget", where, "the target for rps should be greater than 1")
        if _number(ann.get(INITIAL_SCALE)) == 0 and not cluster.allow_zero_initial_scale:
            yield Refusal(obj, f"metadata.annotations[{INITIAL_SCALE}]",
                          "controller/v1alpha1/utils/utils.go ValidateInitialScaleAnnotation",
                          "initial-scale 0 needs allow-zero-initial-scale: true in knative-serving/"
                          "config-autoscaler; without it KServe drops the annotation and the revision starts at "
                          "min-scale")
    blocked = kserve_blocked_env(cluster.kserve_version)
    for path, c in _containers(pred):
        for i, env in enumerate(c.get("env") or []):
            name = (env or {}).get("name")
            if name in blocked:
                since = release(KSERVE_BLOCKED_ENV[name])
                yield Refusal(obj, f"{path}.env[{i}].name", rule + "validateBlockedEnvVars",
                              f"setting {name} is not allowed for security reasons (KServe {since} and later)")
    if isinstance(pred.get("model"), Mapping) and not pred["model"].get("runtime"):
        yield from _runtime_refusals(obj, pred["model"])
    yield from mode_name_refusals(obj, ann, cluster)
    if previous is not None:
        yield from deployment_mode_update_refusals(obj, ann, previous, cluster)


def _runtime_refusals(obj: str, model: Mapping) -> Iterator[Refusal]:
    """No default runtime serves the model's format at its protocol (module docstring: reconcileModel)."""
    fmt = str((model.get("modelFormat") or {}).get("name", ""))
    given = model.get("protocolVersion")
    protocol = given or ("v2" if fmt == "triton" else "v1")
    serving = {name: protocols for name, (formats, protocols) in DEFAULT_RUNTIMES.items() if fmt in formats}
    if not fmt or any(protocol in protocols for protocols in serving.values()):
        return
    where = "controller/v1beta1/inferenceservice/components/predictor.go reconcileModel"
    if not serving:
        known = sorted({f for formats, _ in DEFAULT_RUNTIMES.values() for f in formats})
        yield Refusal(obj, "spec.predictor.model.modelFormat.name", where, f"no runtime found to support predictor "
                      f"with model type {fmt}: KServe's runtimes auto-select {', '.join(known)}")
        return
    unset = "" if given else " (unset: KServe reads it as v1, predictor_model.go GetProtocol)"
    offers = "; ".join(f"{name} serves {', '.join(protocols)}" for name, protocols in serving.items())
    yield Refusal(obj, "spec.predictor.model.protocolVersion", where, f"no runtime found to support predictor with "
                  f"model type {fmt} at protocol {protocol}{unset}, so the InferenceService is never Ready "
                  f"(NoSupportingRuntime); {offers}: set protocolVersion to one of those")


def _keda_metric_refusals(obj: str, path: str, m: Mapping, where: str) -> Iterator[Refusal]:
    kind = m.get("type")
    key = {"Resource": "resource", "External": "external", "PodMetric": "podmetric"}.get(kind)
    if key is None:
        yield Refusal(obj, f"{path}.type", where, f"unknown KEDA metric type [{kind}]; valid types are Resource, "
                      "External, PodMetric")
        return
    source = m.get(key)
    if not isinstance(source, Mapping):
        yield Refusal(obj, f"{path}.{key}", where, f"metricSpec.{key} is not set for {kind} metric source type")
        return
    if kind in ("External", "PodMetric"):
        if not (source.get("metric") or {}).get("query"):
            yield Refusal(obj, f"{path}.{key}.metric.query", where, "the query should not be empty")
        if (source.get("target") or {}).get("value") in (None, ""):
            yield Refusal(obj, f"{path}.{key}.target.value", where, "the target threshold value should not be empty")


def admission_refusals(manifests: Iterable[Mapping], cluster: ClusterAdmission | None = None,
                       previous: Mapping[str, Mapping] | None = None) -> list[Refusal]:
    """Every refusal for a stack's rendered objects; `previous` maps InferenceService names to the deployed ones."""
    cluster = cluster or ClusterAdmission()
    out: list[Refusal] = []
    for m in manifests:
        if m.get("kind") != "InferenceService":
            continue
        name = str((m.get("metadata") or {}).get("name", ""))
        ann = (m.get("metadata") or {}).get("annotations") or {}
        pred = ((m.get("spec") or {}).get("predictor")) or {}
        knative_mode = ann.get(MODE_ANNOTATION, "Serverless") not in STANDARD_MODES
        out += kserve_refusals(m, cluster, (previous or {}).get(name))
        if knative_mode:
            out += knative_pod_refusals(f"InferenceService/{name}", pred, cluster)
            out += activation_scale_refusals(f"InferenceService/{name}", ann, pred)
        out += run_as_root_refusals(f"InferenceService/{name}", pred, cluster, knative_mode)
    return out


def _go_int32(value: Any) -> int | None:
    """`strconv.ParseInt(value, 10, 32)`: None where Go returns an error."""
    if not isinstance(value, str) or not _GO_INT.fullmatch(value):
        return None
    n = int(value)
    return n if -2**31 <= n < 2**31 else None


def _scale_annotation(ann: Mapping, keys: tuple[str, ...]) -> int:
    """getIntGE0 on the first key present (0 when absent or unparsable: that error is Knative's own, elsewhere)."""
    for key in keys:
        if key in ann:
            n = _go_int32(ann[key])
            return n if n is not None and n >= 0 else 0
    return 0


def revision_scale_bounds(ann: Mapping, pred: Mapping) -> tuple[int, int]:
    """(min-scale, max-scale) on the Knative revision as KServe writes them (SetAutoScalingAnnotations: minReplicas,
    default 1; a non-zero maxReplicas, else the service's own max-scale annotation, else none = 0)."""
    min_replicas, max_replicas = _number(pred.get("minReplicas")), _number(pred.get("maxReplicas"))
    min_scale = KSERVE_DEFAULT_MIN_REPLICAS if min_replicas is None else int(min_replicas)
    return min_scale, int(max_replicas or 0) or _scale_annotation(ann, MAX_SCALE_KEYS)


def activation_scale_refusals(obj: str, ann: Mapping, pred: Mapping) -> Iterator[Refusal]:
    """annotation_validation.go validateMinMaxScale's activation-scale branch (module docstring), in its order."""
    if ACTIVATION_SCALE not in ann:
        return
    value = ann[ACTIVATION_SCALE]
    path, rule = f"metadata.annotations[{ACTIVATION_SCALE}]", "annotation_validation.go validateMinMaxScale"
    min_scale, max_scale = revision_scale_bounds(ann, pred)
    n = _go_int32(value)
    bounds = (f"; expected an integer from {max(2, min_scale)} to {max_scale}" if max_scale else
              f"; expected an integer >= {max(2, min_scale)}") + " (min-scale is minReplicas, max-scale maxReplicas)"
    if n is None:
        yield Refusal(obj, path, rule, f"invalid value: {value!r}" + bounds)
    elif min_scale > n:
        yield Refusal(obj, path, rule, f"min-scale={min_scale} is greater than activation-scale={n}" + bounds)
    elif max_scale and max_scale < n:
        yield Refusal(obj, path, rule, f"max-scale={max_scale} is less than activation-scale={n}" + bounds)
    elif n < 2:
        yield Refusal(obj, path, rule, f"activation-scale={n} must be greater than 1" + bounds)
