"""Format checks for what the Kubernetes API server would reject only after `pulumi up` had created the node group.

Patterns follow `k8s.io/apimachinery/pkg/util/validation/validation.go` (DNS-1123 label/subdomain, DNS-1035).

Every pattern is read as Go's regexp reads it (apimachinery, the AWS APIs): made with `go_pattern` (re.ASCII:
`\w` and `\s` mean ASCII letters, digits, '_' and spaces only; digits are spelled `[0-9]`, never `\d`) and tested
with `matches` (the whole string: Python's `$` also matches before a final "\n", Go's `$` only at the end).
Otherwise "chat\n", "٣" or "２４Gi" passed here and the API server, EKS or IAM refused them during `pulumi up`,
after resources existed.
"""

from __future__ import annotations

import re

from validation.fields import Section
from validation.kubernetes import image_pinned


def go_pattern(pattern: str) -> re.Pattern:
    """A format pattern with Go's character classes: ASCII letters, digits and spaces only."""
    return re.compile(pattern, re.ASCII)


def matches(pattern: re.Pattern, value: object) -> bool:
    """Whether the whole of `value` is in the format (`fullmatch`: no "\n" slips past a final `$`)."""
    return isinstance(value, str) and pattern.fullmatch(value) is not None


# A service name: DNS-1035 label short enough for KServe's '-predictor-…' suffix.
SERVICE_NAME = go_pattern(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
DNS_LABEL = go_pattern(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # namespaces (DNS-1123 label)
DNS_SUBDOMAIN = go_pattern(r"^(?=.{1,253}\Z)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUANTITY = go_pattern(r"^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")


def check_k8s_name(sec: Section, key: str, value: str | None, pattern: re.Pattern, what: str) -> None:
    """The API server would reject the name only after `pulumi up` had created the node group."""
    if value is not None and not matches(pattern, value):
        sec.problem(key, value, f"expected a Kubernetes {what}: lowercase letters, digits and '-'"
                    + (" ('.' between parts)" if pattern is DNS_SUBDOMAIN else ", at most 63 characters")
                    + ", starting and ending with a letter or digit")


# KServe's default ingress `domainTemplate` and `ingressDomain` (pkg/apis/serving/v1beta1/configmap.go
# DefaultDomainTemplate, DefaultIngressDomain). In Standard (RawDeployment) mode the predictor's URL is rendered
# from them with Name "<service>-predictor" (reconcilers/raw/raw_kube_reconciler.go createRawURL →
# ingress/domain.go GenerateDomainName), which fails the reconcile unless IsFullyQualifiedDomainName accepts it.
DEFAULT_DOMAIN_TEMPLATE = "{{ .Name }}-{{ .Namespace }}.{{ .IngressDomain }}"
DEFAULT_INGRESS_DOMAIN = "example.com"
_TEMPLATE_FIELD = go_pattern(r"\{\{-?\s*\.(Name|Namespace|IngressDomain)\s*-?\}\}")


def render_domain(template: str, name: str, namespace: str, domain: str) -> str | None:
    """The host KServe renders, or None when the template reads what the stack cannot know offline
    (`.Annotations`, `.Labels`, functions)."""
    host = _TEMPLATE_FIELD.sub(lambda m: {"Name": name, "Namespace": namespace, "IngressDomain": domain}[m[1]],
                               template)
    return None if "{{" in host else host


def fqdn_problem(host: str) -> str | None:
    """apimachinery IsFullyQualifiedDomainName: a DNS-1123 subdomain of at most 253 characters, two or more
    labels, each a DNS-1123 label of at most 63."""
    host = host[:-1] if host.endswith(".") else host
    labels = host.split(".")
    too_long = [label for label in labels if len(label) > 63]
    if too_long:
        return f"its DNS label {too_long[0]!r} has {len(too_long[0])} characters (DNS allows 63)"
    if len(host) > 253 or not matches(DNS_SUBDOMAIN, host):
        return "it is not a DNS name of at most 253 lowercase letters, digits, '-' and '.'"
    if len(labels) < 2:
        return "it has fewer than two dot-separated labels"
    return None


def check_raw_host(sec_problem, path: str, name: str, namespace: str, template: str, domain: str) -> None:
    """A Standard-mode service whose predictor host KServe cannot build: the reconcile fails ("invalid domain
    name …") and the InferenceService never becomes Ready. `sec_problem(path, value, allowed)` reports it."""
    host = render_domain(template, f"{name}-predictor", namespace, domain)
    problem = fqdn_problem(host) if host is not None else None
    if problem is None:
        return
    room = ""
    if template == DEFAULT_DOMAIN_TEMPLATE and len(f"{name}-predictor-{namespace}") > 63:
        fits = 63 - len("-predictor-") - len(namespace)
        room = f"at most {fits} characters, " if fits > 0 else "a shorter cluster.namespace (no name fits), "
    sec_problem(path, name, f"expected {room}a name whose Standard-mode predictor host is a valid DNS name: KServe "
                f"renders {host!r} from kserve.domainTemplate {template!r} and {problem}, so the "
                "InferenceService never becomes Ready; shorten the name or cluster.namespace")


def check_pinned(sec: Section, key: str, image: str | None) -> None:
    if image is not None and not image_pinned(image):
        sec.problem(key, image, "expected a pinned image tag or digest (no 'latest', no missing tag)")


# Label keys, taint keys and toleration keys: a qualified name, `[DNS-subdomain prefix/]name`
# (apimachinery validation.IsQualifiedName); label and taint values: at most 63 characters (IsValidLabelValue).
_QUALIFIED_PART = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
QUALIFIED_NAME = go_pattern(rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_QUALIFIED_PART}$")
LABEL_VALUE = go_pattern(rf"^({_QUALIFIED_PART})?$")
ENV_NAME = go_pattern(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")  # validation.IsEnvVarName
# EC2 resource IDs are 8 (legacy) or 17 hex digits; IAM role ARNs per partition (IAM User Guide, "IAM identifiers").
SUBNET_ID = go_pattern(r"^subnet-([0-9a-f]{8}|[0-9a-f]{17})$")
ROLE_ARN = go_pattern(r"^arn:aws(-cn|-us-gov|-iso|-iso-b)?:iam::[0-9]{12}:role/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}$")
EKS_CLUSTER_NAME = go_pattern(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")  # EKS CreateCluster `name`
EKS_NODE_GROUP_NAME = go_pattern(r"^[0-9A-Za-z][A-Za-z0-9_-]*$")  # EKS CreateNodegroup `nodegroupName`
# An EC2 instance type: family (with generation and attributes), ".", size ("g6e.xlarge", "p4d.24xlarge",
# "u-6tb1.metal"); EKS CreateNodegroup refuses a type that does not exist (InvalidParameterException).
EC2_INSTANCE_TYPE = go_pattern(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
# An image reference (distribution/reference's grammar): [registry[:port]/]path[:tag][@digest].
_DOMAIN = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])" \
          r"(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*" \
          r"(?::[0-9]+)?"
_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
IMAGE_REFERENCE = go_pattern(rf"^(?:{_DOMAIN}/)?{_PATH}(?:/{_PATH})*(?::[\w][\w.-]{{0,127}})?"
                             r"(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$")
# What KServe's storage initializer accepts after each scheme (kserve python/kserve/kserve/storage/storage.py).
_BUCKET = r"[a-z0-9][a-z0-9.\-_]{0,222}"  # S3 and GCS need 3-63; loose so placeholders pass
# An object path: no whitespace of any kind, Unicode included (an S3 or GCS object key may hold any UTF-8).
_OBJECT_PATH = r"(?u:\S)*"
STORAGE_URI = {
    "s3": go_pattern(rf"^s3://{_BUCKET}(/{_OBJECT_PATH})?$"),
    "gs": go_pattern(rf"^gs://{_BUCKET}(/{_OBJECT_PATH})?$"),
    # hf://<org>/<model>[:<revision>], nothing after: kserve_storage `_download_hf` splits on "/" and refuses
    # anything but exactly two parts (so a trailing "/" fails the download on the cluster)
    "hf": go_pattern(r"^hf://[\w.-]+/[\w.-]+(:[\w.-]+)?$"),
    "https": go_pattern(rf"^https://[A-Za-z0-9.-]+(:[0-9]+)?(/{_OBJECT_PATH})?$"),
    "http": go_pattern(rf"^http://[A-Za-z0-9.-]+(:[0-9]+)?(/{_OBJECT_PATH})?$"),
    "pvc": go_pattern(rf"^pvc://[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/{_OBJECT_PATH})?$"),
    "oci": go_pattern(rf"^oci://{IMAGE_REFERENCE.pattern[1:-1]}$"),
}


def check_format(sec: Section, key: str, value: str | None, pattern: re.Pattern, allowed: str) -> None:
    if isinstance(value, str) and not matches(pattern, value):
        sec.problem(key, value, allowed)


def check_image(sec: Section, key: str, image: str | None) -> None:
    """A valid reference, pinned: the kubelet would fail the pull (ErrImagePull / InvalidImageName) only after
    `pulumi up` had created the node group."""
    if image is None:
        return
    if not matches(IMAGE_REFERENCE, image):
        sec.problem(key, image, "expected an image reference such as \"registry.example.com/team/image:v1.2\" "
                    "(lowercase path, optional :tag, optional @sha256:digest)")
    else:
        check_pinned(sec, key, image)


def check_labels(sec: Section, key: str, labels: dict[str, str]) -> None:
    for name, value in labels.items():
        check_format(sec, f"{key}.{name}", name, QUALIFIED_NAME, "expected a label key: an optional DNS "
                     "subdomain prefix and '/', then at most 63 letters, digits, '-', '_' or '.'")
        check_format(sec, f"{key}.{name}", value, LABEL_VALUE, "expected a label value: at most 63 letters, "
                     "digits, '-', '_' or '.', starting and ending with a letter or digit")


# What the EKS node group API refuses in a label or taint key ("Label cannot contain reserved prefixes
# [kubernetes.io/, k8s.io/, eks.amazonaws.com/]", InvalidParameterException; eksctl-io/eksctl#4007,
# aws/containers-roadmap#1451): a substring match, so node-role.kubernetes.io/gpu and node.kubernetes.io/x are
# refused too although the kubelet's NodeRestriction would allow the latter. Set through a launch template instead,
# such labels stop AL2023 nodes joining (kubelet: "unknown 'kubernetes.io' or 'k8s.io' labels specified with
# --node-labels"; terraform-aws-modules/terraform-aws-eks#3346, aws/containers-roadmap#2465).
EKS_RESERVED_KEY_PARTS = ("kubernetes.io/", "k8s.io/", "eks.amazonaws.com/")


# What the EKS API allows in a node group's labels and taints, prefix included: a label key and value 1-63
# characters (CreateNodegroup `labels`, UpdateLabelsPayload `addOrUpdateLabels`), a taint key 1-63 and a taint
# value 0-63 (the `Taint` type; pulumi-aws NodeGroupTaint: "Maximum length of 63"). Kubernetes itself allows a
# 253-character DNS prefix before a 63-character name, and an empty label value: EKS refuses both with
# `pulumi up` already running (InvalidParameterException), after the gate and the other resources.
EKS_KEY_MAX = 63


def check_eks_key(sec: Section, key: str, name: str | None, what: str) -> None:
    """A node group label or taint key EKS would refuse when `pulumi up` creates the node group: a reserved prefix,
    or more than `EKS_KEY_MAX` characters in all (a key Kubernetes' own format refuses is reported by the format
    check, not twice)."""
    reserved = [part for part in EKS_RESERVED_KEY_PARTS if isinstance(name, str) and part in name]
    if reserved:
        sec.problem(key, name, f"expected a {what} key without the reserved prefixes "
                    f"{', '.join(EKS_RESERVED_KEY_PARTS)} anywhere in it "
                    f"(EKS refuses the node group: \"{what.capitalize()} "
                    f"cannot contain reserved prefixes\"); use your own prefix such as 'example.com/gpu'")
    if matches(QUALIFIED_NAME, name) and len(name) > EKS_KEY_MAX:
        sec.problem(key, name, f"expected a {what} key of at most {EKS_KEY_MAX} characters in all, prefix "
                    f"included (it has {len(name)}): the EKS API refuses a longer node group {what} key, although "
                    "Kubernetes allows a 253-character prefix; use a shorter prefix such as 'example.com/'")


def check_eks_label_value(sec: Section, key: str, value: str | None) -> None:
    """A node group label value EKS would refuse: empty (its labels take values of 1-63 characters; the length
    and characters are the Kubernetes format check's)."""
    if value == "":
        sec.problem(key, value, "expected a non-empty label value of at most 63 letters, digits, '-', '_' or '.': "
                    "the EKS API refuses an empty node group label value (labels: value 1-63 characters), "
                    "although Kubernetes allows one; use e.g. \"true\"")


def check_storage_uri(sec: Section, key: str, uri: str | None) -> None:
    if not uri:
        return
    scheme = uri.split("://", 1)[0] if "://" in uri else ""
    pattern = STORAGE_URI.get(scheme)
    if pattern is None:
        sec.problem(key, uri, "expected an s3://, gs://, hf://, https://, pvc:// or oci:// URI")
    elif not matches(pattern, uri):
        shape = {"s3": "s3://<bucket>/<prefix>", "gs": "gs://<bucket>/<prefix>",
                 "hf": "hf://<org>/<model>[:<revision>] (no trailing /)", "https": "https://<host>/<path>",
                 "http": "http://<host>/<path>", "pvc": "pvc://<claim>/<path>",
                 "oci": "oci://<registry>/<image>:<tag>"}[scheme]
        sec.problem(key, uri, f"expected {shape} with no spaces")
