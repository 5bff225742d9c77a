"""The rollout-capacity check's expected load (gate.rollout_capacity.expected_loads): the gate's estimate across its
replications, the upper end of its 95 % interval, not replication 0's count; the initial scale when no steady
simulation ran, and every message says which figure it used. `pulumi up` and `preflight check` share it."""

from __future__ import annotations

import copy

import pulumi
import pytest
from rich.console import Console

import program
from gate.rollout_capacity import capacity_problems, expected_loads
from gate import start_check
from gate.verdict import format_estimate
from offline import run_program
from preflight import check as cli
from simulation.executor_protocol import SerialExecutor
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config

P = "kserve-preflight"


def _small_dev(seed: int = 1, max_size: int = 2, **gate) -> object:
    """dev on 2 GPUs at chat 0.2 req/s: about 1.1 ready pods on average, so a rollout (old at its load + new at
    initial scale 1) needs 3 GPUs; replication 0 of gate.seed 1 happens to average exactly 1 pod."""
    project, values = stack_config_values("dev")
    values = copy.deepcopy(project_values(values, project))
    values["gpuNodeGroup"]["maxSize"] = max_size
    values["services"][0]["maxReplicas"] = min(max_size, values["services"][0]["maxReplicas"])
    values["services"][0]["workload"]["rate"] = 0.2
    values["gate"] = {**(values.get("gate") or {}), "seed": seed, "scenarios": ["steady"], **gate}
    return parse_stack_config(values, project, "dev", "test")


def test_the_load_is_the_upper_end_of_the_gates_interval_not_replication_0():
    cfg = _small_dev(seed=1)
    [v] = start_check(cfg, SerialExecutor())()
    load = v.metrics["mean ready replicas"]
    # The case the check exists for: one run at 1 pod, while the runs together cannot rule out more than 1.
    assert v.report["replicas"]["mean"] <= 1 < load.hi
    figures, basis = expected_loads(cfg, [v])
    assert figures == {"chat": load.hi}
    assert format_estimate(load) in basis["chat"] and "upper end of the 95% interval" in basis["chat"]
    with pytest.raises(pulumi.RunError) as err:
        program.check_rollouts(cfg, [v])
    message = str(err.value)
    assert "rollout capacity: the next rollout would stall" in message and "= 3 GPUs > 2" in message
    assert f"(expected load: {basis['chat']})" in message


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_the_verdict_does_not_hang_on_which_seed_replication_0_drew(seed):
    cfg = _small_dev(seed=seed)
    problems = capacity_problems(cfg, start_check(cfg, SerialExecutor())())
    assert [p.path for p in problems] == ["services[0]"]


def test_without_a_steady_scenario_the_check_takes_the_initial_scale_and_says_so():
    """gate.scenarios without `steady`: no estimate of the expected load, so the static bound (the initial scale),
    not a stress scenario's replicas (a spike's load is not the expected one); the figure is named either way."""
    cfg = _small_dev(scenarios=["spike"])
    verdicts = start_check(cfg, SerialExecutor())()
    assert [v.scenario for v in verdicts] == ["spike"]
    figures, basis = expected_loads(cfg, verdicts)
    assert figures == {} and basis == {"chat": "not simulated (gate.scenarios has no 'steady'), so its initial scale"}
    assert capacity_problems(cfg, verdicts) == []   # 1 + 1 = 2 GPUs fit
    [problem] = capacity_problems(_small_dev(max_size=1, scenarios=["spike"]), verdicts)   # 2 > 1
    assert str(problem).endswith("(expected load: not simulated (gate.scenarios has no 'steady'), so its initial "
                                 "scale)")


def test_a_gate_that_is_off_is_named_in_the_programs_message(registered):
    def edit(c):
        c[f"{P}:gpuNodeGroup"].update(maxSize=4)   # 16 GPUs for chat's 10 + 10 and code's 1
        c[f"{P}:gate"] = {"enabled": False}

    with pytest.raises(pulumi.RunError) as err:
        run_program("prod", edit=edit)
    assert "(expected load: not simulated (gate.enabled is false), so its initial scale)" in str(err.value)
    assert registered == []


def test_pulumi_up_stops_on_the_gates_estimate_before_any_resource(registered):
    """The program as `pulumi up` runs it: gate on (steady only), the 2-GPU group refused on the estimate."""
    def edit(c):
        c[f"{P}:gpuNodeGroup"].update(maxSize=2)
        c[f"{P}:services"][0]["workload"]["rate"] = 0.2
        c[f"{P}:gate"] = {**(c.get(f"{P}:gate") or {}), "seed": 1, "scenarios": ["steady"]}

    with pytest.raises(pulumi.RunError) as err:
        run_program("dev", edit=edit)
    assert "rollout capacity: the next rollout would stall" in str(err.value)
    assert "the upper end of the 95% interval of the steady simulation's mean ready replicas" in str(err.value)
    assert registered == []


def test_preflight_check_uses_the_same_figure_and_shows_it(monkeypatch):
    cfg = _small_dev(seed=1)
    monkeypatch.setattr(cli, "load_stack", lambda stack, *a, **k: cfg)
    result = cli.check("dev", executor=SerialExecutor())
    figures, basis = expected_loads(cfg, result.verdicts)
    assert [str(p) for p in capacity_problems(cfg, result.verdicts)] == result.rollout != []
    assert result.rollout_load == basis and result.to_dict()["rollout_load"] == basis
    assert not result.passed
    console = Console(record=True, width=400)
    cli.print_result(result, console)
    text = console.export_text()
    assert f"(expected load: {basis['chat']})" in text.replace("\n", "")


def test_a_passing_check_still_names_its_figure(monkeypatch):
    project, values = stack_config_values("dev")
    cfg = parse_stack_config(copy.deepcopy(project_values(values, project)), project, "dev", "test")
    result = cli.StackCheck("dev", resources=1, cfg=cfg, rollout_load={"chat": "2.5, the upper end of …"})
    monkeypatch.setattr("preflight.advice.next_steps", lambda *a: [])
    console = Console(record=True, width=400)
    cli.print_result(result, console)
    assert "rollout capacity: pass\n    expected load of chat: 2.5, the upper end of …" in console.export_text()


def _initial_scale_3(c: dict, max_size: int = 5) -> None:
    """dev's chat at 0.2 req/s (about 1.1 pods), minReplicas 1, initial-scale 3, on `max_size` 1-GPU nodes."""
    c[f"{P}:gpuNodeGroup"]["maxSize"] = max_size
    chat = c[f"{P}:services"][0]
    chat.update(maxReplicas=max_size, minReplicas=1)
    chat["workload"]["rate"] = 0.2
    chat["annotations"] = {**(chat.get("annotations") or {}), "autoscaling.knative.dev/initial-scale": "3"}
    c[f"{P}:gate"] = {**(c.get(f"{P}:gate") or {}), "seed": 1, "scenarios": ["steady"]}


def _config(max_size: int = 5):
    project, values = stack_config_values("dev")
    values = copy.deepcopy(values)
    _initial_scale_3(values, max_size)
    return parse_stack_config(project_values(values, project), project, "dev", "test")


def test_a_running_revision_is_held_at_its_load_not_its_initial_scale(monkeypatch):
    """Review 12 (journey, F8): Knative applies initial-scale only until a revision first reaches it
    (kpa/scaler.go), so during a rollout the old revision holds its load, ⌈1.1⌉ = 2 pods, and the new one 3: 5 GPUs
    fit. The check held the old one at its initial scale 3 (6 > 5), and `preflight check` refused in its program
    run, whose gate is off, before the gate's estimate was used."""
    cfg = _config()
    [v] = start_check(cfg, SerialExecutor())()
    assert 1 < v.metrics["mean ready replicas"].hi <= 2
    assert capacity_problems(cfg, [v]) == []
    [problem] = capacity_problems(cfg, [])             # not simulated: the initial scale, 3 + 3 = 6 > 5
    assert "old revision at its initial scale 3" in str(problem) and "= 6 GPUs > 5" in str(problem)
    [problem] = capacity_problems(_config(max_size=4), [v])
    assert "old revision at 2 pod(s) (its expected load" in str(problem) and "= 5 GPUs > 4" in str(problem)

    import offline

    real = offline.run_program
    monkeypatch.setattr(offline, "run_program",
                        lambda stack, edit, **kw: real(stack, edit=lambda c: (_initial_scale_3(c), edit(c)), **kw))
    monkeypatch.setattr(cli, "load_stack", lambda stack, *a, **k: cfg)
    result = cli.check("dev", executor=SerialExecutor())
    assert result.rollout == [] and result.resources > 0
