"""TunedInferenceService: a KServe InferenceService with safe settings, plus its HPA or KEDA ScaledObject in Standard
mode."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi

from components.kubernetes_object import child_options, kubernetes_object
from manifests.inference_service import autoscaler, inference_service, pod_disruption_budget
from stackconfig.schema import ServiceConfig, StackConfig
from validation.annotations import MODE_ANNOTATION


@dataclass
class TunedInferenceServiceArgs:
    inference_service: dict  # manifests.inference_service.inference_service()
    hpa: Optional[dict]  # manifests.inference_service.autoscaler(): HPA or KEDA ScaledObject, Standard mode only
    pdb: Optional[dict] = None  # manifests.inference_service.pod_disruption_budget(), prod multi-replica only

    @classmethod
    def from_config(cls, cfg: StackConfig, svc: ServiceConfig) -> "TunedInferenceServiceArgs":
        return cls(inference_service(cfg, svc), autoscaler(svc), pod_disruption_budget(cfg, svc))


class TunedInferenceService(pulumi.ComponentResource):
    def __init__(self, name: str, args: TunedInferenceServiceArgs,
                 opts: Optional[pulumi.ResourceOptions] = None) -> None:
        super().__init__("kserve-preflight:serving:TunedInferenceService", name, {}, opts)
        # KServe rejects a deploymentMode change ("update rejected: deploymentMode cannot be changed",
        # inference_service_validation.go validateDeploymentMode): replace the resource instead, deleting first
        # because the name is fixed.
        self.inference_service = kubernetes_object(f"{name}-isvc", args.inference_service, child_options(
            self, opts, replace_on_changes=[f'metadata.annotations["{MODE_ANNOTATION}"]'], delete_before_replace=True))
        suffix = "scaledobject" if args.hpa and args.hpa["kind"] == "ScaledObject" else "hpa"
        self.hpa = kubernetes_object(f"{name}-{suffix}", args.hpa, child_options(
            self, opts, depends_on=[self.inference_service])) if args.hpa else None
        self.pdb = kubernetes_object(f"{name}-pdb", args.pdb, child_options(self, opts)) if args.pdb else None
        self.register_outputs({"name": self.inference_service.metadata["name"]})
