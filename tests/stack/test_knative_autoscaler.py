"""`knative.autoscaler`: the cluster's config-autoscaler, checked at load as Knative's `validate()` checks it,
patched into knative-serving/config-autoscaler (only the non-default keys) when the stack manages it, and handed
to the simulation through the gate's scenarios (one knob, one place)."""

from __future__ import annotations

import pulumi
import pytest

from gate import scenario_for, trials
from manifests import render_stack
from offline import run_program
from stackconfig.load import load_stack, project_values, stack_config_values, stack_names
from stackconfig.schema import StackConfig, parse_stack_config
from validation.errors import InputError

P = "kserve-preflight"
KN = "autoscaling.knative.dev/"
PATCH = "kubernetes:core/v1:ConfigMapPatch"


def parse(edit, stack: str = "dev") -> StackConfig:
    project, values = stack_config_values(stack)
    values = project_values(values, project)
    edit(values)
    return parse_stack_config(values, project, stack)


def refused(edit, stack: str = "dev") -> list:
    with pytest.raises(InputError) as err:
        parse(edit, stack)
    return err.value.problems


def knative(**block):
    return lambda c: c.__setitem__("knative", block)


# One representative key per kind of rule in config.go validate().
@pytest.mark.parametrize("key,value,fragment", [
    ("max-scale-up-rate", "1", "expected a number greater than 1.0"),
    ("stable-window", "90m", "expected a duration between 6s and 1h in whole seconds"),
    ("scale-to-zero-grace-period", "0s", "expected a positive duration"),
    ("target-burst-capacity", "-3", "expected a number >= 0, or -1 for unlimited"),
    ("container-concurrency-target-percentage", "0", "expected a percentage in (0, 100]"),
    ("initial-scale", "0", "or 0 with allow-zero-initial-scale: true"),
    ("panic-window-percentage", "200", "expected a number between 1 and 100"),
    ("scale-down-delay", "soon", "expected a Go duration"),
])
def test_out_of_range_values_are_refused_at_load(key, value, fragment):
    problems = refused(knative(autoscaler={key: value}))
    assert [(p.path, p.value) for p in problems] == [(f"{P}:knative.autoscaler[{key}]", value)]
    assert fragment in problems[0].allowed


def test_a_refused_value_stops_the_program_before_any_resource(registered):
    def edit(c):
        c[f"{P}:knative"] = {"autoscaler": {"max-scale-down-rate": "0.5"}}

    with pytest.raises(pulumi.RunError, match=r"knative\.autoscaler\[max-scale-down-rate\]: got '0.5'"):
        run_program("dev", edit=edit)
    assert registered == []


@pytest.mark.parametrize("key", ["max-scale-up-rate", "max-scale-down-rate"])
def test_cluster_wide_keys_are_refused_as_service_annotations(key):
    problems = refused(lambda c: c["services"][0]["annotations"].update({KN + key: "3"}))
    assert [(p.path, p.value) for p in problems] == [(f"{P}:services[0].annotations[{KN}{key}]", "3")]
    assert problems[0].allowed.endswith(f"{key} is a cluster-wide setting of knative-serving/config-autoscaler; "
                                        "set it in the stack's knative.autoscaler")


def test_the_patch_owns_exactly_the_given_keys():
    """Under the mocks: a ConfigMapPatch of knative-serving/config-autoscaler with every given key as written (a
    value at Knative's default too: a cluster whose admin changed it must get the value simulated), registered
    before the services; config-features keeps its own patch."""
    import pulumi_kubernetes as k8s

    block = {"max-scale-up-rate": "10", "stable-window": "60s", "scale-down-delay": "0s",
             "enable-scale-to-zero": False, "scale-to-zero-grace-period": "45s"}

    def edit(c):
        c[f"{P}:gate"] = {"enabled": False}
        c[f"{P}:knative"] = {"autoscaler": block}

    r = run_program("dev", edit=edit)
    patches = {p.inputs["metadata"]["name"]: p.inputs for p in r.of_type(PATCH)
               if p.inputs["metadata"]["namespace"] == "knative-serving"}  # KServe's: test_kserve_config.py
    assert sorted(patches) == ["config-autoscaler", "config-features"]
    patch = patches["config-autoscaler"]
    assert patch["metadata"]["namespace"] == "knative-serving"
    assert patch["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
    assert patch["data"] == {"enable-scale-to-zero": "false", "max-scale-up-rate": "10", "scale-down-delay": "0s",
                             "scale-to-zero-grace-period": "45s", "stable-window": "60s"}
    deps = r.options["chat-isvc"].depends_on
    assert sum(isinstance(d, k8s.core.v1.ConfigMapPatch) and d._name.startswith("knative-") for d in deps) == 2
    assert r.of_type("kserve-preflight:serving:KnativeAutoscaler")


def test_the_rendered_patch_is_a_valid_config_map():
    from validation.kubernetes import validation_errors

    cfg = parse(knative(autoscaler={"stable-window": "90s", "enable-scale-to-zero": False}))
    [patch] = [m for m in render_stack(cfg) if m["metadata"]["name"] == "config-autoscaler"]
    assert patch["kind"] == "ConfigMap" and validation_errors(patch, cfg.cluster.kubernetes_version) == []
    assert patch["data"] == {"enable-scale-to-zero": "false", "stable-window": "90s"}


def test_a_value_at_knatives_default_is_patched_but_nothing_when_not_managed():
    """An explicit `stable-window: 60s` is written: an admin's 120s would otherwise stay while the gate
    simulated 60s. Control: `manageAutoscaler: false` patches nothing; no `autoscaler` patches nothing."""
    cfg = parse(knative(autoscaler={"stable-window": "60s"}))
    [patch] = [m for m in render_stack(cfg) if m["metadata"]["name"] == "config-autoscaler"]
    assert patch["data"] == {"stable-window": "60s"}
    assert scenario_for(cfg, cfg.services[0])["config_autoscaler"] == {"stable-window": "60s"}
    for block in ({"knative": {"manageAutoscaler": False, "autoscaler": {"max-scale-up-rate": "10"}}},
                  {"knative": {}}):
        cfg = parse(lambda c: c.update(block))
        assert [m["metadata"]["name"] for m in render_stack(cfg) if m["kind"] == "ConfigMap"
                and m["metadata"]["namespace"] == "knative-serving"] == ["config-features"]


@pytest.mark.parametrize("stack", stack_names())
def test_shipped_stacks_patch_nothing_and_simulate_knatives_defaults(stack):
    cfg = load_stack(stack)
    assert not [m for m in render_stack(cfg) if m["metadata"]["name"] == "config-autoscaler"]
    assert all("config_autoscaler" not in scenario_for(cfg, svc) for svc in cfg.services)


def test_the_gate_simulates_the_stacks_values_managed_or_not():
    """One knob, one place: the scenario carries the same data the patch writes (or the cluster has)."""
    for manage in (True, False):
        cfg = parse(knative(manageAutoscaler=manage, autoscaler={"max-scale-up-rate": "2", "stable-window": "90s"}))
        scenario = scenario_for(cfg, cfg.services[0])
        assert scenario["config_autoscaler"] == {"max-scale-up-rate": "2", "stable-window": "90s"}
    from simulation import load_scenario
    kpa = load_scenario(scenario).serving.kpa
    assert (kpa.max_scale_up_rate, kpa.stable_window_s) == (2.0, 120.0)  # dev's chat sets its window annotation
    assert trials(cfg, ("steady",))  # the gate's fleets validate with the key


def test_allow_zero_initial_scale_has_one_place():
    """`allowZeroInitialScale` is the older spelling of autoscaler.allow-zero-initial-scale; giving both is refused."""
    cfg = parse(knative(allowZeroInitialScale=True))
    assert (cfg.knative.allow_zero_initial_scale
            and cfg.knative.autoscaler.data() == {"allow-zero-initial-scale": "true"})
    assert parse(knative(autoscaler={"allow-zero-initial-scale": "true"})).knative == cfg.knative
    problems = refused(knative(allowZeroInitialScale=True, autoscaler={"allow-zero-initial-scale": "true"}))
    assert [p.path for p in problems] == [f"{P}:knative.allowZeroInitialScale"]
    ok = parse(lambda c: (knative(autoscaler={"allow-zero-initial-scale": "true"})(c),
                          c["services"][0]["annotations"].update({KN + "initial-scale": "0"})))
    assert scenario_for(ok, ok.services[0])["config_autoscaler"] == {"allow-zero-initial-scale": "true"}


def test_max_scale_limit_bounds_max_replicas():
    """annotation_validation.go validateMaxScaleWithinLimit: KServe writes max-scale from maxReplicas."""
    problems = refused(knative(autoscaler={"max-scale-limit": "1", "max-scale": "1"}))  # dev's chat: maxReplicas 2
    assert [(p.path, p.value) for p in problems] == [(f"{P}:services[0].maxReplicas", 2)]
    assert "max-scale-limit (1)" in problems[0].allowed
    parse(knative(autoscaler={"max-scale-limit": "2", "max-scale": "1"}))  # control


def test_the_rollout_check_starts_new_revisions_at_the_clusters_initial_scale():
    """GetInitialScale: a revision without the annotation starts at config-autoscaler initial-scale."""
    from gate.rollout_capacity import rollout_problems

    assert rollout_problems(parse(lambda c: None)) == []  # control: dev rolls out at initial-scale 1

    def edit(c):  # maxReplicas 3: an initial scale above it is refused at load (test_deploy_limits.py)
        knative(autoscaler={"initial-scale": "3"})(c)
        c["services"][0]["maxReplicas"] = 3

    problems = rollout_problems(parse(edit))
    assert [p.path for p in problems] == ["services[0]"] and "initial scale 3" in problems[0].allowed


def test_what_if_sets_reach_the_cluster_settings():
    """`preflight whatif --set knative.autoscaler.max-scale-up-rate=2`: the same schema, the same scenario key."""
    from preflight.overrides import apply_sets

    cfg = parse(lambda c: c.update(apply_sets(c, ["knative.autoscaler.max-scale-up-rate=2"])))
    assert scenario_for(cfg, cfg.services[0])["config_autoscaler"] == {"max-scale-up-rate": "2"}
    with pytest.raises(InputError, match=r"knative\.autoscaler\[max-scale-up-rate\]: got 1"):
        parse(lambda c: c.update(apply_sets(c, ["knative.autoscaler.max-scale-up-rate=1"])))


def test_no_scale_from_zero_scenario_where_the_cluster_never_scales_to_zero():
    """enable-scale-to-zero false: Knative keeps a revision at one pod at least (kpa/scaler.go handleScaleToZero),
    so the gate does not start dev's minReplicas-0 chat at zero."""
    from gate import stack_scenarios

    kinds = ("scaleFromZero",)
    assert [s.kind for s in stack_scenarios(parse(lambda c: None), kinds)] == ["scaleFromZero"]  # control
    assert stack_scenarios(parse(knative(autoscaler={"enable-scale-to-zero": "false"})), kinds) == []


@pytest.mark.parametrize("raw", ["max-scale-up-rate: 10", ["max-scale-up-rate"], 3])
def test_a_malformed_autoscaler_is_refused_beside_allow_zero_initial_scale(raw):
    """A string or list `autoscaler` is reported, not replaced by {} because allowZeroInitialScale is set."""
    for block in ({"autoscaler": raw, "allowZeroInitialScale": True}, {"autoscaler": raw}):
        problems = refused(knative(**block))
        assert [(p.path, p.value) for p in problems] == [(f"{P}:knative.autoscaler", raw)]
        assert "expected a mapping of knative-serving/config-autoscaler keys" in problems[0].allowed
    # control: a mapping (or none) merges with the older spelling
    for block in ({"autoscaler": {"max-scale-up-rate": "10"}, "allowZeroInitialScale": True},
                  {"allowZeroInitialScale": True}):
        assert parse(knative(**block)).knative.allow_zero_initial_scale


@pytest.mark.parametrize("key,value,fragment", [
    ("max-scale-up-rate", "\uff11\uff10", "expected a number"),          # fullwidth 10: float() reads it, Go not
    ("target-burst-capacity", "2\u0661\u0661", "expected a number"),    # Arabic-Indic digits
    ("stable-window", "\uff16\uff10s", "expected a Go duration"),
    ("initial-scale", "\uff12", "expected a 32-bit integer"),  # 2: dev's maxReplicas, the most it may be
])
def test_non_ascii_digits_are_refused_as_knative_refuses_them(key, value, fragment):
    """strconv.ParseFloat/ParseInt and time.ParseDuration read ASCII digits only; nothing is rendered."""
    problems = refused(knative(autoscaler={key: value}))
    assert [(p.path, p.value) for p in problems] == [(f"{P}:knative.autoscaler[{key}]", value)]
    assert fragment in problems[0].allowed
    ascii_value = value.translate({c: str(int(chr(c))) for c in map(ord, value) if chr(c).isdigit()})
    assert parse(knative(autoscaler={key: ascii_value})).knative.autoscaler.data() == {key: ascii_value}  # control


@pytest.mark.parametrize("key,value", [("window", "\uff11\uff12" + "0s"), ("window", "\uff16" + "0s"),
                                       ("target-burst-capacity", "\uff11\uff10"),
                                       ("panic-window-percentage", "\u0661\u0660")])
def test_non_ascii_digits_in_annotations_are_refused(key, value):
    problems = refused(lambda c: c["services"][0]["annotations"].update({KN + key: value}))
    assert [(p.path, p.value) for p in problems] == [(f"{P}:services[0].annotations[{KN}{key}]", value)]
    assert "expected a" in problems[0].allowed
    ascii_value = value.translate({c: str(int(chr(c))) for c in map(ord, value) if chr(c).isdigit()})
    parse(lambda c: c["services"][0]["annotations"].update({KN + key: ascii_value}))  # control: loads


def test_a_cluster_initial_scale_past_the_simulators_bound_names_the_stacks_key():
    """The gate's replica bound on the cluster's initial-scale names knative.autoscaler[initial-scale], where a
    stack user sets it (the scenario's own key is config_autoscaler[initial-scale]). Control: 2 is simulated.
    The load refuses an initial-scale above a service's maxReplicas (at most 1,000) first, naming the same key
    (test_deploy_limits.py), so the config reaches the gate past that check here."""
    from dataclasses import replace

    assert [p.path for p in refused(knative(autoscaler={"initial-scale": "20000"}))] == \
        [f"{P}:knative.autoscaler[initial-scale]"]
    cfg = parse(knative(autoscaler={"initial-scale": "2"}))
    auto = replace(cfg.knative.autoscaler, initial_scale=20000, given=(("initial-scale", "20000"),))
    with pytest.raises(InputError) as err:
        trials(replace(cfg, knative=replace(cfg.knative, autoscaler=auto)), ("steady",))
    [p] = {(p.path, p.value, p.allowed) for p in err.value.problems}
    assert p[0].endswith("/config_autoscaler[initial-scale]") and p[1] == 20000
    assert "expected at most 10,000 replicas" in p[2] and "the stack's knative.autoscaler[initial-scale]" in p[2]
    assert trials(cfg, ("steady",))
