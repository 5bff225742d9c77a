"""One progress deadline (review rev12 F6): the revision's `serving.knative.dev/progress-deadline` as the
simulated KPA reads it (`serving.kpa.progress_deadline_s`, 600 s without it) is the deadline of the fleet's
rollout, the gate's rollout run and verdict, Pulumi's wait and the rollout-capacity check. Before, a fleet file's
rollout took its own `progress_deadline_s` (600 s unless given, whatever the InferenceService said) and the gate's
reader also looked in spec.predictor.annotations, which no scenario may carry."""

from __future__ import annotations

import pytest

from gate import stack_scenarios
from gate.stress import progress_deadline_s as gate_deadline
from manifests.rollout import progress_deadline_s as stack_deadline
from simulation.autoscaler.config import PROGRESS_DEADLINE_KEY
from simulation.fleet import load_fleet, run_fleet
from simulation.isvc import ServingSpec
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

from tests.runtime_stack import chat_stack
from tests.simulation.test_fleet import _fleet, _svc


def _rollout(**annotations) -> dict:
    fleet = _fleet({"scenario": _svc("a", 0.5, min_r=1, max_r=2, **annotations), "rollout": {"at_s": 30}},
                   cluster={"warm_nodes": 1}, duration=240)
    return run_fleet(load_fleet(fleet), 1)["services"]["a"]["rollout"]


def test_a_fleets_rollout_is_judged_against_the_revisions_own_deadline():
    """The new pod needs a node (60 s), its image and model and a 20 s warm-up: Ready after about 100 s, so in
    time under Knative's default 600 s and late under the revision's own 60 s, which the KPA reads too."""
    default = _rollout()
    assert default["progress_deadline_s"] == 600.0 and default["ready_s"] is not None and default["ready_s"] > 60
    short = _rollout(**{PROGRESS_DEADLINE_KEY: "60s"})
    assert short["progress_deadline_s"] == 60.0 and short["ready_s"] is None


def test_a_fleet_rollout_of_its_own_deadline_is_refused_with_where_the_deadline_lives():
    fleet = _fleet({"scenario": _svc("a", 0.5), "rollout": {"at_s": 30, "progress_deadline_s": 1200}})
    with pytest.raises(InputError) as err:
        load_fleet(fleet)
    [problem] = err.value.problems
    assert problem.path == "services[0].rollout.progress_deadline_s" and problem.value == 1200
    assert PROGRESS_DEADLINE_KEY in problem.allowed


def test_the_gate_reads_the_deadline_the_simulation_reads():
    """spec.predictor.annotations is no place the simulation reads (the scenario schema refuses it): the gate's
    run length and rollout term must not take a deadline from there either."""
    sc = _svc("a", 0.5, **{PROGRESS_DEADLINE_KEY: "20m"})
    isvc = sc["inferenceService"]
    assert gate_deadline(isvc) == ServingSpec.from_manifest(isvc).kpa.progress_deadline_s == 1200.0
    del isvc["metadata"]["annotations"][PROGRESS_DEADLINE_KEY]
    isvc["spec"]["predictor"]["annotations"] = {PROGRESS_DEADLINE_KEY: "20m"}
    assert gate_deadline(isvc) == ServingSpec.from_manifest(isvc, problems=[]).kpa.progress_deadline_s == 600.0


@pytest.mark.parametrize("annotations, seconds", [({}, 600.0), ({PROGRESS_DEADLINE_KEY: "15m"}, 900.0),
                                                  ({PROGRESS_DEADLINE_KEY: "1h30s"}, 3630.0)])
def test_stack_gate_and_fleet_take_one_deadline(annotations, seconds):
    cfg = parse_stack_config(chat_stack(annotations=annotations, slo={"p99LatencyS": 30}), "p", "dev")
    svc = cfg.services[0]
    [rollout] = stack_scenarios(cfg, ("rollout",))
    [member] = rollout.fleet["services"]
    assert member["rollout"] == {"at_s": 60.0}                    # no deadline of its own
    isvc = member["scenario"]["inferenceService"]
    assert isvc["metadata"]["annotations"][PROGRESS_DEADLINE_KEY]  # rendered, also when unset
    assert rollout.extra[svc.name]["progress_deadline_s"] == seconds == stack_deadline(svc)
    assert load_fleet(rollout.fleet).members[0].scenario.serving.kpa.progress_deadline_s == seconds
    assert rollout.fleet["duration_s"] == max(600.0, 60.0 + seconds + 60.0)   # stackconfig/stress.rollout_run_s
