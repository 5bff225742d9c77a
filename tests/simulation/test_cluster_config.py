"""Knative's cluster-wide config-autoscaler: read as `NewConfigFromMap` reads it, checked as `validate()` checks it
(knative/serving pkg/autoscaler/config/config.go), and what the simulation does with it.

Each rejection row is the first value past one of `validate()`'s rules; each must name the key, keep the value and
say what is allowed. The cluster-only keys written as annotations are refused with where they belong.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.autoscaler.cluster_config import (DEFAULT, HPA_CLASS, KEYS, KPA_CLASS, _violations,
                                                  parse_config_autoscaler)
from simulation.autoscaler.config import AutoscalerConfig, from_annotations, from_cluster
from validation.errors import InputError

P = "autoscaling.knative.dev/"
PATH = "config_autoscaler"


def read(raw):
    problems: list = []
    return parse_config_autoscaler(raw, PATH, problems), problems


# (data, {attribute: value}): accepted values, in the units the simulation reads
ACCEPTED = [
    ({"max-scale-up-rate": "1.001"}, {"max_scale_up_rate": 1.001}),            # config_test.go: > 1 is enough
    ({"max-scale-down-rate": 4}, {"max_scale_down_rate": 4.0}),                 # a YAML number
    ({"container-concurrency-target-percentage": "85"}, {"container_concurrency_target_fraction": 0.85}),
    ({"container-concurrency-target-percentage": "0.5"}, {"container_concurrency_target_fraction": 0.5}),  # legacy
    ({"stable-window": "6s"}, {"stable_window_s": 6.0}),
    ({"stable-window": "1h"}, {"stable_window_s": 3600.0}),
    ({"scale-down-delay": "2m"}, {"scale_down_delay_s": 120.0}),
    ({"scale-to-zero-grace-period": "1500ms"}, {"scale_to_zero_grace_period_s": 1.5}),
    ({"scale-to-zero-pod-retention-period": "90s"}, {"scale_to_zero_pod_retention_s": 90.0}),
    ({"target-burst-capacity": "-1"}, {"target_burst_capacity": -1.0}),
    ({"panic-window-percentage": "100"}, {"panic_window_percentage": 100.0}),
    ({"panic-threshold-percentage": "50"}, {"panic_threshold_percentage": 50.0}),  # validate() has no range
    ({"enable-scale-to-zero": "false"}, {"enable_scale_to_zero": False}),
    ({"enable-scale-to-zero": False}, {"enable_scale_to_zero": False}),
    ({"initial-scale": "0", "allow-zero-initial-scale": "true"}, {"initial_scale": 0,
                                                                   "allow_zero_initial_scale": True}),
    ({"max-scale-limit": "50", "max-scale": "20"}, {"max_scale_limit": 50, "max_scale": 20}),
    ({"pod-autoscaler-class": HPA_CLASS}, {"pod_autoscaler_class": HPA_CLASS}),
]


@pytest.mark.parametrize("data,expected", ACCEPTED, ids=[str(d) for d, _ in ACCEPTED])
def test_accepted_values_set_exactly_their_attributes(data, expected):
    c, problems = read(data)
    assert problems == []
    assert {a: getattr(c, a) for a in expected} == expected
    assert all(getattr(c, a) == getattr(DEFAULT, a) for a, _ in KEYS.values() if a not in expected)


# One row per rule of validate() (and per parse failure of NewConfigFromMap).
REJECTED = [
    ({"scale-to-zero-grace-period": "0s"}, "scale-to-zero-grace-period", "expected a positive duration"),
    ({"scale-down-delay": "1500ms"}, "scale-down-delay", "expected a duration >= 0s in whole seconds"),
    ({"target-burst-capacity": "-2"}, "target-burst-capacity", "expected a number >= 0, or -1 for unlimited"),
    ({"container-concurrency-target-percentage": "101"}, "container-concurrency-target-percentage",
     "expected a percentage in (0, 100]"),
    ({"container-concurrency-target-default": "0.01"}, "container-concurrency-target-default",
     "× container-concurrency-target-default >= 0.01"),
    ({"requests-per-second-target-default": "0.001"}, "requests-per-second-target-default",
     "expected a number >= 0.01"),
    ({"activator-capacity": "0.5"}, "activator-capacity", "expected a number >= 1"),
    ({"max-scale-up-rate": "1"}, "max-scale-up-rate", "expected a number greater than 1.0"),
    ({"max-scale-down-rate": "1.0"}, "max-scale-down-rate", "expected a number greater than 1.0"),
    ({"stable-window": "5s"}, "stable-window", "expected a duration between 6s and 1h in whole seconds"),
    ({"stable-window": "61500ms"}, "stable-window", "in whole seconds"),
    ({"panic-window-percentage": "0.5"}, "panic-window-percentage", "expected a number between 1 and 100"),
    ({"initial-scale": "0"}, "initial-scale", "or 0 with allow-zero-initial-scale"),
    ({"min-scale": "-1"}, "min-scale", "expected an integer >= 0"),
    ({"max-scale": "8", "max-scale-limit": "5"}, "max-scale", "between 1 and max-scale-limit (5)"),
    ({"max-scale-limit": "5"}, "max-scale", "its default does not satisfy this"),   # default 0 = unlimited
    ({"max-scale-limit": "-1"}, "max-scale-limit", "expected an integer >= 0"),
    ({"min-scale": "4", "max-scale": "3"}, "min-scale", "expected at most max-scale (3)"),
    # parse failures: strconv / time.ParseDuration, as knative.dev/pkg configmap/parser calls them
    ({"max-scale-up-rate": "fast"}, "max-scale-up-rate", "expected a number (config.go NewConfigFromMap)"),
    ({"max-scale-up-rate": "nan"}, "max-scale-up-rate", "expected a number"),
    ({"max-scale-up-rate": " 10"}, "max-scale-up-rate", "expected a number"),
    ({"initial-scale": "1.5"}, "initial-scale", "expected a 32-bit integer"),
    ({"max-scale": str(2**31)}, "max-scale", "expected a 32-bit integer"),
    ({"stable-window": "60"}, "stable-window", "expected a Go duration"),
    ({"stable-window": 60}, "stable-window", "expected a Go duration"),
    ({"enable-scale-to-zero": "yes"}, "enable-scale-to-zero", "expected true or false"),
    ({"pod-autoscaler-class": "custom.example.com"}, "pod-autoscaler-class", "only these are simulated"),
    ({"max-scale-up-rat": "10"}, "max-scale-up-rat", "did you mean 'max-scale-up-rate'?"),
]


@pytest.mark.parametrize("data,key,fragment", REJECTED, ids=[str(d) for d, _, _ in REJECTED])
def test_rejected_values_name_key_value_and_rule(data, key, fragment):
    c, problems = read(data)
    assert len(problems) == 1, [str(p) for p in problems]
    [p] = problems
    assert p.path == f"{PATH}[{key}]" and p.value == data.get(key) and fragment in p.allowed
    assert c == DEFAULT, "a refused config leaves Knative's defaults"


def test_not_a_mapping():
    c, problems = read(["max-scale-up-rate"])
    assert [p.path for p in problems] == [PATH] and c == DEFAULT


def test_data_holds_every_given_key_as_given():
    """Values at Knative's defaults too: the patch must overwrite an admin's other value with the simulated one."""
    c, problems = read({"max-scale-up-rate": "10", "stable-window": "60s",
                        "container-concurrency-target-percentage": "70",
                        "enable-scale-to-zero": False, "scale-down-delay": "0s"})
    assert problems == [] and c.data() == {"max-scale-up-rate": "10", "stable-window": "60s", "scale-down-delay": "0s",
                                           "container-concurrency-target-percentage": "70",
                                           "enable-scale-to-zero": "false"}
    assert DEFAULT.data() == {}


def test_defaults_are_knatives_and_build_the_revision_defaults():
    """config.go defaultConfig; a revision without annotations takes every value from the cluster."""
    assert read({})[0] == read(None)[0] == DEFAULT
    assert from_cluster(DEFAULT, 3) == AutoscalerConfig(container_concurrency=3)


# -- the annotation reader on a cluster ---------------------------------------------------------------------------

def annotate(ann, cluster=DEFAULT, **kw):
    problems: list = []
    return from_annotations({P + k: v for k, v in ann.items()}, 0, problems, "svc", cluster=cluster, **kw), problems


@pytest.mark.parametrize("key", ["max-scale-up-rate", "max-scale-down-rate"])
def test_cluster_only_keys_are_refused_as_annotations(key):
    """register.go has no such annotation and MakeDecider takes both rates from the ConfigMap: the cluster would
    ignore the annotation (ValidateAnnotations does not refuse unknown keys), so the preflight refuses it."""
    c, problems = annotate({key: "4"})
    assert [(p.path, p.value) for p in problems] == [(f"svc[{P}{key}]", "4")]
    assert f"not a per-revision annotation in Knative (the cluster ignores it): {key} is a cluster-wide setting " \
           "of knative-serving/config-autoscaler; set it in the stack's knative.autoscaler or a scenario's " \
           "config_autoscaler" == problems[0].allowed
    assert c == AutoscalerConfig()


def test_cluster_values_are_the_revision_defaults_and_annotations_override_them():
    cluster, _ = read({"max-scale-up-rate": "2", "stable-window": "120s", "scale-to-zero-grace-period": "45s",
                       "container-concurrency-target-percentage": "50", "enable-scale-to-zero": "false",
                       "target-burst-capacity": "0", "initial-scale": "3"})
    c, problems = annotate({}, cluster)
    assert problems == []
    assert (c.max_scale_up_rate, c.stable_window_s, c.scale_to_zero_grace_period_s, c.target_utilization,
            c.enable_scale_to_zero, c.target_burst_capacity, c.initial_scale) == (2.0, 120.0, 45.0, 0.5, False, 0.0, 3)
    c, problems = annotate({"window": "30s", "target-burst-capacity": "10", "initial-scale": "1"}, cluster)
    assert problems == [] and (c.stable_window_s, c.target_burst_capacity, c.initial_scale) == (30.0, 10.0, 1)


def test_the_rps_metric_ignores_the_concurrency_percentage():
    """target.go ResolveMetricTarget: rps uses TargetUtilization (0.7, no ConfigMap key)."""
    cluster, _ = read({"container-concurrency-target-percentage": "50"})
    assert annotate({"metric": "rps"}, cluster)[0].target_utilization == 0.7
    assert annotate({"metric": "concurrency"}, cluster)[0].target_utilization == 0.5
    assert annotate({"metric": "rps", "target-utilization-percentage": "40"}, cluster)[0].target_utilization == 0.4


def test_zero_initial_scale_needs_the_cluster_to_allow_it():
    """annotation_validation.go validateInitialScale: "initial-scale=0 not allowed by cluster"."""
    c, problems = annotate({"initial-scale": "0"})
    assert [p.path for p in problems] == [f"svc[{P}initial-scale]"]
    assert "allow-zero-initial-scale" in problems[0].allowed and c.initial_scale == 1
    allowing, _ = read({"allow-zero-initial-scale": "true"})
    c, problems = annotate({"initial-scale": "0"}, allowing)
    assert problems == [] and (c.initial_scale, c.allow_zero_initial_scale) == (0, True)
    c, problems = annotate({"initial-scale": "0"}, refuse_zero_initial_scale=False)  # the stack's admission check
    assert problems == [] and c.initial_scale == 1                                    # GetInitialScale: the cluster's


def test_max_scale_limit_bounds_a_revisions_max_scale():
    """annotation_validation.go validateMaxScaleWithinLimit: 1 <= max-scale <= max-scale-limit when a limit is set."""
    cluster, _ = read({"max-scale-limit": "10", "max-scale": "4"})
    assert annotate({}, cluster)[0].max_scale == 4                       # the cluster's default max-scale
    assert annotate({"max-scale": "10"}, cluster)[1] == []
    for ann, kw in (({"max-scale": "11"}, {}), ({"max-scale": "0"}, {}), ({}, {"max_scale": 12})):
        _, problems = annotate(ann, cluster, **kw)
        assert [p.path for p in problems] == [f"svc[{P}max-scale]"] and "max-scale-limit (10)" in problems[0].allowed


def test_a_cluster_default_hpa_class_never_reaches_a_kserve_revision(scn):
    """KServe's SetAutoScalingAnnotations (pkg/controller/v1alpha1/utils/utils.go) gives an ISVC without a class
    annotation the KPA class, so config-autoscaler's pod-autoscaler-class does not apply to it; the ISVC's own
    hpa class annotation is still refused as not simulated in Knative mode."""
    from simulation import load_scenario
    mapping = {"inferenceService": scn.isvc(), "workload": {"kind": "poisson", "rate": 1}, "duration_s": 60,
               "config_autoscaler": {"pod-autoscaler-class": HPA_CLASS}}
    assert load_scenario(mapping).serving.kpa.autoscaler_class == KPA_CLASS
    own = {**mapping, "inferenceService": scn.isvc(annotations={"autoscaling.knative.dev/class": HPA_CLASS})}
    with pytest.raises(InputError) as err:
        load_scenario(own)
    assert [(p.path, p.value) for p in err.value.problems] == [
        ("inferenceService.metadata.annotations[autoscaling.knative.dev/class]", HPA_CLASS)]


# -- scenarios ------------------------------------------------------------------------------------------------------

def step_load(scn, **extra) -> dict:
    """1 Ready pod, a load that wants 10, and new pods that take 40 s to warm up: what the decider asks for."""
    return {"inferenceService": scn.isvc(cc=1, min_replicas=1, max_replicas=10, gpus=0),
            "workload": {"kind": "poisson", "rate": 8.0}, "server": {"kind": "simple", "base_s": 1.0},
            "cluster": {"warmup_s": 40}, "duration_s": 30, "series_interval_s": 1.0, **extra}


def test_max_scale_up_rate_limits_each_ticks_scale_up(scn):
    """autoscaler.go Scale: desired <= ceil(max-scale-up-rate × ready) (autoscaler_test.go
    TestAutoscalerRateLimitScaleUp). 1 Ready pod: at most 2 with rate 2; Knative's default 1000 lets it ask for
    the 10 the load needs."""
    free = scn.run(step_load(scn))["replica_series"]
    limited = scn.run(step_load(scn, config_autoscaler={"max-scale-up-rate": "2"}))["replica_series"]
    assert set(free["ready"]) == set(limited["ready"]) == {1}
    assert max(free["desired"]) == 10
    assert max(limited["desired"]) == 2


def test_a_bad_config_autoscaler_is_a_scenario_problem(scn):
    from simulation import load_scenario
    with pytest.raises(InputError) as err:
        load_scenario(step_load(scn, config_autoscaler={"stable-window": "2h"}))
    assert [(p.path, p.value) for p in err.value.problems] == [("config_autoscaler[stable-window]", "2h")]


def test_the_cli_exits_2_on_a_bad_config_autoscaler(scn, tmp_path, capsys):
    import yaml

    from simulation.__main__ import main
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(step_load(scn, config_autoscaler={"max-scale-down-rate": "1"})))
    with pytest.raises(SystemExit) as exc:
        main(["run", str(path)])
    assert exc.value.code == 2
    assert "config_autoscaler[max-scale-down-rate]: got '1'; expected a number greater than 1.0" in \
        capsys.readouterr().err


# -- fuzz: any input is a settings object or problems, never an exception ------------------------------------------

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**4), st.integers(), st.floats(),
                   st.sampled_from(["0", "1", "2", "1.5", "100", "-1", "0s", "30s", "90s", "1h", "2h", "500ms", "true",
                                    "false", "t", "nan", "inf", " 3", "1_0", "", HPA_CLASS]),
                   st.text(max_size=8), st.lists(st.integers(), max_size=2))
DATA = st.dictionaries(st.sampled_from(list(KEYS) + ["max-scale-up-rat", "window"]), VALUES, max_size=6)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(DATA)
def test_any_config_autoscaler_parses_or_names_its_problems(data):
    c, problems = read(data)
    if problems:
        assert c == DEFAULT and all(p.path.startswith(f"{PATH}[") for p in problems)
        return
    assert list(_violations(c, set(data))) == []
    # The patch's data, read back as the cluster would, is the same cluster: what is simulated is what is applied.
    again, problems = read(c.data())
    assert problems == [] and again == c


def test_every_cluster_setting_reaches_a_revision_without_annotations():
    """`from_cluster` copies each per-revision config-autoscaler field by hand: a field it drops would silently
    leave a stack's `knative.autoscaler` value unsimulated (e.g. the cluster-only max-scale-down-rate)."""
    import dataclasses

    from simulation.autoscaler.cluster_config import ClusterAutoscaler
    from simulation.autoscaler.config import AutoscalerConfig, from_cluster

    renamed = {"pod_autoscaler_class": "autoscaler_class",
               "container_concurrency_target_fraction": "target_utilization"}
    not_per_revision = {"activator_capacity", "max_scale_limit", "given"}
    base = ClusterAutoscaler()
    checked = 0
    for f in dataclasses.fields(ClusterAutoscaler):
        if f.name in not_per_revision:
            continue
        v = getattr(base, f.name)
        new = ((not v) if isinstance(v, bool)
               else (v + 7 if isinstance(v, (int, float)) else "hpa.autoscaling.knative.dev"))
        got = from_cluster(dataclasses.replace(base, **{f.name: new}), 1)
        assert getattr(got, renamed.get(f.name, f.name)) == new, f.name
        checked += 1
    assert checked == 18
    # …and a revision's defaults are the cluster's defaults (one statement of Knative's defaultConfig()).
    assert from_cluster(base, 1) == AutoscalerConfig(container_concurrency=1)
