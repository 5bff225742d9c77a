"""Hand a manifest dict to Pulumi as the matching pulumi-kubernetes resource, unchanged."""

from __future__ import annotations

import re

import pulumi
import pulumi_kubernetes as k8s

_TYPED = {
    ("v1", "Namespace"): k8s.core.v1.Namespace,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("apps/v1", "DaemonSet"): k8s.apps.v1.DaemonSet,
    ("autoscaling/v2", "HorizontalPodAutoscaler"): k8s.autoscaling.v2.HorizontalPodAutoscaler,
    ("policy/v1", "PodDisruptionBudget"): k8s.policy.v1.PodDisruptionBudget,
}


def child_options(parent: pulumi.Resource, opts: pulumi.ResourceOptions | None, *,
                  depends_on: list[pulumi.Resource] | None = None, **kwargs) -> pulumi.ResourceOptions:
    """Options for a component's child that keep the component's `depends_on`.

    The engine does not pass a component's dependencies on to its children (pulumi/pulumi#8721: children of a
    component that depends on a bucket are created concurrently with it), so a PVC in a component that depends
    on the Namespace would race the Namespace on the first `pulumi up` unless it names the dependency itself.
    """
    inherited = opts.depends_on if opts is not None and opts.depends_on is not None else []
    inherited = list(inherited) if isinstance(inherited, (list, tuple)) else [inherited]
    return pulumi.ResourceOptions(parent=parent, depends_on=inherited + list(depends_on or []), **kwargs)


def kubernetes_object(name: str, manifest: dict, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """A typed resource for core kinds, its top-level fields as keyword arguments (`spec`, or a ServiceAccount's
    `secrets`), a CustomResource for CRDs (InferenceService)."""
    typed = _TYPED.get((manifest["apiVersion"], manifest["kind"]))
    if typed is not None:
        fields = {re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower(): value for key, value in manifest.items()
                  if key not in ("apiVersion", "kind")}
        return typed(name, **fields, opts=opts)
    return k8s.apiextensions.CustomResource(name, api_version=manifest["apiVersion"], kind=manifest["kind"],
                                            metadata=manifest["metadata"], spec=manifest["spec"], opts=opts)
