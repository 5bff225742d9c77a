"""The Knative settings the stack owns: the features its own services need (the patch of
`knative-serving/config-features` that enables them) and the stack's `knative.autoscaler` values (the patch of
`knative-serving/config-autoscaler`).

Knative refuses pod-spec fields whose feature flag is off (validation/admission.py); the GPU predictors need
`tolerations` (the node group's taint) and `nodeSelector` (its label). Rather than a list kept by hand, the flags
are derived from the rendered InferenceServices: whatever a Knative-mode predictor uses is exactly what is
enabled. The patch is a server-side-apply `ConfigMapPatch` (pulumi-kubernetes ≥ 4) that owns only these keys,
so the rest of the ConfigMap stays with whoever installed Knative; `pulumi destroy` removes only our keys.
config-autoscaler gets every key `knative.autoscaler` gives, as given, even one at Knative's default (the
simulation assumes that value, which the cluster's admin may have changed); Knative's config webhook checks the
ConfigMap as the stack config was checked at load.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from simulation.autoscaler.cluster_config import ClusterAutoscaler
from validation.knative_podspec import knative_pod_refusals
from validation.cluster_admission import KNATIVE_FEATURE_DEFAULTS, ClusterAdmission
from validation.annotations import MODE_ANNOTATION
from validation.deployment_mode import STANDARD_MODES

KNATIVE_NAMESPACE = "knative-serving"
CONFIG_FEATURES = "config-features"
CONFIG_AUTOSCALER = "config-autoscaler"


def required_features(manifests: Iterable[Mapping]) -> list[str]:
    """The flags the Knative-mode predictors need, found by asking each flag whether enabling it admits more."""
    isvcs = [m for m in manifests if m.get("kind") == "InferenceService"
             and (m["metadata"].get("annotations") or {}).get(MODE_ANNOTATION) not in STANDARD_MODES]
    if not isvcs:
        return []
    baseline = ClusterAdmission()

    def refused(cluster: ClusterAdmission) -> int:
        return sum(1 for m in isvcs for _ in knative_pod_refusals("", m["spec"]["predictor"], cluster))

    before = refused(baseline)
    return sorted(flag for flag, default in KNATIVE_FEATURE_DEFAULTS.items()
                  if default != "enabled" and refused(baseline.with_features([flag])) < before)


def config_features_patch(flags: Iterable[str]) -> dict | None:
    """The ConfigMap keys to own in knative-serving/config-features (None when nothing needs enabling)."""
    return _patch(CONFIG_FEATURES, {flag: "enabled" for flag in sorted(flags)})


def config_autoscaler_patch(autoscaler: ClusterAutoscaler) -> dict | None:
    """The ConfigMap keys to own in knative-serving/config-autoscaler: every key the stack gives, as given
    (None when there are none)."""
    return _patch(CONFIG_AUTOSCALER, dict(sorted(autoscaler.data().items())))


def _patch(name: str, data: dict[str, str]) -> dict | None:
    if not data:
        return None
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": KNATIVE_NAMESPACE,
                     # The Knative operator or installer owns the ConfigMap; take over just these keys.
                     "annotations": {"pulumi.com/patchForce": "true"}},
        "data": data,
    }
