"""Hand a manifest dict to Pulumi as the matching pulumi-kubernetes resource, unchanged."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

_TYPED = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2.HorizontalPodAutoscaler,
}


def kubernetes_object(name: str, manifest: dict, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """A typed resource for core kinds, a CustomResource for CRDs (InferenceService)."""
    typed = _TYPED.get((manifest["apiVersion"], manifest["kind"]))
    if typed is not None:
        return typed(name, metadata=manifest["metadata"], spec=manifest.get("spec"), opts=opts)
    return k8s.apiextensions.CustomResource(name, api_version=manifest["apiVersion"], kind=manifest["kind"],
                                            metadata=manifest["metadata"], spec=manifest["spec"], opts=opts)
