"""Autoscaling settings a service may tune: Knative's annotations (KPA) and `hpa.behavior` (Standard mode)."""

from __future__ import annotations

from dataclasses import replace

from simulation.autoscaler.cluster_config import DEFAULT as CLUSTER_DEFAULT, ClusterAutoscaler
from simulation.autoscaler.config import (CLUSTER_ONLY, PREFIX, PROGRESS_DEADLINE_KEY, from_annotations,
                                          progress_deadline_s)
from simulation.autoscaler.hpa import DEFAULT_DOWN, DEFAULT_UP, rules_from_manifest
from simulation.autoscaler.keda import DEFAULT_SCRAPE_INTERVAL_S, scrape_interval
from simulation.autoscaler.promql import IN_FLIGHT_GAUGES
from stackconfig.formats import go_pattern, matches
from validation.annotations import INITIAL_SCALE
from validation.errors import Problem
from validation.fields import Section
from validation.kubernetes import validation_errors

# Knative annotations a service may set (pkg/apis/autoscaling/register.go). min/max-scale, target, metric and
# class come from KServe's own fields, so setting them here would put one knob in two places.
KNATIVE_ANNOTATIONS = frozenset({
    "autoscaling.knative.dev/scale-down-delay",
    "autoscaling.knative.dev/window",
    "autoscaling.knative.dev/target-burst-capacity",
    "autoscaling.knative.dev/initial-scale",
    "autoscaling.knative.dev/activation-scale",
    "autoscaling.knative.dev/panic-window-percentage",
    "autoscaling.knative.dev/panic-threshold-percentage",
    "autoscaling.knative.dev/target-utilization-percentage",
    "autoscaling.knative.dev/scale-to-zero-pod-retention-period",
    "autoscaling.knative.dev/metric-aggregation-algorithm",
    # How long a new revision may take to become Ready before Knative fails the rollout (default 600 s,
    # config/core/configmaps/deployment.yaml progress-deadline); GPU cold starts may need more.
    "serving.knative.dev/progress-deadline",
})

# Standard-mode concurrency scaling (`hpa.scaler`): KEDA on the runtime's own in-flight metric (manifests/keda.py),
# or our HPA on a Pods metric that a custom-metrics adapter (prometheus-adapter) must serve.
SCALERS = ("keda", "hpa")
KEDA_ENGINES = (*IN_FLIGHT_GAUGES, "triton")  # the runtimes that export an in-flight metric (manifests/keda.py)
# prometheus-operator's governing Service for a Prometheus in namespace `monitoring` (kube-prometheus-stack).
DEFAULT_PROMETHEUS_ADDRESS = "http://prometheus-operated.monitoring.svc:9090"
_URL = go_pattern(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/(?u:\S)*)?$")


def parse_annotations(sec: Section, container_concurrency: int | None,
                      cluster: ClusterAutoscaler = CLUSTER_DEFAULT, min_replicas: int | None = None,
                      max_replicas: int | None = None) -> dict[str, str]:
    """The service's Knative annotations: only the keys listed above; every value's range is checked by the
    simulation's own reader (`simulation.autoscaler.config.from_annotations`, Knative's register.go bounds, on
    the stack's `knative.autoscaler`), the one place both the config and the gate read them, so a bad value
    stops `pulumi up` with the gate off too. A cluster-wide key written as an annotation is refused there with
    where it belongs. The reader gets the min-scale and max-scale KServe writes on the revision from
    `minReplicas` and `maxReplicas` (kserve `pkg/controller/v1alpha1/utils/utils.go: SetAutoScalingAnnotations`),
    so `activation-scale` is held to Knative's [max(2, minReplicas), maxReplicas] (knative
    `pkg/apis/autoscaling/annotation_validation.go: validateMinMaxScale`) whether or not the gate simulates the
    service. maxReplicas against `max-scale-limit` is `stackconfig/knative.py: max_scale_problems`'s, not
    repeated here."""
    annotations = sec.str_map("annotations", {})
    cluster_only = {PREFIX + k for k in CLUSTER_ONLY}
    for key, value in annotations.items():
        if key not in KNATIVE_ANNOTATIONS and key not in cluster_only:
            sec.problem(f"annotations[{key}]", value, "expected one of the Knative autoscaling annotations "
                        + ", ".join(sorted(KNATIVE_ANNOTATIONS)) + " (min/max scale, target and metric are "
                        "the service's minReplicas/maxReplicas/scaleTarget/scaleMetric)")
    known = {k: v for k, v in annotations.items()
             if (k in KNATIVE_ANNOTATIONS or k in cluster_only) and k.startswith("autoscaling.")}
    from_annotations(known, container_concurrency or 0, sec.problems, sec.key_path("annotations"),
                     cluster=replace(cluster, max_scale_limit=0), min_scale=min_replicas, max_scale=max_replicas,
                     check_bounds=False, cluster_where="the stack's knative.autoscaler",
                     refuse_zero_initial_scale=False)
    deadline = annotations.get(PROGRESS_DEADLINE_KEY)
    if deadline is not None:
        _, allowed = progress_deadline_s(deadline)
        if allowed:
            sec.problem(f"annotations[{PROGRESS_DEADLINE_KEY}]", deadline, allowed)
    return annotations


def initial_scale_problems(cluster: ClusterAutoscaler, services: list, problems: list[Problem]) -> None:
    """A Knative service's initial scale (its `initial-scale` annotation, else `knative.autoscaler`'s) must not
    exceed its maxReplicas. Knative admits it (annotation_validation.go validateInitialScale checks only >= 0) and
    runs that many pods regardless of max-scale: the first Deployment gets replicas = initial-scale
    (pkg/reconciler/revision/resources/deploy.go MakeDeployment), and the KPA raises min-scale to it until the
    scale target is initialized (kpa/scaler.go scale, kpa.go activeThreshold). The node group may not hold the
    extra GPU pods, and the revision turns Ready only once they are all up."""
    for i, svc in enumerate(services):
        if svc.deployment_mode != "Knative":
            continue
        initial = from_annotations(svc.annotations, svc.container_concurrency or 0, [], cluster=cluster,
                                   refuse_zero_initial_scale=False).initial_scale
        if not svc.max_replicas or initial <= svc.max_replicas:
            continue
        if INITIAL_SCALE in svc.annotations:
            problems.append(Problem(f"services[{i}].annotations[{INITIAL_SCALE}]", svc.annotations[INITIAL_SCALE],
                                    f"expected at most services[{i}].maxReplicas ({svc.max_replicas}): Knative "
                                    f"starts a new revision of {svc.name} at initial-scale pods, beyond max-scale "
                                    "(deploy.go, kpa/scaler.go), which the node group may not hold and the revision "
                                    "waits for; lower initial-scale or raise maxReplicas"))
        else:
            problems.append(Problem("knative.autoscaler[initial-scale]", initial, f"expected at most "
                                    f"services[{i}].maxReplicas ({svc.max_replicas}) of {svc.name}, which takes the "
                                    "cluster's initial-scale: Knative starts each new revision at initial-scale pods, "
                                    "beyond max-scale (deploy.go, kpa/scaler.go); lower it, give the service an "
                                    f"{INITIAL_SCALE} annotation at most maxReplicas, or raise maxReplicas"))


# KEP-4951 HPAConfigurableTolerance: alpha (off by default) in Kubernetes 1.33 and 1.34, beta and on by default
# from 1.35 (pkg/features/kube_features.go); 1.32's API has no `tolerance` at all.
HPA_TOLERANCE_MINOR = 35


def check_hpa_behavior(hpa: Section, behavior: dict, kubernetes_version: str) -> None:
    """Check `hpa.behavior` now: it goes into the HPA verbatim, and the API server would reject it only after
    `pulumi up` had created the node group and everything before the HPA. The schema (kubernetes-validate) checks
    its shape; the simulation's own reader (`simulation.autoscaler.hpa.rules_from_manifest`) its ranges, as the
    API server's validation does (`periodSeconds` 1–1800, `stabilizationWindowSeconds` 0–3600, `value` > 0,
    `tolerance` a quantity >= 0). A per-direction `tolerance` is simulated as the HPA controller applies it
    (`tolerancesForHpa`), so it is refused where the cluster would not apply it: below Kubernetes 1.35."""
    nulls = list(_null_paths(behavior, "behavior"))
    for path in nulls:  # the HPA schema takes null as absent; KEDA's ScaledObject CRD refuses it (found by the fuzzer)
        hpa.problem(path, None, "expected a value, or leave the key out (a KEDA ScaledObject refuses null)")
    if nulls:
        return
    gated = [k for k in ("scaleUp", "scaleDown") if isinstance(behavior.get(k), dict) and "tolerance" in behavior[k]]
    if gated and int(kubernetes_version.split(".")[1]) < HPA_TOLERANCE_MINOR:
        for key in gated:
            hpa.problem(f"behavior.{key}.tolerance", behavior[key]["tolerance"], (
                f"expected none on Kubernetes {kubernetes_version} (cluster.kubernetesVersion): a per-HPA tolerance "
                "needs the HPAConfigurableTolerance feature gate (KEP-4951), beta and on by default only from "
                "1.35; 1.33 and 1.34 have it alpha and off (EKS turns on no alpha gate) and 1.32 lacks the field, so "
                "the HPA would scale at the cluster-wide 10 %, not at the tolerance the gate simulates. Leave it "
                "out, or upgrade the cluster to 1.35 or later and set its version here"))
        behavior = {k: {f: v for f, v in rules.items() if f != "tolerance"} if k in gated else rules
                    for k, rules in behavior.items()}
    probe = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "x"},
             "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "x"}, "maxReplicas": 1,
                      "behavior": behavior}}
    errors = validation_errors(probe, kubernetes_version)
    for error in errors:
        hpa.problem("behavior", behavior, "expected an autoscaling/v2 HorizontalPodAutoscalerBehavior: "
                    + error.split(": ", 1)[1].replace("spec.behavior", "behavior"))
    if not errors:
        for key, default in (("scaleUp", DEFAULT_UP), ("scaleDown", DEFAULT_DOWN)):
            rules_from_manifest(behavior.get(key), default, hpa.key_path(f"behavior.{key}"), hpa.problems)


def _null_paths(value: object, path: str):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from ([f"{path}.{k}"] if v is None else _null_paths(v, f"{path}.{k}"))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from ([f"{path}[{i}]"] if v is None else _null_paths(v, f"{path}[{i}]"))


def traffic_shape(workload: dict | None) -> str:
    """"spiky" or "steady" from the simulation workload mapping; a trace or no workload counts as spiky.

    Gamma inter-arrivals with CV > 1, steps and spikes are bursty by construction; real traces (the Azure code
    trace has CV 13) are assumed bursty; Poisson, CV ≤ 1 gamma and slow diurnal curves are steady.
    """
    if not isinstance(workload, dict):
        return "spiky"
    kind = workload.get("kind")
    if kind in ("poisson", "diurnal"):
        return "steady"
    if kind == "gamma":
        cv = workload.get("cv", 1.0)
        return "steady" if isinstance(cv, (int, float)) and cv <= 1.0 else "spiky"
    return "spiky"


def check_keda(hpa: Section, mode: str, metric: str, engine: str) -> tuple[str, str, float]:
    """`hpa.scaler`, `hpa.prometheusAddress` and `hpa.scrapeInterval`: KEDA is the default for Standard-mode
    concurrency and scales on the runtime's own in-flight gauge, so it needs a runtime that exports one;
    cpu/memory stay on the HPA. The scrape interval (the simulation's reader checks it) is the one the cluster's
    Prometheus scrapes the runtime at; the ScaledObject carries it for the simulation (manifests/keda.py)."""
    scaler = hpa.choice("scaler", list(SCALERS), "keda")
    address = hpa.str("prometheusAddress", DEFAULT_PROMETHEUS_ADDRESS)
    interval = DEFAULT_SCRAPE_INTERVAL_S
    if hpa.has("scrapeInterval"):
        interval = scrape_interval(hpa.raw("scrapeInterval"), hpa.key_path("scrapeInterval"), hpa.problems)
    if mode != "Standard":
        return scaler, address, interval
    if metric != "concurrency":
        if hpa.has("scaler") and scaler == "keda":
            hpa.problem("scaler", scaler, f"expected hpa for scaleMetric {metric}: the HPA scales on {metric} "
                        "itself, and KEDA here scales on the runtime's in-flight requests (scaleMetric: concurrency)")
        scaler = "hpa"
    elif scaler == "keda" and engine not in KEDA_ENGINES:
        hpa.problem("scaler", scaler, f"expected hpa (with a custom-metrics adapter serving hpa.podsMetric): "
                    f"engine {engine} exports no in-flight request metric for KEDA; KEDA needs one of "
                    + ", ".join(KEDA_ENGINES))
    if scaler == "keda" and hpa.has("podsMetric"):
        hpa.problem("podsMetric", hpa.data.get("podsMetric"), "expected none with hpa.scaler keda: KEDA queries "
                    "the runtime's own metric; podsMetric is for hpa.scaler: hpa with a custom-metrics adapter")
    for key in ("prometheusAddress", "scrapeInterval"):
        if scaler == "hpa" and hpa.has(key):
            hpa.problem(key, hpa.data[key], "expected none with hpa.scaler hpa: only KEDA queries Prometheus")
    if scaler == "keda" and not matches(_URL, address):
        hpa.problem("prometheusAddress", address, "expected an http(s) URL of the Prometheus server such as "
                    f"{DEFAULT_PROMETHEUS_ADDRESS!r}")
    return scaler, address, interval
