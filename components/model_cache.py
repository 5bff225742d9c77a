"""ModelCache: the protected PVC of model artifacts and the DaemonSet that pre-fetches them on GPU nodes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from components.kubernetes_object import child_options, kubernetes_object
from manifests.model_cache import model_cache_daemonset, model_cache_pvc
from stackconfig.schema import StackConfig


@dataclass
class ModelCacheArgs:
    pvc: dict  # manifests.model_cache.model_cache_pvc()
    daemonset: dict  # manifests.model_cache.model_cache_daemonset()

    @classmethod
    def from_config(cls, cfg: StackConfig) -> "ModelCacheArgs":
        return cls(model_cache_pvc(cfg), model_cache_daemonset(cfg))


class ModelCache(pulumi.ComponentResource):
    def __init__(self, name: str, args: ModelCacheArgs, opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:infra:ModelCache", name, {}, opts)
        # Hundreds of GB of downloaded weights: never deleted by a `pulumi destroy` or a replace, so `enabled: false`
        # and a new pvcName, storageClass or namespace stop at `pulumi preview` until the claim is unprotected in
        # the state (docs/deploying.md §9; the program cannot see the old config to warn). The size is the
        # claim's at creation: the API server refuses a smaller request on a bound claim, and a larger one unless the
        # StorageClass has allowVolumeExpansion (PersistentVolumeClaimResize admission); EFS ignores it. So a later
        # `modelCache.sizeGib` edit would only fail `pulumi up`: grow a claim by hand (README, `modelCache`).
        self.pvc = kubernetes_object(f"{name}-pvc", args.pvc, child_options(
            self, opts, protect=True, retain_on_delete=True, ignore_changes=["spec.resources.requests.storage"]))
        self.prefetch = kubernetes_object(f"{name}-prefetch", args.daemonset, child_options(
            self, opts, depends_on=[self.pvc]))
        self.register_outputs({"pvc": self.pvc.metadata["name"]})
