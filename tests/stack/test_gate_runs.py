"""The runs the gate will make, bounded when the stack loads (stackconfig/stress.py, stackconfig/gate_runs.py) and
when a fleet loads (simulation/fleet.py): stress events inside their run, a whole fleet's requests (spikes
included) within one run's budget, a simulated rollout's deadline at most a day (session 8 fuzz review items 1, 3,
14). Each refusal names the stack's own key, the value and what is allowed; each has a passing control."""

from __future__ import annotations

import copy

import pytest

from simulation import load_scenario
from simulation.fleet import load_fleet
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

from tests.simulation.test_fleet import _fleet, _svc

PROJECT, VALUES = stack_config_values("dev")
DEADLINE = "serving.knative.dev/progress-deadline"


def _parse(edit):
    values = project_values(copy.deepcopy(VALUES), PROJECT)
    edit(values)
    return parse_stack_config(values, PROJECT, "dev")


def _refused(edit) -> str:
    with pytest.raises(InputError) as err:
        _parse(edit)
    return str(err.value)


def _stress(**stress):
    return lambda v: v["services"][0]["stress"].update(stress)


@pytest.mark.parametrize("stress, expected", [
    ({"spike": {"atS": 3600}}, "services[0].stress.spike.atS: got 3600.0; expected at most 600 − durationS (120) = "
                               "480: the spike must end within the stress run, which lasts 600 s"),
    ({"spike": {"atS": 300, "durationS": 400}}, "services[0].stress.spike.atS: got 300.0; expected at most 600 − "
                                                "durationS (400) = 200"),
    ({"spike": {"durationS": 500}}, "services[0].stress.spike.durationS: got 500.0; expected at most 600 − atS "
                                    "(120, the default) = 480"),
    ({"spike": {"durationS": 3600}}, "services[0].stress.spike.durationS: got 3600; expected a number between 1.0 "
                                     "and 600.0"),
    ({"nodeLoss": {"atS": 600}}, "services[0].stress.nodeLoss.atS: got 600.0; expected less than 600: the node must "
                                 "be lost within the stress run"),
])
def test_a_stress_event_after_the_run_ends_is_refused(stress, expected):
    """atS 3600 used to be accepted, and the 600-s spike / node-loss runs passed as plain steady runs."""
    assert "kserve-preflight:" + expected in _refused(_stress(**stress))


def test_stress_events_inside_the_run_are_accepted():
    cfg = _parse(_stress(spike={"atS": 480}, nodeLoss={"atS": 599}))
    assert cfg.services[0].stress.spike.params == {"at_s": 480.0}
    from gate import stack_scenarios
    spike = next(s for s in stack_scenarios(cfg, ("spike",)))
    assert spike.fleet["services"][0]["spike"] == {"factor": 3.0, "at_s": 480.0, "duration_s": 120.0}


def _rate(rate, i=0):
    return lambda v: v["services"][i]["workload"].update(rate=rate)


def test_a_spike_counts_against_the_request_budget():
    """rate 100 with a ×100 spike for 480 s: 60,000 own + 4,752,000 spike requests in the 600-s spike run. The
    budget used to see only rate × gate.durationS (90,000), and the spike run grew past 1 GB."""
    def edit(v):
        _rate(100)(v)
        _stress(spike={"factor": 100, "durationS": 480, "atS": 0})(v)
    msg = _refused(edit)
    assert ("services[0].stress.spike: got 'the spike run (600 s): chat spike 4,752,000 + chat 60,000 ≈ "
            "4,812,000 requests'; expected at most the request budget of 2,000,000 requests per run") in msg
    assert "raise gate.requestBudget" in msg and "max_requests" not in msg
    _parse(lambda v: (_rate(100)(v), _stress(spike={"factor": 3, "durationS": 120, "atS": 0})(v)))  # the control


def _two_services(rate):
    def edit(v):
        second = copy.deepcopy(v["services"][0])
        second["name"] = "chat2"
        v["services"].append(second)
        _rate(rate, 0)(v)
        _rate(rate, 1)(v)
    return edit


def test_the_budget_counts_every_service_of_a_run():
    """Two services at 1,500 req/s: 1,350,000 requests each over the 900-s steady run, each under the budget
    alone (accepted before), 3,060,000 together in the gate's longest fleet run (dev's rollout: 1,020 s)."""
    msg = _refused(_two_services(1500))
    assert ("got 'the rollout run, until past the progress deadline (1020 s): chat 1,530,000 + chat2 1,530,000 "
            "≈ 3,060,000 requests'; expected at most "
            "the request budget of 2,000,000 requests per run, all the services of a run together") in msg
    # the control: 1,836,000 together (each run within the budget; the whole gate's total, ≈ 134 M at 20
    # replications, has its own budget and test: tests/stack/test_gate_total_budget.py)
    _parse(lambda v: (_two_services(900)(v), v.setdefault("gate", {}).update(totalRequestBudget=10**9)))


def test_a_rollout_the_gate_cannot_simulate_names_the_annotation():
    """A progress deadline Knative accepts (2e9 s) passed the loader, then the gate named its internal key
    services[0].rollout.progress_deadline_s; a long one ran over the budget telling the user to raise
    max_requests, which a stack does not have."""
    def deadline(value, rollout=True):
        def edit(v):
            v["services"][0]["annotations"][DEADLINE] = value
            if not rollout:
                v["services"][0]["stress"]["rollout"] = False
        return edit
    msg = _refused(deadline("2000000000s"))
    assert (f"services[0].annotations[{DEADLINE}]: got '2000000000s'; expected at most 86400s (24h) while the gate "
            "simulates this service's rollout") in msg
    msg = _refused(lambda v: (deadline("86400s")(v), _rate(30)(v)))
    assert "the rollout run, until past the progress deadline (86520 s): chat 2,595,600 requests" in msg
    assert "raise gate.requestBudget" in msg and "max_requests" not in msg
    _parse(deadline("2000000000s", rollout=False))   # the control: the gate does not simulate this rollout


def _step(at, **gate):
    def edit(v):
        v["services"][0]["workload"].update(kind="step", at_s=at, to_rate=2.0)
        v.setdefault("gate", {}).update(gate)
    return edit


def test_a_workload_step_after_the_steady_run_is_refused():
    steady = {"scenarios": ["steady"]}
    assert ("services[0].workload.at_s: got 900.0; expected less than gate.durationS (900 s): the step would start "
            "after the run ends and never happen") in _refused(_step(900, **steady))
    _parse(_step(899, **steady))


def test_a_workload_step_after_the_shortest_gate_run_is_refused_at_load():
    """Every service runs in every scenario: a step at 700 s with `durationS: 900` passed the load check, then the
    gate's 600-s spike fleet refused it, naming the fleet's internal `duration_s`."""
    assert ("services[0].workload.at_s: got 700.0; expected less than the length of the gate's spike run (600 s)"
            in _refused(_step(700, durationS=900)))
    _parse(_step(599, durationS=900))
    _parse(_step(700, durationS=900, scenarios=["steady", "rollout"]))   # no 600-s run: the steady run bounds it


def test_a_scenario_spike_after_its_run_is_refused():
    sc = _svc("a", 0.5)
    sc["duration_s"] = 600
    sc["workload"] = {"kind": "spike", "rate": 0.5, "peak_rate": 5, "at_s": 600, "duration_s": 60}
    with pytest.raises(InputError, match=r"workload\.at_s: got 600\.0; expected less than duration_s \(600 s\)"):
        load_scenario(sc)
    sc["workload"]["at_s"] = 540
    load_scenario(sc)


def test_a_fleet_event_after_its_run_is_refused():
    late = _fleet({"scenario": _svc("a", 0.5), "spike": {"at_s": 600}, "rollout": {"at_s": 700}},
                  node_loss={"at_s": 650})
    with pytest.raises(InputError) as err:
        load_fleet(late)
    msg = str(err.value)
    for key, value in (("services[0].spike.at_s", 600.0), ("services[0].rollout.at_s", 700.0),
                       ("node_loss.at_s", 650.0)):
        assert f"{key}: got {value}; expected less than duration_s (600 s)" in msg
    load_fleet(_fleet({"scenario": _svc("a", 0.5), "spike": {"at_s": 500}}, node_loss={"at_s": 599}))


def test_a_fleet_counts_its_spikes_and_every_service_against_one_budget():
    fleet = _fleet({"scenario": _svc("a", 100), "spike": {"factor": 100, "at_s": 0, "duration_s": 480}},
                   {"scenario": _svc("b", 100)})
    with pytest.raises(InputError) as err:
        load_fleet(fleet)
    assert ("services: got 'the fleet (600 s): a spike 4,752,000 + a 60,000 + b 60,000 ≈ 4,872,000 requests'; "
            "expected at most the request budget of 2,000,000") in str(err.value)
    load_fleet({**fleet, "max_requests": 5_000_000})   # raised for the fleet
    for member in fleet["services"]:
        member["scenario"]["max_requests"] = 5_000_000
    load_fleet(fleet)                                   # or by every scenario


def test_node_loss_times_merged_across_services_must_keep_replace_after_not_ready():
    """The gate loses one node for all services, each setting from the last service that gives it: a replaceS that is
    fine for its own service (after the default notReadyS 50) but before another service's notReadyS is refused at
    load, naming the stack's key, not at gate time with the fleet's."""
    def two(a: dict, b: dict):
        def edit(v):
            v["services"].append(copy.deepcopy(v["services"][0]))
            v["services"][1]["name"] = "chat2"
            v["services"][0]["stress"] = {"nodeLoss": a}
            v["services"][1]["stress"] = {"nodeLoss": b}
        return edit
    text = _refused(two({"replaceS": 60}, {"notReadyS": 70}))
    assert "services[0].stress.nodeLoss.replaceS: got 60.0; expected at least notReadyS (70, from services[1])" in text
    cfg = _parse(two({"replaceS": 80}, {"notReadyS": 70}))                     # control
    from gate import stack_scenarios
    loss = next(s for s in stack_scenarios(cfg) if s.kind == "nodeLoss").fleet["node_loss"]
    assert loss == {"at_s": 120.0, "not_ready_s": 70.0, "replace_s": 80.0}
