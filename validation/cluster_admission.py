"""What the offline admission checks share: the cluster settings the webhooks read (`ClusterAdmission`) and one
refused object (`Refusal`). The rules: validation/admission.py (KServe's webhook, and the others in order),
validation/knative_podspec.py (Knative's pod-spec masks), validation/run_as_root.py (the kubelet's non-root check)
and validation/deployment_mode.py (KServe's deployment-mode names).

Knative Serving's release (`knative.version`, 1.20-1.23) changes one thing here (knative/serving
pkg/apis/config/features.go and pkg/apis/serving/fieldmask.go, knative-v1.19.0 → knative-v1.23.0): the
`kubernetes.podspec-volumes-ephemeral` key exists only from 1.23 (#16590; before, VolumeSourceMask drops every
ephemeral volume, so none is admitted). On all of them `secure-pod-defaults` is read by `asSecurePodDefaultsFlag`
(1.20 on): `Disabled`, `AllowRootBounded` or `Enabled`, matched case-insensitively; `Allowed` is no longer parsed
(the flag stays at its default, Disabled), and AllowRootBounded admits what Enabled admits (PodSecurityContextMask,
CapabilitiesMask). Both make the revision defaulting fill in a restricted container securityContext; only Enabled
adds `runAsNonRoot: true` (`ClusterAdmission.sets_run_as_non_root`).
"""

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
# The Knative Serving releases the stack supports ("1.2x"; `knative.version`, stackconfig/knative.py). The default
# is 1.23: the release every upstream citation was checked against (../shared/reference/knative-kserve.md).
KNATIVE_VERSIONS = ((1, 20), (1, 21), (1, 22), (1, 23))
DEFAULT_KNATIVE = (1, 23)
# config-features keys newer than the oldest supported release → the first release whose features.go parses it.
KNATIVE_FEATURE_SINCE: dict[str, tuple[int, int]] = {"kubernetes.podspec-volumes-ephemeral": (1, 23)}
# features.go asSecurePodDefaultsFlag (knative-v1.20.0 on): the values it parses, spelt as the stack writes them.
SECURE_POD_DEFAULTS = "secure-pod-defaults"
SECURE_POD_DEFAULTS_VALUES = ("enabled", "disabled", "AllowRootBounded")


def knative_feature_keys(version: tuple[int, int]) -> dict[str, str]:
    """The config-features keys (with their shipped defaults) that Knative Serving `version` parses."""
    return {k: v for k, v in KNATIVE_FEATURE_DEFAULTS.items() if version >= KNATIVE_FEATURE_SINCE.get(k, (0, 0))}


def feature_value(flag: str, raw: object) -> str | None:
    """`raw` as the stack spells it, or None when the stack refuses it. `secure-pod-defaults` takes what Knative
    1.20 on parses there (asSecurePodDefaultsFlag, in any case: strings.EqualFold; anything else, `allowed` too,
    leaves the flag at Disabled); the other flags take the stack's lower-case enabled, disabled, allowed."""
    values = SECURE_POD_DEFAULTS_VALUES if flag == SECURE_POD_DEFAULTS else FEATURE_VALUES
    if flag != SECURE_POD_DEFAULTS:
        return raw if raw in values else None
    return next((v for v in values if isinstance(raw, str) and raw.casefold() == v.casefold()), None)


def release(version: tuple[int, int]) -> str:
    """(0, 18) → "0.18"."""
    return ".".join(map(str, version))


@dataclass(frozen=True)
class ClusterAdmission:
    """The cluster settings the webhooks read: Knative's `config-features` and `config-autoscaler`, KServe's
    release and Knative Serving's."""

    knative_features: Mapping[str, str] = field(default_factory=lambda: dict(KNATIVE_FEATURE_DEFAULTS))
    allow_zero_initial_scale: bool = False  # config-autoscaler allow-zero-initial-scale (default false)
    kserve_version: tuple[int, int] = OLDEST_KSERVE
    knative_version: tuple[int, int] = DEFAULT_KNATIVE

    def knows(self, flag: str) -> bool:
        """Whether this Knative release's config-features has `flag` at all."""
        return flag in knative_feature_keys(self.knative_version)

    def admits(self, flag: str) -> bool:
        """The masks admit a field unless its flag is `disabled` (`allowed` needs a per-revision annotation,
        which the stack never sets, so it is treated as off). A key this release does not have admits nothing.
        `secure-pod-defaults` admits its fields when `Enabled` or `AllowRootBounded`, in any case."""
        if not self.knows(flag):
            return False
        value = self.knative_features.get(flag, KNATIVE_FEATURE_DEFAULTS[flag])
        if flag == SECURE_POD_DEFAULTS:
            return feature_value(flag, value) in ("enabled", "AllowRootBounded")
        return value == "enabled"

    def sets_run_as_non_root(self) -> bool:
        """Whether Knative's revision defaulting sets `runAsNonRoot: true` on a container that leaves it unset (with
        the pod's unset too): only with `secure-pod-defaults` Enabled (revision_defaults.go defaultSecurityContext,
        knative-v1.20.0 on). AllowRootBounded sets allowPrivilegeEscalation, seccompProfile and capabilities only,
        and an explicit `runAsNonRoot: false` is kept (SecurityContextMask admits it)."""
        value = self.knative_features.get(SECURE_POD_DEFAULTS, KNATIVE_FEATURE_DEFAULTS[SECURE_POD_DEFAULTS])
        return feature_value(SECURE_POD_DEFAULTS, value) == "enabled"

    def with_features(self, enabled: Iterable[str]) -> "ClusterAdmission":
        return ClusterAdmission({**self.knative_features, **{f: "enabled" for f in enabled}},
                                self.allow_zero_initial_scale, self.kserve_version, self.knative_version)


@dataclass(frozen=True)
class Refusal:
    """One object the cluster would refuse: where, which upstream rule, and what to change."""

    obj: str
    path: str
    rule: str  # the upstream function
    message: str

    def __str__(self) -> str:
        return f"{self.obj}: {self.path}: {self.message} ({self.rule})"
