"""KnativeFeatures: the keys of knative-serving/config-features the stack's services need, server-side applied."""

from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s


class KnativeFeatures(pulumi.ComponentResource):
    """A `ConfigMapPatch` of manifests.knative.config_features_patch(): owns only the keys it sets."""

    def __init__(self, name: str, patch: dict, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:serving:KnativeFeatures", name, {}, opts)
        self.patch = k8s.core.v1.ConfigMapPatch(f"{name}-patch", metadata=patch["metadata"], data=patch["data"],
                                                opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                                                    parent=self)))
        self.register_outputs({"features": sorted(patch["data"])})
