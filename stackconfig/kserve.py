"""`kserve`: where the cluster's KServe keeps its `inferenceservice-config`, and whether the stack manages it.

KServe copies every InferenceService annotation that is not in its `serviceAnnotationDisallowedList` onto the
predictor's Knative revision template (or raw Deployment pod template), so an annotation that only the gate, the
policies or Pulumi read would roll the GPU pods whenever its value changes. By default the stack patches the
`inferenceService` key of `<namespace>/inferenceservice-config` so the list holds those annotations
(manifests/kserve_config.py). `manageConfig: false` leaves the ConfigMap alone; then
`serviceAnnotationDisallowedList` must say what the cluster's list already holds beyond KServe's built-in
entries, and the program refuses the stack when an annotation it writes is missing there. With `manageConfig`,
entries given there are written too.
"""

from __future__ import annotations

from dataclasses import dataclass

from stackconfig.formats import DNS_LABEL, QUALIFIED_NAME, check_format, check_k8s_name
from validation.fields import Section


@dataclass(frozen=True)
class KServeConfig:
    manage_config: bool = True
    namespace: str = "kserve"  # the controller's POD_NAMESPACE (pkg/constants: KServeNamespace)
    service_annotation_disallowed_list: tuple[str, ...] = ()  # the cluster's entries beyond KServe's built-ins


def parse_kserve(sec: Section) -> KServeConfig:
    out = KServeConfig(manage_config=sec.bool("manageConfig", True), namespace=sec.str("namespace", "kserve"),
                       service_annotation_disallowed_list=tuple(sec.str_list("serviceAnnotationDisallowedList", [])))
    check_k8s_name(sec, "namespace", out.namespace, DNS_LABEL, "namespace name")
    for i, key in enumerate(out.service_annotation_disallowed_list):
        check_format(sec, f"serviceAnnotationDisallowedList[{i}]", key, QUALIFIED_NAME, "expected an annotation "
                     "key: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'")
    sec.done()
    return out
