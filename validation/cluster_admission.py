"""What the offline admission checks share: the cluster settings the webhooks read (`ClusterAdmission`) and one
refused object (`Refusal`). The rules: validation/admission.py (Knative's and KServe's webhooks) and
validation/deployment_mode.py (KServe's deployment-mode names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

# knative/serving config/core/configmaps/features.yaml: the shipped defaults of the flags checked here.
KNATIVE_FEATURE_DEFAULTS: dict[str, str] = {
    "secure-pod-defaults": "disabled",
    "kubernetes.podspec-affinity": "disabled",
    "kubernetes.podspec-topologyspreadconstraints": "disabled",
    "kubernetes.podspec-hostaliases": "disabled",
    "kubernetes.podspec-nodeselector": "disabled",
    "kubernetes.podspec-tolerations": "disabled",
    "kubernetes.podspec-fieldref": "disabled",
    "kubernetes.podspec-runtimeclassname": "disabled",
    "kubernetes.podspec-dnspolicy": "disabled",
    "kubernetes.podspec-dnsconfig": "disabled",
    "kubernetes.podspec-securitycontext": "disabled",
    "kubernetes.podspec-shareprocessnamespace": "disabled",
    "kubernetes.podspec-hostipc": "disabled",
    "kubernetes.podspec-hostpid": "disabled",
    "kubernetes.podspec-hostnetwork": "disabled",
    "kubernetes.podspec-priorityclassname": "disabled",
    "kubernetes.podspec-schedulername": "disabled",
    "kubernetes.containerspec-addcapabilities": "disabled",
    "kubernetes.podspec-volumes-emptydir": "enabled",
    "kubernetes.podspec-volumes-image": "disabled",
    "kubernetes.podspec-volumes-hostpath": "disabled",
    "kubernetes.podspec-volumes-ephemeral": "disabled",
    "kubernetes.podspec-volumes-csi": "disabled",
    "kubernetes.podspec-init-containers": "disabled",
    "kubernetes.podspec-persistent-volume-claim": "disabled",
    "kubernetes.podspec-persistent-volume-write": "disabled",
    "kubernetes.podspec-volumes-mount-propagation": "disabled",
}
FEATURE_VALUES = ("enabled", "disabled", "allowed")
OLDEST_KSERVE = (0, 15)  # the oldest release the stack supports (stackconfig/kserve.py)


def release(version: tuple[int, int]) -> str:
    """(0, 18) → "0.18"."""
    return ".".join(map(str, version))


@dataclass(frozen=True)
class ClusterAdmission:
    """The cluster settings the webhooks read: Knative's `config-features` and `config-autoscaler`, KServe's
    release."""

    knative_features: Mapping[str, str] = field(default_factory=lambda: dict(KNATIVE_FEATURE_DEFAULTS))
    allow_zero_initial_scale: bool = False  # config-autoscaler allow-zero-initial-scale (default false)
    kserve_version: tuple[int, int] = OLDEST_KSERVE

    def admits(self, flag: str) -> bool:
        """The masks admit a field unless its flag is `disabled` (`allowed` needs a per-revision annotation,
        which the stack never sets, so it is treated as off)."""
        return self.knative_features.get(flag, KNATIVE_FEATURE_DEFAULTS.get(flag, "disabled")) == "enabled"

    def with_features(self, enabled: Iterable[str]) -> "ClusterAdmission":
        return ClusterAdmission({**self.knative_features, **{f: "enabled" for f in enabled}},
                                self.allow_zero_initial_scale, self.kserve_version)


@dataclass(frozen=True)
class Refusal:
    """One object the cluster would refuse: where, which upstream rule, and what to change."""

    obj: str
    path: str
    rule: str  # the upstream function
    message: str

    def __str__(self) -> str:
        return f"{self.obj}: {self.path}: {self.message} ({self.rule})"
