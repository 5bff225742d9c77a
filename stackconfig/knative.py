"""`knative`: what the cluster's Knative Serving admits, and whether the stack manages the flags it needs.

By default the stack patches `knative-serving/config-features` with exactly the pod-spec flags its Knative-mode
services use (manifests/knative.py). `manageFeatures: false` leaves the ConfigMap alone; then `features` must
say what the cluster already enables, and the admission check (validation/admission.py) refuses the stack
before any resource when a service uses a field whose flag is off.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from validation.admission import FEATURE_VALUES, KNATIVE_FEATURE_DEFAULTS
from validation.fields import Section


@dataclass(frozen=True)
class KnativeConfig:
    manage_features: bool = True
    features: dict[str, str] = field(default_factory=dict)  # config-features keys the cluster sets itself
    allow_zero_initial_scale: bool = False  # config-autoscaler allow-zero-initial-scale


def parse_knative(sec: Section) -> KnativeConfig:
    features = sec.str_map("features", {})
    for key, value in features.items():
        if key not in KNATIVE_FEATURE_DEFAULTS:
            sec.problem(f"features.{key}", value, "expected a knative-serving/config-features key checked by the "
                        "admission rules: " + ", ".join(sorted(KNATIVE_FEATURE_DEFAULTS)))
        elif value not in FEATURE_VALUES:
            sec.problem(f"features.{key}", value, "expected one of " + ", ".join(FEATURE_VALUES))
    out = KnativeConfig(manage_features=sec.bool("manageFeatures", True), features=features,
                        allow_zero_initial_scale=sec.bool("allowZeroInitialScale", False))
    sec.done()
    return out
