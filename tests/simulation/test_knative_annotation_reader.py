"""Direct, table-driven tests of the Knative annotation reader, so mutation testing maps them to the code.

`from_annotations` reads Knative's `autoscaling.knative.dev/*` annotations: ranges from knative/serving
`pkg/apis/autoscaling/annotation_validation.go` (reference knative-kserve.md §3). Each table row is an accepted
edge or the first rejected value past it; each rejection must name the exact key and the range. The HPA's
`behavior` reader: tests/simulation/test_hpa_rules_reader.py.
"""

from __future__ import annotations

from dataclasses import fields

import pytest

from simulation.autoscaler.config import HPA_CLASS, KPA_CLASS, AutoscalerConfig, from_annotations

P = "autoscaling.knative.dev/"
PATH = "svc.annotations"
DEFAULTS = AutoscalerConfig()


def read(ann, cc=0, **kw):
    problems: list = []
    return from_annotations(ann, cc, problems, PATH, **kw), problems


def changed(c: AutoscalerConfig, base: AutoscalerConfig = DEFAULTS) -> dict:
    return {f.name: getattr(c, f.name) for f in fields(c) if getattr(c, f.name) != getattr(base, f.name)}


# -- Knative annotations: accepted edges -------------------------------------------------------------------------
# (annotation, value, {attribute: value}) — exactly these attributes change, nothing else.
ACCEPTED = [
    ("target", "0.01", {"target": 0.01}),
    ("target", "250", {"target": 250.0}),
    ("target", 7, {"target": 7.0}),                                     # numbers are accepted too
    ("target-utilization-percentage", "1", {"target_utilization": 0.01}),
    ("target-utilization-percentage", "100", {"target_utilization": 1.0}),
    ("target-utilization-percentage", "85.5", {"target_utilization": 0.855}),
    ("target-burst-capacity", "-1", {"target_burst_capacity": -1.0}),   # unlimited
    ("target-burst-capacity", "0", {"target_burst_capacity": 0.0}),
    ("target-burst-capacity", "0.5", {"target_burst_capacity": 0.5}),
    ("window", "6s", {"stable_window_s": 6.0}),
    ("window", "1h", {"stable_window_s": 3600.0}),
    ("window", "3600s", {"stable_window_s": 3600.0}),
    ("window", "6m", {"stable_window_s": 360.0}),
    ("window", "1m30s", {"stable_window_s": 90.0}),
    ("window", 90, {"stable_window_s": 90.0}),
    ("panic-window-percentage", "1", {"panic_window_percentage": 1.0}),
    ("panic-window-percentage", "100", {"panic_window_percentage": 100.0}),
    ("panic-threshold-percentage", "110", {"panic_threshold_percentage": 110.0}),
    ("panic-threshold-percentage", "1000", {"panic_threshold_percentage": 1000.0}),
    ("scale-down-delay", "0", {}),
    ("scale-down-delay", "0s", {}),
    ("scale-down-delay", "1s", {"scale_down_delay_s": 1.0}),
    ("scale-down-delay", "1h", {"scale_down_delay_s": 3600.0}),
    ("scale-down-delay", "15m", {"scale_down_delay_s": 900.0}),
    ("scale-to-zero-pod-retention-period", "0s", {}),
    ("scale-to-zero-pod-retention-period", "1m5s", {"scale_to_zero_pod_retention_s": 65.0}),
    ("scale-to-zero-pod-retention-period", "3600s", {"scale_to_zero_pod_retention_s": 3600.0}),
    ("min-scale", "0", {}),
    ("min-scale", "3", {"min_scale": 3}),
    ("max-scale", "0", {}),                                             # 0 = unlimited
    ("max-scale", "12", {"max_scale": 12}),
    ("initial-scale", "1", {}),
    ("initial-scale", "5", {"initial_scale": 5}),
    ("activation-scale", "2", {"activation_scale": 2}),                # annotation_validation.go: > 1
    ("activation-scale", "3", {"activation_scale": 3}),
    ("class", HPA_CLASS, {"autoscaler_class": HPA_CLASS}),
    ("class", KPA_CLASS, {}),
    ("metric", "rps", {"metric": "rps"}),
    ("metric", "concurrency", {}),
    ("metric-aggregation-algorithm", "linear", {}),
    ("metric-aggregation-algorithm", "weighted-exponential", {"aggregation": "weighted-exponential"}),
    ("metric-aggregation-algorithm", "weightedExponential",            # register.go: the alternate casing,
     {"aggregation": "weighted-exponential"}),                         # read as the other (metric_lifecycle.go)
    ("min-scale", "+2", {"min_scale": 2}),                              # strconv.ParseInt takes a sign
]


@pytest.mark.parametrize("key,value,expected", ACCEPTED, ids=[f"{k}={v!r}" for k, v, _ in ACCEPTED])
def test_annotation_accepted_edge_sets_exactly_its_attribute(key, value, expected):
    c, problems = read({P + key: value})
    assert problems == []
    assert changed(c) == expected
    assert all(type(getattr(c, k)) is type(v) for k, v in expected.items())  # ints stay ints


# -- Knative annotations: first rejected value past each edge, and wrong types ----------------------------------
BETWEEN_1_100 = "expected a number between 1 and 100 (as a string)"
WINDOW = "expected a duration like '60s' between 6s and 3600s in whole seconds"
DELAY = "expected a duration like '60s' between 0s and 3600s in whole seconds"
RETENTION = "expected a duration like '60s' between 0s and 3600s"
INT_GE0 = "expected an integer >= 0 (as a string)"
REJECTED = [
    ("target", "0.0099", "expected a number >= 0.01 (as a string)"),
    ("target", "0", "expected a number >= 0.01 (as a string)"),
    ("target", "lots", "expected a number >= 0.01 (as a string)"),
    ("target-utilization-percentage", "0.99", BETWEEN_1_100),
    ("target-utilization-percentage", "100.01", BETWEEN_1_100),
    ("target-burst-capacity", "-0.5", "expected a number >= 0, or -1 for unlimited (as a string)"),
    ("target-burst-capacity", "-0.0001", "expected a number >= 0, or -1 for unlimited (as a string)"),
    ("target-burst-capacity", "-1.01", "expected a number >= 0, or -1 for unlimited (as a string)"),
    ("target-burst-capacity", "-2", "expected a number >= 0, or -1 for unlimited (as a string)"),
    ("window", "5s", WINDOW),
    ("window", "5999ms", WINDOW),
    ("window", "3601s", WINDOW),
    ("window", "1h0m1s", WINDOW),
    ("window", "60", WINDOW),                                           # a Go duration needs a unit
    ("window", "sixty", WINDOW),
    ("panic-window-percentage", "0.99", BETWEEN_1_100),
    ("panic-window-percentage", "100.5", BETWEEN_1_100),
    ("panic-threshold-percentage", "109.9", "expected a number between 110 and 1000 (as a string)"),
    ("panic-threshold-percentage", "1000.1", "expected a number between 110 and 1000 (as a string)"),
    ("scale-down-delay", "-1s", DELAY),
    ("scale-down-delay", "3601s", DELAY),
    ("scale-down-delay", "1h1s", DELAY),
    ("scale-to-zero-pod-retention-period", "-1s", RETENTION),
    ("scale-to-zero-pod-retention-period", "61m", RETENTION),
    ("min-scale", "-1", INT_GE0),
    ("min-scale", "1.5", INT_GE0),
    ("max-scale", "-1", INT_GE0),
    ("max-scale", "2.5", INT_GE0),
    ("initial-scale", "-1", INT_GE0),
    ("initial-scale", "0.5", INT_GE0),
    ("activation-scale", "1", "expected an integer >= 2 (as a string)"),
    ("activation-scale", "0", "expected an integer >= 2 (as a string)"),
    ("activation-scale", "2.5", "expected an integer >= 2 (as a string)"),
    # strconv.ParseInt(v, 10, 32) / ParseFloat: no decimal point or exponent in an integer, no spaces, no "_"
    ("min-scale", "2.0", INT_GE0), ("max-scale", "1e1", INT_GE0), ("initial-scale", " 3", INT_GE0),
    ("target", " 5", "expected a number >= 0.01 (as a string)"),
    ("target", "1_000", "expected a number >= 0.01 (as a string)"),
    ("metric", "cpu", f"expected 'concurrency' or 'rps' with the {KPA_CLASS!r} class "
                      f"('cpu' and 'memory' need the {HPA_CLASS!r} class)"),
    ("class", "kpa", f"expected {KPA_CLASS!r} or {HPA_CLASS!r}"),
    ("metric", "latency", "expected one of 'concurrency', 'rps', 'cpu', 'memory'"),
    ("metric-aggregation-algorithm", "ewma", "expected 'linear' or 'weighted-exponential' (or 'weightedExponential')"),
    ("metric-aggregation-algorithm", ["linear"],
     "expected 'linear' or 'weighted-exponential' (or 'weightedExponential')"),
]
# Wrong types for every numeric and duration annotation: Kubernetes annotation values are strings.
NUMERIC = {"target": "expected a number >= 0.01 (as a string)", "target-utilization-percentage": BETWEEN_1_100,
           "target-burst-capacity": "expected a number >= 0, or -1 for unlimited (as a string)", "window": WINDOW,
           "panic-window-percentage": BETWEEN_1_100,
           "panic-threshold-percentage": "expected a number between 110 and 1000 (as a string)",
           "scale-down-delay": DELAY, "scale-to-zero-pod-retention-period": RETENTION, "min-scale": INT_GE0,
           "max-scale": INT_GE0, "initial-scale": INT_GE0, "activation-scale": "expected an integer >= 2 (as a string)"}
TYPES = [(k, bad, msg) for k, msg in NUMERIC.items() for bad in (None, True, False, [1], "nan", "inf", "", 10**400)]


@pytest.mark.parametrize("key,value,message", REJECTED + TYPES,
                         ids=[f"{k}={v!r:.30}" for k, v, _ in REJECTED + TYPES])
def test_annotation_rejected_names_key_value_and_range(key, value, message):
    c, problems = read({P + key: value})
    assert [(p.path, p.value, p.allowed) for p in problems] == [(f"{PATH}[{P}{key}]", value, message)]
    assert changed(c) == {}, "a rejected value leaves the default"


@pytest.mark.parametrize("metric", ["cpu", "memory"])
def test_cpu_and_memory_metrics_need_the_hpa_class(metric):
    """annotation_validation.go validateMetric: KPA takes concurrency or rps; HPA takes any other metric."""
    c, problems = read({P + "class": HPA_CLASS, P + "metric": metric})
    assert problems == [] and changed(c) == {"autoscaler_class": HPA_CLASS, "metric": metric}
    c, problems = read({P + "metric": metric})
    assert [p.path for p in problems] == [f"{PATH}[{P}metric]"] and changed(c) == {}


@pytest.mark.parametrize("ann,ok", [({"min-scale": "2", "activation-scale": "2"}, True),
                                    ({"min-scale": "3", "activation-scale": "2"}, False),
                                    ({"max-scale": "4", "activation-scale": "4"}, True),
                                    ({"max-scale": "3", "activation-scale": "4"}, False),
                                    ({"max-scale": "0", "activation-scale": "40"}, True)])
def test_activation_scale_lies_between_min_and_max_scale(ann, ok):
    """annotation_validation.go validateMinMaxScale: min-scale <= activation-scale <= max-scale (0 = unbounded)."""
    c, problems = read({P + k: v for k, v in ann.items()})
    assert (problems == []) is ok
    assert c.activation_scale == (int(ann["activation-scale"]) if ok else 1)
    if not ok:
        assert ([p.path for p in problems] == [f"{PATH}[{P}activation-scale]"]
                and "between min-scale" in problems[0].allowed)


@pytest.mark.parametrize("legacy,attr,value", [
    ("scaleDownDelay", "scale_down_delay_s", 30.0),
    ("scaleToZeroPodRetentionPeriod", "scale_to_zero_pod_retention_s", 30.0)])
def test_more_legacy_duration_keys(legacy, attr, value):
    """register.go lists these camelCase keys too."""
    c, problems = read({P + legacy: "30s"})
    assert problems == [] and getattr(c, attr) == value


@pytest.mark.parametrize("key,value", [("window", "6500ms"), ("window", "60.5s"), ("scale-down-delay", "1500ms")])
def test_window_and_scale_down_delay_need_whole_seconds(key, value):
    """annotation_validation.go validateWindow / validateScaleDownDelay: "must be specified with at most second
    precision" (scale-to-zero-pod-retention-period has no such rule)."""
    c, problems = read({P + key: value})
    assert [p.path for p in problems] == [f"{PATH}[{P}{key}]"] and "whole seconds" in problems[0].allowed
    assert changed(c) == {}
    c, problems = read({P + "scale-to-zero-pod-retention-period": "1500ms"})
    assert problems == [] and c.scale_to_zero_pod_retention_s == 1.5


def test_every_annotation_at_once_lands_in_its_own_attribute():
    """Distinct values for every annotation: a swapped or dropped assignment shows as a wrong attribute."""
    ann = {"class": HPA_CLASS, "metric": "rps", "target": "11", "target-utilization-percentage": "12",
           "target-burst-capacity": "13", "window": "14s", "panic-window-percentage": "15",
           "panic-threshold-percentage": "116", "scale-down-delay": "19s", "scale-to-zero-pod-retention-period": "20s",
           "min-scale": "21", "max-scale": "24", "initial-scale": "23", "activation-scale": "22",
           "metric-aggregation-algorithm": "weighted-exponential"}
    c, problems = read({P + k: v for k, v in ann.items()}, cc=9)
    assert problems == []
    assert changed(c) == {
        "autoscaler_class": HPA_CLASS, "metric": "rps", "container_concurrency": 9, "target": 11.0,
        "target_utilization": 0.12, "target_burst_capacity": 13.0, "stable_window_s": 14.0,
        "panic_window_percentage": 15.0, "panic_threshold_percentage": 116.0, "scale_down_delay_s": 19.0,
        "scale_to_zero_pod_retention_s": 20.0,
        "min_scale": 21, "max_scale": 24, "initial_scale": 23, "activation_scale": 22,
        "aggregation": "weighted-exponential"}


def test_no_annotations_gives_knatives_defaults():
    """config.go defaultConfig (knative-kserve.md §3), with the revision's container concurrency."""
    for ann in ({}, None, {"serving.knative.dev/progress-deadline": "10m", 3: "x", "other/window": "1s"}):
        c, problems = read(ann, cc=4)
        assert problems == [] and c == AutoscalerConfig(container_concurrency=4)
    d = DEFAULTS
    assert (d.autoscaler_class, d.metric, d.target, d.target_utilization, d.target_burst_capacity) == \
        (KPA_CLASS, "concurrency", None, 0.70, 211.0)
    assert (d.stable_window_s, d.panic_window_percentage, d.panic_threshold_percentage) == (60.0, 10.0, 200.0)
    assert (d.max_scale_up_rate, d.max_scale_down_rate, d.scale_down_delay_s) == (1000.0, 2.0, 0.0)
    assert (d.scale_to_zero_pod_retention_s, d.initial_scale, d.allow_zero_initial_scale) == (0.0, 1, False)
    assert (d.min_scale, d.max_scale, d.activation_scale, d.container_concurrency) == (0, 0, 1, 0)


LEGACY = [("minScale", "min_scale", 2), ("maxScale", "max_scale", 7), ("initialScale", "initial_scale", 3),
          ("targetBurstCapacity", "target_burst_capacity", 50.0),
          ("panicWindowPercentage", "panic_window_percentage", 20.0),
          ("panicThresholdPercentage", "panic_threshold_percentage", 300.0),
          ("targetUtilizationPercentage", "target_utilization", 0.5),
          ("metricAggregationAlgorithm", "aggregation", "weighted-exponential")]


@pytest.mark.parametrize("key,attribute,value", LEGACY, ids=[k for k, _, _ in LEGACY])
def test_legacy_camelcase_keys(key, attribute, value):
    raw = {"target_utilization": "50"}.get(attribute, str(value))
    c, problems = read({P + key: raw})
    assert problems == [] and changed(c) == {attribute: value}


def test_default_path_is_the_manifests_annotations():
    problems: list = []
    from_annotations({P + "window": "1s"}, 0, problems)
    assert [p.path for p in problems] == [f"metadata.annotations[{P}window]"]


def test_legacy_key_error_names_the_kebab_annotation():
    c, problems = read({P + "minScale": "-2"})
    assert [(p.path, p.value) for p in problems] == [(f"{PATH}[{P}min-scale]", "-2")]


def test_unknown_annotation_named_with_a_suggestion():
    _, problems = read({P + "windw": "60s"})
    assert [(p.path, p.value, p.allowed) for p in problems] == [
        (f"{PATH}[{P}windw]", "60s", f"unknown autoscaling annotation; did you mean {P}window?")]
    _, problems = read({P + "zzzzzz": "1"})
    assert [(p.path, p.allowed) for p in problems] == [(f"{PATH}[{P}zzzzzz]", "unknown autoscaling annotation")]


def test_keywords_override_the_annotations_kserve_writes_over():
    """KServe's translated fields come in as keywords. SetAutoScalingAnnotations (kserve
    pkg/controller/v1alpha1/utils/utils.go) writes scaleTarget, scaleMetric, minReplicas and a non-zero
    maxReplicas over the ISVC's own annotations, so those are neither read nor checked; the class only where the
    ISVC has no class annotation."""
    kw = dict(min_scale=2, max_scale=9, target=5.0, metric="rps", autoscaler_class=HPA_CLASS)
    c, problems = read({}, **kw)
    assert problems == [] and changed(c) == {"min_scale": 2, "max_scale": 9, "target": 5.0, "metric": "rps",
                                             "autoscaler_class": HPA_CLASS}
    ann = {P + "min-scale": "3", P + "max-scale": "8", P + "target": "6", P + "metric": "concurrency",
           P + "class": KPA_CLASS}
    c, problems = read(ann, **kw)
    assert problems == [] and changed(c) == {"min_scale": 2, "max_scale": 9, "target": 5.0, "metric": "rps"}
    c, problems = read(ann)                         # without KServe's fields the annotations count
    assert problems == [] and changed(c) == {"min_scale": 3, "max_scale": 8, "target": 6.0}
    # An overwritten annotation never reaches Knative: not refused; without the keyword it is.
    c, problems = read({P + "target": "0", P + "metric": "cpu", P + "min-scale": "-1"}, target=4.0,
                       metric="concurrency", min_scale=1)
    assert problems == [] and (c.target, c.metric, c.min_scale) == (4.0, "concurrency", 1)
    c, problems = read({P + "target": "0"})
    assert [p.path for p in problems] == [f"{PATH}[{P}target]"] and c.target is None
    c, problems = read({}, metric="latency", autoscaler_class="custom")   # a bad keyword is not the user's
    assert problems == [] and changed(c) == {}


@pytest.mark.parametrize("ann,kw,problem", [
    ({"min-scale": "3", "max-scale": "2"}, {}, 3),
    ({"min-scale": "3"}, {"max_scale": 2}, 3),
    ({"max-scale": "1"}, {"min_scale": 2}, 2),
    ({"min-scale": "3", "max-scale": "3"}, {}, None),
    ({"min-scale": "3", "max-scale": "0"}, {}, None),                 # 0 = unlimited
    ({"min-scale": "3"}, {}, None),
], ids=["min>max", "min>max-kw", "kw-min>max", "min=max", "max-unlimited", "no-max"])
def test_min_scale_must_not_exceed_max_scale(ann, kw, problem):
    """annotation_validation.go validateMinMaxScale: max-scale != 0 and max < min is an error."""
    c, problems = read({P + k: v for k, v in ann.items()}, **kw)
    if problem is None:
        assert problems == []
        return
    assert [(p.path, p.value) for p in problems] == [(f"{PATH}[{P}min-scale]", problem)]
    assert problems[0].allowed == f"min-scale must not exceed max-scale ({c.max_scale})"
    problems = []
    from_annotations({P + k: v for k, v in ann.items()}, 0, problems, PATH, check_bounds=False, **kw)
    assert problems == []


# -- serving.knative.dev/progress-deadline (the activation timeout) and the panic window -------------------------
D = "serving.knative.dev/progress-deadline"


@pytest.mark.parametrize("value, seconds", [("1200s", 1200.0), ("20m", 1200.0), ("1h1m1s", 3661.0), ("1s", 1.0),
                                            ("1500ms", None), ("0s", None), ("0", None), ("-5m", None),
                                            ("10 m", None), (" 10m", None), ("10", None), (600, None), ("365d", None)])
def test_progress_deadline_annotation(value, seconds):
    """revision_validation.go validateProgressDeadlineAnnotation: a Go duration at second precision, not
    negative; Kubernetes then needs progressDeadlineSeconds > minReadySeconds (0). The activation timeout is it
    + 30 s (kpa/scaler.go activationTimeoutBuffer); absent, config-deployment's 600 s."""
    c, problems = read({D: value})
    if seconds is None:
        assert [(p.path, p.value) for p in problems] == [(f"{PATH}[{D}]", value)]
        assert "positive duration in whole seconds" in problems[0].allowed
        assert c.progress_deadline_s == 600.0
    else:
        assert problems == [] and changed(c) == {"progress_deadline_s": seconds}
        assert c.activation_timeout_s == seconds + 30.0
    assert read({})[0].activation_timeout_s == 630.0


@pytest.mark.parametrize("window, pct, panic", [
    (25, 10, 3), (45, 10, 5), (65, 10, 7), (85, 10, 9),      # half a second: Go's Duration.Round goes up
    (60, 10, 6), (6, 10, 1), (14, 10, 1), (15, 10, 2), (24, 10, 2), (6, 1, 1), (3600, 100, 3600),
    (10, 33.3, 3), (10, 35, 4), (7, 50, 4), (3, 50, 2)])
def test_panic_window_rounds_like_knative(window, pct, panic):
    """resources/metric.go MakeMetric: Duration(float64(stable) * pct / 100).Round(time.Second), at least the
    1 s bucket; Round takes halves away from zero (Python's round() would give 2/4/6/8 s for the first four)."""
    assert AutoscalerConfig(stable_window_s=window, panic_window_percentage=pct).panic_window_s == panic
