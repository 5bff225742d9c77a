"""The stack's keys of Knative's ConfigMaps, server-side applied: config-features (KnativeFeatures) and
config-autoscaler (KnativeAutoscaler)."""

from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s


class KnativeFeatures(pulumi.ComponentResource):
    """A `ConfigMapPatch` of manifests.knative.config_features_patch(): owns only the keys it sets."""

    def __init__(self, name: str, patch: dict, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:serving:KnativeFeatures", name, {}, opts)
        self.patch = _config_map_patch(self, name, patch, opts)
        self.register_outputs({"features": sorted(patch["data"])})


class KnativeAutoscaler(pulumi.ComponentResource):
    """A `ConfigMapPatch` of manifests.knative.config_autoscaler_patch(): the config-autoscaler keys the stack
    gives, as given, and only those keys."""

    def __init__(self, name: str, patch: dict, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:serving:KnativeAutoscaler", name, {}, opts)
        self.patch = _config_map_patch(self, name, patch, opts)
        self.register_outputs({"settings": dict(patch["data"])})


def _config_map_patch(parent: pulumi.Resource, name: str, patch: dict,
                      opts: Optional[pulumi.ResourceOptions]) -> k8s.core.v1.ConfigMapPatch:
    return k8s.core.v1.ConfigMapPatch(f"{name}-patch", metadata=patch["metadata"], data=patch["data"],
                                      opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(parent=parent)))
