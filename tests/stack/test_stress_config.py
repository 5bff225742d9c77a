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
