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
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simulation.autoscaler.cluster_config import DEFAULT as AUTOSCALER_DEFAULT, ClusterAutoscaler, \
    parse_config_autoscaler
from validation.cluster_admission import FEATURE_VALUES, KNATIVE_FEATURE_DEFAULTS
from validation.errors import Problem
from validation.fields import Section


@dataclass(frozen=True)
class KnativeConfig:
    manage_features: bool = True
    features: dict[str, str] = field(default_factory=dict)  # config-features keys the cluster sets itself
    manage_autoscaler: bool = True
    autoscaler: ClusterAutoscaler = AUTOSCALER_DEFAULT      # config-autoscaler as the services will meet it

    @property
    def allow_zero_initial_scale(self) -> bool:
        return self.autoscaler.allow_zero_initial_scale


def parse_knative(sec: Section) -> KnativeConfig:
    features = sec.str_map("features", {})
    for key, value in features.items():
        if key not in KNATIVE_FEATURE_DEFAULTS:
            sec.problem(f"features.{key}", value, "expected a knative-serving/config-features key checked by the "
                        "admission rules: " + ", ".join(sorted(KNATIVE_FEATURE_DEFAULTS)))
        elif value not in FEATURE_VALUES:
            sec.problem(f"features.{key}", value, "expected one of " + ", ".join(FEATURE_VALUES))
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
                        manage_autoscaler=sec.bool("manageAutoscaler", True), autoscaler=autoscaler)
    sec.done()
    return out


def max_scale_problems(knative: KnativeConfig, services: list, problems: list[Problem]) -> None:
    """`max-scale-limit`: Knative's webhook refuses a revision whose max-scale exceeds it (KServe writes
    max-scale from `maxReplicas`; annotation_validation.go validateMaxScaleWithinLimit)."""
    limit = knative.autoscaler.max_scale_limit
    for i, svc in enumerate(services):
        if limit and svc.deployment_mode == "Knative" and svc.max_replicas > limit:
            problems.append(Problem(f"services[{i}].maxReplicas", svc.max_replicas, f"expected at most "
                                    f"knative.autoscaler max-scale-limit ({limit}): Knative refuses a larger "
                                    "max-scale"))

