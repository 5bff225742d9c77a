"""A service's window and scale-down-delay annotations in whole seconds, as Knative's webhook refuses the rest
(knative/serving pkg/apis/autoscaling/annotation_validation.go: `validateWindow`, `d.Truncate(time.Second) != d`;
`validateScaleDownDelay`, `d.Round(time.Second) != d`: "must be specified with at most second precision").
Both annotations are on the stack's allow-list (stackconfig/autoscaling.py), so one the webhook refuses would
leave the InferenceService's Knative Service never created. The cluster-wide stable-window and scale-down-delay
follow the same rule (tests/simulation/test_cluster_config.py); these are the per-service ones, read by
`from_annotations` and at stack load."""

from __future__ import annotations

import pytest

from simulation.autoscaler.config import from_annotations
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

KN = "autoscaling.knative.dev/"

# (annotation, value, the seconds it sets or None when refused); every value in range (window 6s–1h,
# scale-down-delay 0s–1h), so whole seconds is the only rule at stake
CASES = [
    ("window", "6500ms", None), ("window", "6.5s", None), ("window", "1m0.5s", None), ("window", "7s", 7.0),
    ("window", "60000ms", 60.0), ("window", "1m", 60.0),
    ("scale-down-delay", "1500ms", None), ("scale-down-delay", "0.5s", None), ("scale-down-delay", "2s", 2.0),
    ("scale-down-delay", "0s", 0.0), ("scale-down-delay", "2000ms", 2.0),
]
SETS = {"window": "stable_window_s", "scale-down-delay": "scale_down_delay_s"}


@pytest.mark.parametrize("key, value, seconds", CASES, ids=[f"{k}={v}" for k, v, _ in CASES])
def test_from_annotations_refuses_sub_second_durations(key, value, seconds):
    problems = []
    c = from_annotations({KN + key: value}, 0, problems)
    if seconds is not None:
        assert problems == [] and getattr(c, SETS[key]) == seconds
    else:
        [p] = problems
        assert p.path.endswith(f"[{KN}{key}]") and "in whole seconds" in p.allowed, p


def _load_with(key: str, value: str) -> None:
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    values["services"][0].setdefault("annotations", {})[KN + key] = value
    parse_stack_config(values, project, "dev")


@pytest.mark.parametrize("key, value", [("window", "6500ms"), ("scale-down-delay", "1500ms")])
def test_a_stack_with_a_sub_second_annotation_is_refused_at_load(key, value):
    with pytest.raises(InputError) as err:
        _load_with(key, value)
    text = str(err.value)
    assert f"annotations[{KN}{key}]: got '{value}'" in text and "in whole seconds" in text, text


@pytest.mark.parametrize("key, value", [("window", "7s"), ("scale-down-delay", "2s")])
def test_a_stack_with_whole_seconds_loads(key, value):
    _load_with(key, value)
