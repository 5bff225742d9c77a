"""Every Kubernetes object the stack deploys, built as plain dicts by pure functions from the typed config."""

from __future__ import annotations

from manifests.common import namespace
from manifests.device_plugin import device_plugin_daemonset
from manifests.inference_service import autoscaler, inference_service, pod_disruption_budget
from manifests.knative import config_autoscaler_patch, config_features_patch, required_features
from manifests.kserve_config import inferenceservice_config_patch
from manifests.model_cache import model_cache_daemonset, model_cache_pvc
from manifests.model_download import model_download_account
from stackconfig.schema import StackConfig


def service_manifests(cfg: StackConfig) -> list[dict]:
    """Every service's InferenceService (and HPA or ScaledObject, PodDisruptionBudget), in config order."""
    out = []
    for svc in cfg.services:
        out.append(inference_service(cfg, svc))
        out += [m for m in (autoscaler(svc), pod_disruption_budget(cfg, svc)) if m]
    return out


def knative_features(cfg: StackConfig) -> dict | None:
    """The config-features patch the stack applies: the flags its Knative-mode services need (None when the
    user manages config-features, `knative.manageFeatures: false`)."""
    if not cfg.knative.manage_features:
        return None
    return config_features_patch(required_features(service_manifests(cfg)))


def knative_autoscaler(cfg: StackConfig) -> dict | None:
    """The config-autoscaler patch the stack applies: its `knative.autoscaler` values that differ from Knative's
    defaults (None when there are none, or the user manages config-autoscaler, `knative.manageAutoscaler: false`)."""
    if not cfg.knative.manage_autoscaler:
        return None
    return config_autoscaler_patch(cfg.knative.autoscaler)


def render_stack(cfg: StackConfig) -> list[dict]:
    """All Kubernetes manifests of a stack, in apply order."""
    out = [namespace(cfg.cluster.namespace)]
    if cfg.deploys_device_plugin:
        out.append(device_plugin_daemonset(cfg))
    if cfg.model_cache.enabled:
        out += [model_cache_pvc(cfg), model_cache_daemonset(cfg)]
    account = model_download_account(cfg)
    if account:
        out.append(account)
    out += [m for m in (knative_features(cfg), knative_autoscaler(cfg), inferenceservice_config_patch(cfg)) if m]
    return out + service_manifests(cfg)
