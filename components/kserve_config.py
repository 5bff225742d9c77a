"""The stack's key of KServe's inferenceservice-config, server-side applied (KServeConfig)."""

from __future__ import annotations

from typing import Optional

import pulumi

from components.knative_features import _config_map_patch


class KServeConfig(pulumi.ComponentResource):
    """A `ConfigMapPatch` of manifests.kserve_config.inferenceservice_config_patch(): owns the `inferenceService`
    key only. Kept on delete: KServe applies no disallowed list at all, not even its built-in one, to a ConfigMap
    without that key (configmap.go: NewInferenceServicesConfig), so removing it would change every other
    InferenceService's pods in the cluster."""

    def __init__(self, name: str, patch: dict, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:serving:KServeConfig", name, {}, opts)
        keep = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(retain_on_delete=True))
        self.patch = _config_map_patch(self, name, patch, keep)
        self.register_outputs({"keys": sorted(patch["data"])})
