"""Read what the simulator needs from an InferenceService manifest (KServe v1beta1), applying KServe defaults.

This is the only place the manifest is interpreted. Sources (reference knative-kserve.md §4):
- fields: kserve `pkg/apis/serving/v1beta1/component.go: ComponentExtensionSpec`;
- deployment mode: annotation `serving.kserve.io/deploymentMode` (`Knative`, legacy `Serverless`; `Standard`,
  legacy `RawDeployment`; `constants.go: ParseDeploymentMode`), default `Serverless` as shipped in
  `config/configmap/inferenceservice.yaml`;
- Knative mode: `reconcilers/knative/ksvc_reconciler.go: createKnativeService` and
  `pkg/controller/v1alpha1/utils/utils.go: SetAutoScalingAnnotations` — `minReplicas` nil → `min-scale "1"`
  (`DefaultMinReplicas`, so no scale-to-zero unless `minReplicas: 0`); the min-scale annotation is always
  written from `minReplicas` (a user's min-scale annotation is overwritten), max-scale only when
  `maxReplicas` ≠ 0 (else the annotation, else unlimited),
  `scaleTarget` → `target`, `scaleMetric` → `metric`, `containerConcurrency` → revision CC (nil → 0),
  `timeout` → `timeoutSeconds` (nil → Knative's 300 s, `pkg/apis/config/defaults.go`). Nil is what Knative's
  `RevisionSpec.SetDefaults` fills from the cluster's config-defaults (`container-concurrency`,
  `revision-timeout-seconds`), shipped as these two: the stack renders both, so a cluster's own cannot apply;
- Standard mode: `reconcilers/hpa/hpa_reconciler.go: createHPA` — HPA min = max(1, minReplicas),
  max = max(maxReplicas, min), on CPU (`autoscaler/kserve_hpa.py`: KServe builds no other metric, so
  `scaleMetric: concurrency` scales on CPU 80 %, and its webhook refuses it with `autoscalerClass: hpa`); CC and
  timeout unused (no queue-proxy). With class `external` (or `none`) an accompanying autoscaling/v2
  HorizontalPodAutoscaler or KEDA ScaledObject (scenario `hpa:`; the latter read by `autoscaler/keda.py`) scales
  the Deployment, and its replica bounds are the ones read (KServe ignores the predictor's then; the stack writes
  them on the autoscaler only); with class `hpa` only one equal to KServe's own (an export of it) is accepted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from validation.annotations import (CLASS_ANNOTATION, ENGINE_ANNOTATION, MODE_ANNOTATION, MODEL_ANNOTATION,
                                    TRITON_CAP_ANNOTATIONS)
from validation.deployment_mode import simulated_mode
from validation.errors import InputError, Problem
from validation.fields import Section
from validation.defaults import KNATIVE_CC_MAX, KNATIVE_DEFAULT_TIMEOUT_S, KSERVE_DEFAULT_MIN_REPLICAS
from validation.kubernetes import GPU_RESOURCE, KNATIVE_MAX_TIMEOUT_S
from validation.kserve_template import container_as_run
from simulation.autoscaler.cluster_config import DEFAULT as CLUSTER_DEFAULT, ClusterAutoscaler
from simulation.autoscaler.config import PREFIX, AutoscalerConfig, HPA_CLASS, KPA_CLASS, from_annotations
from simulation.autoscaler.hpa import MAX_REPLICAS, HpaSpec, behavior_rules
from simulation.autoscaler.keda import from_scaled_object
from simulation.autoscaler.kserve_hpa import DEFAULT_CPU_UTILIZATION, kserve_hpa_target
from simulation.engine_flags import engine_settings
from simulation.probe_routes import manifest_probe_problems

DEFAULT_TIMEOUT_S = float(KNATIVE_DEFAULT_TIMEOUT_S)   # knative pkg/apis/config/defaults.go (validation/defaults.py)
DEFAULT_CONTAINER_CONCURRENCY = 0  # knative config-defaults container-concurrency as shipped (0: unlimited)


@dataclass(frozen=True)
class Probe:
    initial_delay_s: float = 0.0
    period_s: float = 10.0
    failure_threshold: int = 3

    def kill_after_s(self, container_start: float, worker_start: float) -> float:
        """Seconds after `container_start` at which the kubelet kills a container that never passes.

        kubelet `pkg/kubelet/prober/worker.go`: a pod's probe worker ticks every `periodSeconds` from its
        creation (when the kubelet admits the pod, `worker_start`), not from the container's start; a tick
        before `initialDelaySeconds` of container run time does not probe (`doProbe`), and the
        `failureThreshold`-th failed probe kills it. So the kill lands between d + (f − 1)·p and d + f·p after
        the start, depending on the ticks' phase; the lower end is `validation.kubernetes.startup_budget`. (The
        random initial sleep applies only right after a kubelet restart; not modelled.)"""
        p = self.period_s
        first = container_start + self.initial_delay_s
        ticks = max(0, math.ceil((first - worker_start) / p - 1e-9)) if p > 0 else 0
        return worker_start + (ticks + self.failure_threshold - 1) * p - container_start


@dataclass(frozen=True)
class ServingSpec:
    name: str = "isvc"
    mode: str = "Knative"                  # Knative | Standard
    container_concurrency: int = 0
    timeout_s: float = DEFAULT_TIMEOUT_S
    kpa: AutoscalerConfig = field(default_factory=AutoscalerConfig)
    hpa: HpaSpec | None = None             # Standard mode; None = no autoscaler (class none)
    gpus: int = 0
    image: str = ""
    startup_probe: Probe | None = None
    readiness_period_s: float = 0.0        # 0 = Knative aggressive probing (Knative default TCP probe)
    readiness_initial_delay_s: float = 0.0
    env: dict = field(default_factory=dict)
    args: tuple = ()
    container: dict = field(default_factory=dict)   # the raw predictor container, for model-server plug-ins
    container_path: str = ""               # where it is in the manifest (for problems with its args and env)

    @classmethod
    def from_manifest(cls, manifest: Any, hpa_manifest: Any = None, path: str = "inferenceService",
                      problems: list[Problem] | None = None,
                      cluster: ClusterAutoscaler = CLUSTER_DEFAULT) -> "ServingSpec":
        """Build from the manifest on a cluster with that config-autoscaler; mistakes go to `problems`, else raise."""
        own = problems is None
        problems = [] if own else problems
        spec = _from_manifest(manifest, hpa_manifest, path, problems, cluster)
        if own and problems:
            raise InputError(problems, "InferenceService")
        return spec


def _from_manifest(manifest: Any, hpa_manifest: Any, path: str, problems: list[Problem],
                   cluster: ClusterAutoscaler) -> ServingSpec:
    top = Section(manifest, path, problems)
    kind = top.raw("kind")
    if kind is not None and kind != "InferenceService":
        top.problem("kind", kind, "expected 'InferenceService'")
    meta = top.section("metadata")
    name = meta.str("name", "isvc")
    annotations = meta.raw("annotations") or {}
    if not isinstance(annotations, dict):
        meta.problem("annotations", annotations, "expected a mapping of strings")
        annotations = {}
    mode_raw = annotations.get(MODE_ANNOTATION, "Serverless")
    mode = simulated_mode(mode_raw)
    if mode is None:
        problems.append(Problem(f"{path}.metadata.annotations[{MODE_ANNOTATION}]", mode_raw,
                                "expected 'Knative' (or 'Serverless') or 'Standard' (or 'RawDeployment'); "
                                "ModelMesh is not simulated"))
        mode = "Knative"
    spec_sec = top.section("spec", required=True)
    pred = spec_sec.section("predictor", required=True)
    min_rep = pred.int("minReplicas", None, min=0, max=MAX_REPLICAS)   # every pod is simulated: bounded
    max_rep = pred.int("maxReplicas", 0, min=0, max=MAX_REPLICAS)
    cc = pred.int("containerConcurrency", DEFAULT_CONTAINER_CONCURRENCY, min=0, max=KNATIVE_CC_MAX)
    timeout = pred.float("timeout", None, min=1, max=KNATIVE_MAX_TIMEOUT_S)
    scale_metric = pred.choice("scaleMetric", ["concurrency", "rps", "cpu", "memory"], None)
    scale_target = pred.float("scaleTarget", None, min=0.01)

    # The container: spec.predictor.model (a serving runtime) or spec.predictor.containers[0].
    container_raw: Any = None
    if pred.has("containers"):
        conts = pred.raw("containers")
        if not isinstance(conts, list) or not conts or not isinstance(conts[0], dict):
            pred.problem("containers", conts, "expected a non-empty list of containers")
        else:
            container_raw = conts[0]
        cpath = f"{pred.path}.containers[0]"
    else:
        for k, v in pred.data.items():
            if isinstance(v, dict) and ("modelFormat" in v or "storageUri" in v or "runtime" in v) or k == "model":
                container_raw = v
                cpath = f"{pred.path}.{k}"
                break
        else:
            cpath = f"{pred.path}.model"
    if container_raw is not None and not pred.has("containers"):
        # KServe's placeholder step (Go text/template) runs on a spec.predictor.model container before the pod
        # exists: read its args and env as the server receives them, e.g. an escaped `{{` as `{{`.
        namespace = meta.raw("namespace")
        container_raw = container_as_run(container_raw, name, namespace if isinstance(namespace, str) else "default",
                                         cpath, problems)
    cont = Section(container_raw, cpath, problems)
    image = cont.raw("image") or ""
    limits = cont.section("resources").section("limits")
    gpus_raw = limits.raw(GPU_RESOURCE, 0)
    try:
        gpus_f = float(gpus_raw)
        if not gpus_f.is_integer() or gpus_f < 0:
            raise ValueError
        gpus = int(gpus_f)
    except (TypeError, ValueError):
        limits.problem(GPU_RESOURCE, gpus_raw, "expected a whole number of GPUs")
        gpus = 0
    # Each httpGet probe's path against the routes the container's server answers (probe_routes.py): a 404 is
    # never Ready, and the simulation makes a pod Ready only once its model is loaded, whatever the path.
    for key, value, why in manifest_probe_problems(container_raw, name, annotations.get(ENGINE_ANNOTATION)):
        problems.append(Problem(f"{cpath}.{key}", value, why))
    startup = None
    if cont.has("startupProbe"):
        sp = cont.section("startupProbe")
        startup = Probe(sp.float("initialDelaySeconds", 0.0, min=0), sp.float("periodSeconds", 10.0, min=1),
                        sp.int("failureThreshold", 3, min=1))
    rp = cont.section("readinessProbe")
    has_rp = cont.has("readinessProbe")
    r_period = rp.float("periodSeconds", 10.0 if mode == "Standard" or has_rp else 0.0, min=0)
    r_delay = rp.float("initialDelaySeconds", 0.0, min=0)
    env_raw = cont.raw("env") or []
    env = {}
    if isinstance(env_raw, list):
        for e in env_raw:
            if isinstance(e, dict) and "name" in e:
                env[str(e["name"])] = e.get("value")
    args = cont.raw("args") or []
    args = tuple(str(a) for a in args) if isinstance(args, list) else ()

    kpa = AutoscalerConfig(container_concurrency=cc)
    hpa: HpaSpec | None = None
    if mode == "Knative":   # KServe's fields over the ISVC's own annotations (SetAutoScalingAnnotations)
        kpa = from_annotations(annotations, cc, problems, f"{path}.metadata.annotations",
                               min_scale=KSERVE_DEFAULT_MIN_REPLICAS if min_rep is None else min_rep,
                               max_scale=max_rep or None, target=scale_target, metric=scale_metric,
                               autoscaler_class=KPA_CLASS, check_bounds=False, cluster=cluster)
        for key, value in (("initial-scale", kpa.initial_scale), ("max-scale", kpa.max_scale)):
            if value > MAX_REPLICAS:   # from the annotation, else the cluster's config-autoscaler default
                own = PREFIX + key in annotations
                where = f"{path}.metadata.annotations[{PREFIX}{key}]" if own else f"config_autoscaler[{key}]"
                problems.append(Problem(where, value, f"expected at most {MAX_REPLICAS:,} replicas: the simulator "
                                        "runs every pod" + ("" if own else f" (the cluster's {key}: set in the "
                                        f"stack's knative.autoscaler[{key}] or a scenario's config_autoscaler)")))
        if kpa.max_scale and kpa.min_scale > kpa.max_scale:
            problems.append(Problem(f"{pred.path}.minReplicas", kpa.min_scale,
                                    f"must not exceed the maximum ({kpa.max_scale}, from maxReplicas or max-scale)"))
        # KServe (SetAutoScalingAnnotations) gives an ISVC without a class annotation the KPA class, so the
        # cluster's pod-autoscaler-class never reaches its revision: only the ISVC's own annotation is refused here.
        if kpa.autoscaler_class == HPA_CLASS or kpa.metric in ("cpu", "memory"):
            problems.append(Problem(f"{path}.metadata.annotations[autoscaling.knative.dev/class]",
                                    kpa.autoscaler_class,
                                    "only the KPA is simulated in Knative mode (metric concurrency or rps); "
                                    "use deploymentMode Standard for an HPA"))
        if kpa.metric == "rps" and kpa.target is not None and kpa.target < 1:
            problems.append(Problem(f"{pred.path}.scaleTarget", kpa.target, "rps target must be >= 1"))
    else:
        cls_name = annotations.get(CLASS_ANNOTATION, "hpa")
        # `external`: KServe creates no HPA and another autoscaler scales the Deployment; simulated when that
        # HorizontalPodAutoscaler or KEDA ScaledObject comes with the scenario (the stack renders its own).
        if cls_name not in ("hpa", "none") and not (cls_name == "external" and hpa_manifest is not None):
            problems.append(Problem(f"{path}.metadata.annotations[{CLASS_ANNOTATION}]", cls_name,
                                    "expected 'hpa' or 'none', or 'external' with its HorizontalPodAutoscaler "
                                    "or KEDA ScaledObject under `hpa:` (KServe's own class keda is not "
                                    "simulated)"))
        lo = max(1, min_rep if min_rep is not None else 1)
        hi = max(max_rep, lo)
        target = DEFAULT_CPU_UTILIZATION   # class external: KServe builds nothing, the `hpa:` manifest decides
        if cls_name == "hpa":
            target = kserve_hpa_target(pred.data, pred.path, annotations.get(CLASS_ANNOTATION) == "hpa", problems)
        hpa = HpaSpec(min_replicas=lo, max_replicas=hi, metric="cpu", target=target,
                      cpu_request_cores=_cpu_cores(container_raw))
        if hpa_manifest is not None:
            own = _hpa_override(hpa, hpa_manifest, "hpa", problems)
            if cls_name == "hpa" and own != hpa:
                problems.append(Problem("hpa", (hpa_manifest.get("kind") if isinstance(hpa_manifest, dict) else None)
                                        or "HorizontalPodAutoscaler", _owned_by_kserve(hpa)))
            hpa = own
        elif cls_name == "none":   # KServe creates no HPA (hpa_reconciler.go shouldCreateHPA)
            hpa = None
        if hpa is not None:   # the bounds that act: the accompanying autoscaler's (the stack writes none on the ISVC)
            lo, hi = hpa.min_replicas, hpa.max_replicas
        kpa = AutoscalerConfig(container_concurrency=0, min_scale=lo, max_scale=hi, initial_scale=lo)
    return ServingSpec(name=name, mode=mode, container_concurrency=cc if mode == "Knative" else 0,
                       timeout_s=timeout if timeout is not None else DEFAULT_TIMEOUT_S, kpa=kpa, hpa=hpa,
                       gpus=gpus, image=str(image), startup_probe=startup, readiness_period_s=r_period,
                       readiness_initial_delay_s=r_delay, env=env, args=args,
                       container=dict(container_raw) if isinstance(container_raw, dict) else {},
                       container_path=cpath)


def _owned_by_kserve(built: HpaSpec) -> str:
    """Why an accompanying autoscaler other than the HPA KServe builds does not act under class `hpa`."""
    return (f"expected {CLASS_ANNOTATION}: external on the InferenceService to bring this autoscaler, or the HPA "
            f"KServe builds (CPU {built.target:g} %, {built.min_replicas}-{built.max_replicas} replicas, default "
            "behavior): with class hpa (the default) KServe resets its HPA <name>-predictor to that "
            "(hpa_reconciler.go semanticHPAEquals, then Update), a second HPA on the Deployment leaves both idle "
            "(AmbiguousSelector), and KEDA's webhook refuses a ScaledObject there ('already managed by the hpa')")


def _cpu_cores(container: Any) -> float:
    """The container's CPU request in cores (0 when absent or unreadable): the HPA's utilisation denominator."""
    requests = ((container or {}).get("resources") or {}).get("requests") or {} if isinstance(container, dict) else {}
    text = str(requests.get("cpu", "")).strip()
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return 0.0


def _hpa_override(base: HpaSpec, manifest: Any, path: str, problems: list[Problem]) -> HpaSpec:
    """Apply an autoscaling/v2 HorizontalPodAutoscaler: min/max replicas, the first metric, behavior."""
    top = Section(manifest, path, problems)
    if top.raw("kind") == "ScaledObject":
        return from_scaled_object(base, top, problems)
    if top.raw("kind") not in (None, "HorizontalPodAutoscaler"):
        top.problem("kind", top.data.get("kind"), "expected 'HorizontalPodAutoscaler' or 'ScaledObject'")
    spec = top.section("spec")
    lo = spec.int("minReplicas", base.min_replicas, min=1, max=MAX_REPLICAS)
    hi = spec.int("maxReplicas", base.max_replicas, min=1, max=MAX_REPLICAS)
    metric, target = "cpu", DEFAULT_CPU_UTILIZATION   # no metrics: the API server's default (v2 defaults.go)
    metrics = spec.raw("metrics")
    if isinstance(metrics, list) and metrics:
        m = metrics[0] if isinstance(metrics[0], dict) else {}
        mp = f"{spec.path}.metrics[0]"
        if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu":
            t = ((m.get("resource") or {}).get("target") or {}).get("averageUtilization")
            if not isinstance(t, (int, float)) or isinstance(t, bool) or t <= 0:
                problems.append(Problem(f"{mp}.resource.target.averageUtilization", t, "expected a percentage > 0"))
            else:
                metric, target = "cpu", float(t)
        elif m.get("type") == "Pods":
            t = ((m.get("pods") or {}).get("target") or {}).get("averageValue")
            try:
                tv = float(t)
                if not tv > 0:
                    raise ValueError
                metric, target = "concurrency", tv
            except (TypeError, ValueError):
                problems.append(Problem(f"{mp}.pods.target.averageValue", t,
                                        "expected a number > 0 (read as in-flight requests per pod)"))
        else:
            problems.append(Problem(mp, m, "simulated metrics: Resource cpu averageUtilization, or a Pods metric "
                                           "(read as in-flight requests per pod)"))
    up, down = behavior_rules(spec.raw("behavior"), f"{spec.path}.behavior", problems)
    return replace(base, min_replicas=lo, max_replicas=max(hi, lo), metric=metric, target=target,
                   scale_up=up, scale_down=down)


# ---------------------------------------------------------------------------------------------------
# Model-server settings the manifest already states
# ---------------------------------------------------------------------------------------------------
# preflight.kserve.io/engine → simulated server kind. TGI batches like vLLM V1 behind its own router (429
# above --max-concurrent-requests, 422 for its token caps): kind `tgi` (simulation/gpu/tgi.py), its flags
# mapped onto the same keys.
ENGINE_KINDS = {"vllm": "vllm", "tgi": "tgi", "naive": "naive", "triton": "triton"}
# The runtime's flags and environment → server keys: simulation/engine_flags.py, shared with the stack's load-time
# checks (stackconfig/runtimes.py), so the gate simulates the value the stack checked.
# Triton reads its caps from the model's config.pbtxt, not from args: the stack declares them as annotations
# (validation/annotations.py TRITON_CAP_ANNOTATIONS, which manifests/inference_service.py writes), read here.
_ANNOTATED = {"triton": {key: name for name, key in TRITON_CAP_ANNOTATIONS.items()}}


def _number(text: Any) -> int | float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return int(value) if value.is_integer() else value


def server_from_manifest(manifest: Any, serving: ServingSpec) -> dict:
    """`server:` keys read from the manifest: the engine and model annotations, the caps the runtime's flags and
    environment set (`engine_flags.engine_settings`: a TGI flag over its variable, `VLLM_USE_V1=0` → scheduler v0;
    Triton: the config.pbtxt caps the stack declares as annotations), and tensor parallelism from the GPU limit
    alone (a `--tensor-parallel-size` is checked at load, never read here). A scenario's own `server:` keys
    override these (a what-if); a scenario that names another server kind gets none of them."""
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    annotations = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(annotations, dict):  # a malformed manifest is reported by the schema check
        return {}
    engine = annotations.get(ENGINE_ANNOTATION)
    kind = ENGINE_KINDS.get(engine) if isinstance(engine, str) else None
    if kind is None:
        return {}
    out: dict[str, Any] = {"kind": kind}
    if isinstance(annotations.get(MODEL_ANNOTATION), str) and annotations[MODEL_ANNOTATION]:
        out["model"] = annotations[MODEL_ANNOTATION]
    if kind != "triton" and serving.gpus > 1:   # never a flag: KServe and TGI run one worker per GPU of the pod
        out["tensor_parallel_size"] = serving.gpus
    out.update(engine_settings(kind, serving.image, serving.args, serving.env))
    for name, key in _ANNOTATED.get(kind, {}).items():
        if _number(annotations.get(name)) is not None:
            out[key] = _number(annotations[name])
    return out
