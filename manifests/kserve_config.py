"""KServe's `inferenceservice-config`: the `inferenceService` key the stack patches so that the annotations only the
gate, the policies and Pulumi read never reach a pod template.

KServe ≥ 0.15 (pkg/apis/serving/v1beta1/configmap.go: NewInferenceServicesConfig) parses that key as JSON and puts
its built-in entries (pkg/constants: ServiceAnnotationDisallowedList, RevisionTemplateLabelDisallowedList) before
the `serviceAnnotationDisallowedList` / `serviceLabelDisallowedList` it finds. components/predictor.go copies every
InferenceService annotation not in that list (an exact match, utils.Includes) onto the predictor's metadata, which
reconcilers/knative/ksvc_reconciler.go puts on the revision template and the raw reconciler on the Deployment's
pod template. Knative makes a new Revision for any template change (new GPU pods, cold starts); a Deployment rolls.

The key is one JSON value and a patch replaces all of it, so the patch carries KServe's shipped value (the
`resource` defaults of config/configmap/inferenceservice.yaml, the same in v0.15.0 … v0.20.0) and KServe's built-in
entries (KServe adds them again; listing them keeps the patch right for a version that did not) before ours.
The controller reads the ConfigMap at every reconcile (controller.go: GetInferenceServiceConfigMap, a direct API
read): no restart is needed, but nothing watches it, so an existing InferenceService meets a new list at its next
reconcile.
"""

from __future__ import annotations

import json
from typing import Iterable, Mapping

from manifests.inference_service import STACK_ONLY_ANNOTATIONS, STACK_ONLY_PREFIXES
from stackconfig.schema import StackConfig
from validation.errors import Problem

CONFIG_MAP = "inferenceservice-config"     # pkg/constants: InferenceServiceConfigMapName
CONFIG_KEY = "inferenceService"            # configmap.go: InferenceServiceConfigKeyName
# pkg/constants ServiceAnnotationDisallowedList (v0.15; `modelFormat` since 2026-01, kserve#4953) and
# RevisionTemplateLabelDisallowedList.
KSERVE_ANNOTATION_DISALLOWED = ("autoscaling.knative.dev/min-scale", "autoscaling.knative.dev/max-scale",
                                "internal.serving.kserve.io/storage-initializer-sourceuri",
                                "kubectl.kubernetes.io/last-applied-configuration", "modelFormat")
KSERVE_LABEL_DISALLOWED = ("networking.knative.dev/visibility",)
# config/configmap/inferenceservice.yaml data.inferenceService (and the Helm chart's `inferenceservice.resources`).
KSERVE_RESOURCE_DEFAULTS = {"cpuLimit": "1", "memoryLimit": "2Gi", "cpuRequest": "1", "memoryRequest": "2Gi"}


def _unique(keys: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def disallowed_annotations(cfg: StackConfig) -> list[str]:
    """The cluster's `serviceAnnotationDisallowedList` as KServe applies it: its built-in entries, the stack's own
    (when it manages the ConfigMap) and those `kserve.serviceAnnotationDisallowedList` gives."""
    ours = STACK_ONLY_ANNOTATIONS if cfg.kserve.manage_config else ()
    return _unique([*KSERVE_ANNOTATION_DISALLOWED, *ours, *cfg.kserve.service_annotation_disallowed_list])


def template_annotations(isvc: Mapping, disallowed: Iterable[str]) -> dict[str, str]:
    """The InferenceService annotations KServe copies onto the predictor's pod template (predictor.go: utils.Filter
    with the disallowed list)."""
    skip = set(disallowed)
    return {k: v for k, v in (isvc["metadata"].get("annotations") or {}).items() if k not in skip}


def inferenceservice_config_patch(cfg: StackConfig) -> dict | None:
    """The `inferenceService` key the stack owns in `<kserve.namespace>/inferenceservice-config` (None with
    `kserve.manageConfig: false`)."""
    if not cfg.kserve.manage_config:
        return None
    value = {"resource": dict(KSERVE_RESOURCE_DEFAULTS),
             "serviceAnnotationDisallowedList": disallowed_annotations(cfg),
             "serviceLabelDisallowedList": list(KSERVE_LABEL_DISALLOWED)}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": CONFIG_MAP, "namespace": cfg.kserve.namespace,
                     # KServe's installer owns the ConfigMap; take over just this key.
                     "annotations": {"pulumi.com/patchForce": "true"}},
        "data": {CONFIG_KEY: json.dumps(value, indent=2)},
    }


def kserve_config_problems(cfg: StackConfig, manifests: Iterable[Mapping]) -> list[Problem]:
    """With `kserve.manageConfig: false`: the stack-only annotations the rendered InferenceServices carry that the
    cluster's list (as `kserve.serviceAnnotationDisallowedList` declares it) would let through."""
    if cfg.kserve.manage_config:
        return []
    skip = set(disallowed_annotations(cfg))
    missing = _unique(k for m in manifests if m.get("kind") == "InferenceService"
                      for k in m["metadata"].get("annotations") or {}
                      if k.startswith(STACK_ONLY_PREFIXES) and k not in skip)
    if not missing:
        return []
    return [Problem("kserve.serviceAnnotationDisallowedList", list(cfg.kserve.service_annotation_disallowed_list),
                    "expected every annotation the stack writes for the gate, the policies and Pulumi, which no pod "
                    "reads; missing " + ", ".join(missing) + ". Add them to serviceAnnotationDisallowedList in the "
                    f"{CONFIG_KEY} key of {cfg.kserve.namespace}/{CONFIG_MAP} and here, or set kserve.manageConfig: "
                    "true; otherwise KServe copies them onto the pod template and changing an SLO or a cold-start "
                    "prior rolls every GPU pod of the service")]
