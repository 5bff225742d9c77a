"""`knative`: what the cluster's Knative Serving admits and how it autoscales, and which of it the stack manages.

By default the stack patches `knative-serving/config-features` with exactly the pod-spec flags its Knative-mode
services use (manifests/knative.py). `manageFeatures: false` leaves the ConfigMap alone; then `features` must
say what the cluster already enables, and the admission check (validation/admission.py) refuses the stack
before any resource when a service uses a field whose flag is off.

`autoscaler` holds `knative-serving/config-autoscaler` keys, named and written as in that ConfigMap
(`max-scale-up-rate: "10"`, `stable-window: 120s`), like `features` holds config-features keys: checked at load
as Knative's `validate()` does (simulation/autoscaler/cluster_config.py), read by the simulation, and, with
`manageAutoscaler` (true), every given key is patched into the ConfigMap as given (a value equal to Knative's
default too: the admin may have changed it). With `manageAutoscaler: false` they must say what the cluster has;
keys not given must be at Knative's defaults.
`allowZeroInitialScale` is the older spelling of `autoscaler: {allow-zero-initial-scale: "true"}`.

`version` is the cluster's Knative Serving release, a quoted string ("1.22", "v1.21.1"; the patch is dropped), one
of 1.20-1.23, by default 1.23: the release the upstream citations were checked against, the newest, and the one
with the strictest Kubernetes floor. It decides what changed between those releases and nothing else: the
Kubernetes version its controllers start on (stackconfig/cluster.py `check_knative_floor`, for a stack with a
Knative-mode service) and whether config-features has `kubernetes.podspec-volumes-ephemeral` (1.23 on). The
values of `secure-pod-defaults` are the same on all of them (validation/cluster_admission.py: they changed in
1.20). The autoscaler, activator, queue-proxy and timeout defaults the simulation reads
are the same in all of them, so the simulation does not depend on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simulation.autoscaler.cluster_config import DEFAULT as AUTOSCALER_DEFAULT, ClusterAutoscaler, \
    parse_config_autoscaler
from stackconfig.formats import go_pattern
from validation.cluster_admission import (DEFAULT_KNATIVE, FEATURE_VALUES, KNATIVE_FEATURE_DEFAULTS,
                                          KNATIVE_FEATURE_SINCE, KNATIVE_VERSIONS, SECURE_POD_DEFAULTS,
                                          SECURE_POD_DEFAULTS_VALUES, feature_value, knative_feature_keys, release)
from validation.errors import Problem
from validation.fields import Section

_VERSION = go_pattern(r"^v?([0-9]+)\.([0-9]+)(\.[0-9]+)?$")


@dataclass(frozen=True)
class KnativeConfig:
    manage_features: bool = True
    features: dict[str, str] = field(default_factory=dict)  # config-features keys the cluster sets itself
    manage_autoscaler: bool = True
    autoscaler: ClusterAutoscaler = AUTOSCALER_DEFAULT      # config-autoscaler as the services will meet it
    version: tuple[int, int] = DEFAULT_KNATIVE             # the cluster's Knative Serving (major, minor)

    @property
    def allow_zero_initial_scale(self) -> bool:
        return self.autoscaler.allow_zero_initial_scale


def parse_knative(sec: Section) -> KnativeConfig:
    version = _version(sec)
    features = _features(sec, version)
    raw = sec.raw("autoscaler")
    allow_zero = sec.bool("allowZeroInitialScale")
    if allow_zero is not None and (raw is None or isinstance(raw, dict)):  # else parse_config_autoscaler refuses raw
        if raw is not None and raw.get("allow-zero-initial-scale") is not None:
            sec.problem("allowZeroInitialScale", allow_zero, "expected it only once: drop it and keep "
                        "autoscaler.allow-zero-initial-scale")
        else:
            raw = {**(raw or {}), "allow-zero-initial-scale": allow_zero}
    autoscaler = parse_config_autoscaler(raw, sec.key_path("autoscaler"), sec.problems)
    out = KnativeConfig(manage_features=sec.bool("manageFeatures", True), features=features,
                        manage_autoscaler=sec.bool("manageAutoscaler", True), autoscaler=autoscaler,
                        version=version)
    sec.done()
    return out


def _version(sec: Section) -> tuple[int, int]:
    """`version` as a string: unquoted, YAML would read 1.20 as the number 1.2."""
    raw = sec.raw("version")
    if raw is None:
        return DEFAULT_KNATIVE
    match = _VERSION.fullmatch(raw) if isinstance(raw, str) else None
    if match and (int(match[1]), int(match[2])) in KNATIVE_VERSIONS:
        return int(match[1]), int(match[2])
    allowed = ", ".join(f'"{release(v)}"' for v in KNATIVE_VERSIONS)
    sec.problem("version", raw, f"expected the cluster's Knative Serving release as a quoted string, one of "
                f"{allowed} (a leading v and a patch are fine: \"v1.21.1\"): the releases the stack supports")
    return DEFAULT_KNATIVE


def _features(sec: Section, version: tuple[int, int]) -> dict[str, str]:
    """`features`, each value as the stack spells it; a key or value Knative Serving `version` does not parse is
    refused (Knative would ignore it and keep its default)."""
    features = sec.str_map("features", {})
    known = knative_feature_keys(version)
    for key, value in features.items():
        if key in KNATIVE_FEATURE_DEFAULTS and key not in known:
            sec.problem(f"features.{key}", value, f"expected a config-features key Knative Serving "
                        f"{release(version)} (knative.version) has: `{key}` comes with Knative "
                        f"{release(KNATIVE_FEATURE_SINCE[key])}; before it the field it gates is never admitted")
        elif key not in known:
            sec.problem(f"features.{key}", value, "expected a knative-serving/config-features key checked by the "
                        "admission rules: " + ", ".join(sorted(known)))
        elif feature_value(key, value) is None and key == SECURE_POD_DEFAULTS:
            sec.problem(f"features.{key}", value, "expected one of " + ", ".join(SECURE_POD_DEFAULTS_VALUES)
                        + " (in any case: Knative 1.20 on reads no other value, `allowed` neither, and leaves the "
                        "flag disabled; features.go asSecurePodDefaultsFlag)")
        elif feature_value(key, value) is None:
            sec.problem(f"features.{key}", value, "expected one of " + ", ".join(FEATURE_VALUES))
        else:
            features[key] = feature_value(key, value)
    return features


def max_scale_problems(knative: KnativeConfig, services: list, problems: list[Problem]) -> None:
    """`max-scale-limit`: Knative's webhook refuses a revision whose max-scale exceeds it (KServe writes
    max-scale from `maxReplicas`; annotation_validation.go validateMaxScaleWithinLimit)."""
    limit = knative.autoscaler.max_scale_limit
    for i, svc in enumerate(services):
        if limit and svc.deployment_mode == "Knative" and svc.max_replicas > limit:
            problems.append(Problem(f"services[{i}].maxReplicas", svc.max_replicas, f"expected at most "
                                    f"knative.autoscaler max-scale-limit ({limit}): Knative refuses a larger "
                                    "max-scale"))

