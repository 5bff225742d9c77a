"""Format checks for what the Kubernetes API server would reject only after `pulumi up` had created the node group.

Patterns follow `k8s.io/apimachinery/pkg/util/validation/validation.go` (DNS-1123 label/subdomain, DNS-1035).
"""

from __future__ import annotations

import re

from validation.fields import Section
from validation.kubernetes import image_pinned

# A service name: DNS-1035 label short enough for KServe's '-predictor-…' suffix.
SERVICE_NAME = re.compile(r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # namespaces (DNS-1123 label)
DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
QUANTITY = re.compile(r"^\d+(\.\d+)?(m|Ki|Mi|Gi|Ti|k|M|G|T)?$")


def check_k8s_name(sec: Section, key: str, value: str | None, pattern: re.Pattern, what: str) -> None:
    """The API server would reject the name only after `pulumi up` had created the node group."""
    if value is not None and not pattern.match(value):
        sec.problem(key, value, f"expected a Kubernetes {what}: lowercase letters, digits and '-'"
                    + (" ('.' between parts)" if pattern is DNS_SUBDOMAIN else ", at most 63 characters")
                    + ", starting and ending with a letter or digit")


def check_pinned(sec: Section, key: str, image: str | None) -> None:
    if image is not None and not image_pinned(image):
        sec.problem(key, image, "expected a pinned image tag or digest (no 'latest', no missing tag)")
