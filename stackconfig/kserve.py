"""`kserve`: where the cluster's KServe keeps its `inferenceservice-config`, and whether the stack manages it.

KServe copies every InferenceService annotation that is not in its `serviceAnnotationDisallowedList` onto the
predictor's Knative revision template (or raw Deployment pod template), so an annotation that only the gate, the
policies or Pulumi read would roll the GPU pods whenever its value changes. By default the stack patches the
`inferenceService` key of `<namespace>/inferenceservice-config` so the list holds those annotations
(manifests/kserve_config.py). `manageConfig: false` leaves the ConfigMap alone; then
`serviceAnnotationDisallowedList` must say what the cluster's list already holds beyond KServe's built-in
entries, and the program refuses the stack when an annotation it writes is missing there. With `manageConfig`,
entries given there are written too. `domainTemplate` and `ingressDomain` say what the ConfigMap's `ingress` key
holds (KServe's defaults when unset): Standard-mode predictor hosts are rendered from them and must be DNS names.
`version` is the cluster's KServe release (default 0.15, the oldest the stack supports), for the rules that
changed between releases (stackconfig/runtimes.py: an image digest, a blocked environment variable; the
deployment-mode names, validation/deployment_mode.py `mode_name`).
"""

from __future__ import annotations

from dataclasses import dataclass

from stackconfig.formats import (DEFAULT_DOMAIN_TEMPLATE, DEFAULT_INGRESS_DOMAIN, DNS_LABEL, DNS_SUBDOMAIN,
                                 QUALIFIED_NAME, check_format, check_k8s_name, go_pattern)
from validation.fields import Section


MIN_KSERVE_VERSION = (0, 15)
_VERSION = go_pattern(r"^v?([0-9]+)\.([0-9]+)(\.[0-9]+)?$")


@dataclass(frozen=True)
class KServeConfig:
    manage_config: bool = True
    namespace: str = "kserve"  # the controller's POD_NAMESPACE (pkg/constants: KServeNamespace)
    service_annotation_disallowed_list: tuple[str, ...] = ()  # the cluster's entries beyond KServe's built-ins
    # The cluster's `ingress` settings in inferenceservice-config: Standard-mode predictor hosts are built from them.
    domain_template: str = DEFAULT_DOMAIN_TEMPLATE
    ingress_domain: str = DEFAULT_INGRESS_DOMAIN
    version: tuple[int, int] = MIN_KSERVE_VERSION  # the cluster's KServe (major, minor)


def parse_kserve(sec: Section) -> KServeConfig:
    out = KServeConfig(manage_config=sec.bool("manageConfig", True), namespace=sec.str("namespace", "kserve"),
                       service_annotation_disallowed_list=tuple(sec.str_list("serviceAnnotationDisallowedList", [])),
                       domain_template=sec.str("domainTemplate", DEFAULT_DOMAIN_TEMPLATE),
                       ingress_domain=sec.str("ingressDomain", DEFAULT_INGRESS_DOMAIN),
                       version=_version(sec))
    check_k8s_name(sec, "namespace", out.namespace, DNS_LABEL, "namespace name")
    check_k8s_name(sec, "ingressDomain", out.ingress_domain, DNS_SUBDOMAIN, "DNS domain")
    if "{{" not in out.domain_template or not _delimiters_balanced(out.domain_template):
        sec.problem("domainTemplate", out.domain_template, "expected a Go template such as "
                    f"{DEFAULT_DOMAIN_TEMPLATE!r} (KServe's default), as in the cluster's inferenceservice-config, "
                    "each '{{' closed by '}}' before the next one opens (KServe parses it only when it reconciles "
                    "a service, pkg/apis/serving/v1beta1/configmap.go, so a broken one fails every service then)")
    for i, key in enumerate(out.service_annotation_disallowed_list):
        check_format(sec, f"serviceAnnotationDisallowedList[{i}]", key, QUALIFIED_NAME, "expected an annotation "
                     "key: an optional DNS subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'")
    sec.done()
    return out


def _delimiters_balanced(template: str) -> bool:
    """Every `{{` is closed by `}}` before the next `{{`, and no `}}` closes nothing (text/template's lexer)."""
    depth, i = 0, 0
    while i < len(template):
        pair = template[i:i + 2]
        if pair in ("{{", "}}"):
            depth += 1 if pair == "{{" else -1
            if depth not in (0, 1):
                return False
            i += 2
        else:
            i += 1
    return depth == 0


def _version(sec: Section) -> tuple[int, int]:
    """`version` as a string: unquoted, YAML would read 0.20 as the number 0.2."""
    raw = sec.raw("version")
    if raw is None:
        return MIN_KSERVE_VERSION
    match = _VERSION.fullmatch(raw) if isinstance(raw, str) else None
    if match and (int(match[1]), int(match[2])) >= MIN_KSERVE_VERSION:
        return int(match[1]), int(match[2])
    sec.problem("version", raw, "expected the cluster's KServe release as a quoted string such as \"0.15\" or "
                "\"v0.18.1\", at least 0.15 (the oldest the stack supports)")
    return MIN_KSERVE_VERSION
