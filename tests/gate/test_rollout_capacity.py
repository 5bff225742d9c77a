"""The static rollout check: the old revision + the new one + the others' minimums fit, and Ready in time."""

from __future__ import annotations

import pulumi
import pytest

from gate.rollout_capacity import rollout_problems
from offline import run_program
from stackconfig.load import load_stack, stack_names

P = "kserve-preflight"


@pytest.mark.parametrize("stack", stack_names())
def test_every_shipped_stack_can_roll_out(stack):
    assert rollout_problems(load_stack(stack)) == []


def test_simulated_load_above_initial_scale_counts():
    """The old revision holds what the simulation says it needs at the expected load, when that is more."""
    cfg = load_stack("prod")  # 28 GPUs; chat 10 + 10 + code 1 = 21 fits
    assert rollout_problems(cfg, {"chat": 17.2}) != []  # 18 + 10 + 1 = 29 > 28
    assert rollout_problems(cfg, {"chat": 9.0}) == []


@pytest.mark.parametrize("edit, fragment", [
    # The stack as the issue found it: 16 GPUs for chat's 10 + 10 during a rollout and code's 1.
    (lambda c: c[f"{P}:gpuNodeGroup"].update(maxSize=4), "= 21 GPUs > 16 (gpuNodeGroup.maxSize 4 × 4)"),
    (lambda c: c[f"{P}:services"][0]["annotations"].update({"serving.knative.dev/progress-deadline": "2m"}),
     "expected at least the p95 cold start of the new revision's 10 pods"),
], ids=["gpus", "progress-deadline"])
def test_a_rollout_that_cannot_finish_stops_the_program_before_any_resource(edit, fragment, registered):
    def no_gate(c):
        edit(c)
        c[f"{P}:gate"] = {"enabled": False}  # the static check runs without the simulation

    with pytest.raises(pulumi.RunError) as err:
        run_program("prod", edit=no_gate)
    assert "rollout capacity: the next rollout would stall" in str(err.value) and fragment in str(err.value)
    assert registered == []
    run_program("prod", edit=lambda c: c.__setitem__(f"{P}:gate", {"enabled": False}))  # control
    assert "gpu-ng" in registered


def test_enforce_false_only_warns():
    def edit(c):
        c[f"{P}:gpuNodeGroup"].update(maxSize=4)
        c[f"{P}:gate"] = {"enabled": False, "enforce": False}

    assert run_program("prod", edit=edit).resources
