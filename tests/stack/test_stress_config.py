"""`services[].stress` and `gate.scenarios`: read with the path-aware readers, every mistake named with its key."""

from __future__ import annotations

import pytest

from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError


def _parse(edit):
    project, values = stack_config_values("dev")
    values = project_values(values, project)
    edit(values)
    return parse_stack_config(values, project, "dev")


def test_stress_settings_and_slo_overrides_are_read():
    def edit(v):
        v["services"][0]["stress"] = {"spike": {"factor": 2, "durationS": 60, "slo": {"p99LatencyS": 90}},
                                      "rollout": False, "nodeLoss": {"enabled": False}}
    stress = _parse(edit).services[0].stress
    assert stress.spike.params == {"factor": 2.0, "duration_s": 60.0} and stress.spike.slo == {"p99_latency_s": 90.0}
    assert not stress.rollout.enabled and not stress.node_loss.enabled and stress.scale_from_zero.enabled


@pytest.mark.parametrize("stress, expected", [
    ({"spike": {"factr": 2}}, "services[0].stress.spike.factr: got 2; unknown key; did you mean 'factor'?"),
    ({"spike": {"factor": 0.5}}, "services[0].stress.spike.factor: got 0.5; expected a number between 1.0 and 100.0"),
    ({"nodeLoss": "yes"}, "services[0].stress.nodeLoss: got 'yes'; expected true, false or a mapping"),
    ({"rollout": {"slo": {"maxErrorRate": 2}}}, "services[0].stress.rollout.slo.maxErrorRate: got 2"),
    ({"spikes": {}}, "services[0].stress.spikes: got {}; unknown key; did you mean 'spike'?"),
])
def test_a_bad_stress_setting_names_key_value_and_what_is_allowed(stress, expected):
    with pytest.raises(InputError) as err:
        _parse(lambda v: v["services"][0].update(stress=stress))
    assert "kserve-preflight:" + expected in str(err.value)


def test_gate_scenarios_choose_what_the_gate_runs():
    cfg = _parse(lambda v: v.update(gate={"scenarios": ["spike", "steady"]}))
    assert cfg.gate.scenarios == ("steady", "spike")
    with pytest.raises(InputError, match=r"gate\.scenarios: got \['stedy'\]; expected a non-empty list from steady"):
        _parse(lambda v: v.update(gate={"scenarios": ["stedy"]}))


def test_node_loss_takes_not_ready_and_replace_times_and_refuses_the_old_detect_key():
    """detectS stood for both moments (review rev9-sim finding 2): a stack file that still has it is told which two
    keys replace it; replaceS before notReadyS is refused; the gate's fleet gets the simulation's keys."""
    from gate import stack_scenarios

    def edit(v):
        v["services"][0]["stress"] = {"nodeLoss": {"notReadyS": 40, "replaceS": 95}}
    cfg = _parse(edit)
    assert cfg.services[0].stress.node_loss.params == {"not_ready_s": 40.0, "replace_s": 95.0}
    loss = next(s for s in stack_scenarios(cfg) if s.kind == "nodeLoss").fleet["node_loss"]
    assert loss == {"at_s": 120.0, "not_ready_s": 40.0, "replace_s": 95.0}
    default = _parse(lambda v: v["services"][0].update(stress={}))
    assert next(s for s in stack_scenarios(default) if s.kind == "nodeLoss").fleet["node_loss"] == \
        {"at_s": 120.0, "not_ready_s": 50.0}      # replace_s drawn per run (simulation/node_loss.py)
    with pytest.raises(InputError) as err:
        _parse(lambda v: v["services"][0].update(stress={"nodeLoss": {"detectS": 40}}))
    assert "services[0].stress.nodeLoss.detectS: got 40; detectS is gone" in str(err.value)
    assert "notReadyS" in str(err.value) and "replaceS" in str(err.value)
    with pytest.raises(InputError, match=r"nodeLoss\.replaceS: got 45\.0; expected at least notReadyS \(50\)"):
        _parse(lambda v: v["services"][0].update(stress={"nodeLoss": {"replaceS": 45}}))
