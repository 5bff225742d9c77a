"""A `whatif --workload FILE` or `--rate-scale X` over the request budget is blamed on the flag the user passed,
not on the stack file's services[i].workload, which the user did not write (review rev13-bounds finding 7)."""

from __future__ import annotations

from tests.gate.cli_refusal import exit_2


def test_a_workload_file_over_the_budget_names_the_file(tmp_path, capsys):
    huge = tmp_path / "wl_huge.yaml"
    huge.write_text("kind: poisson\nrate: 1e7\n")
    err = exit_2(["whatif", "--stack", "dev", "--workload", str(huge), "--replications", "2"], capsys)
    assert f"- --workload {huge}: got 'the rollout run" in err
    assert "services[0] (chat)'s workload as --workload" in err
    assert "services[0].workload" not in err.replace("services[0] (chat)", "") and "Pulumi.dev.yaml" not in err


def test_a_workload_files_step_past_the_run_names_the_file_and_its_key(tmp_path, capsys):
    """rev13-diff F4: a sub-key of the file's workload (a step's at_s past durationS) was blamed on
    stacks/Pulumi.dev.yaml's services[0].workload.at_s."""
    step = tmp_path / "wl_step.yaml"
    step.write_text("kind: step\nrate: 1\nat_s: 100000\nto_rate: 2\n")
    err = exit_2(["whatif", "--stack", "dev", "--workload", str(step), "--replications", "2"], capsys)
    assert f"- --workload {step}: got 100000" in err, err
    assert "services[0] (chat)'s workload's at_s as --workload" in err
    assert "Pulumi.dev.yaml" not in err and "workload.at_s" not in err


def test_a_rate_scale_over_the_budget_names_the_flag(capsys):
    err = exit_2(["whatif", "--stack", "dev", "--rate-scale", "1000", "--set", "gate.durationS=8000"], capsys)
    assert "- --rate-scale 1000: got 'the steady run (8000 s): chat 4,000,000 requests'" in err
    assert "kserve-preflight:services[0].workload" not in err


def test_a_problem_of_the_stack_itself_keeps_its_key(capsys):
    err = exit_2(["whatif", "--stack", "dev", "--rate-scale", "2", "--set", "services.chat.maxReplicas=-1"], capsys)
    assert "services[0].maxReplicas" in err and "--rate-scale" not in err


def test_a_budget_problem_at_a_service_the_flag_left_alone_names_the_flag_not_that_service():
    """rev14-diff F4: with --service code, the run's budget problem is keyed at its largest part (chat); it said
    chat's workload was made by --rate-scale, which scaled only code."""
    import pytest

    from preflight.whatif import sides
    from validation.errors import InputError

    with pytest.raises(InputError) as err:
        sides("prod", ["gate.requestBudget=14000"], rate_scale=2, services=["code"])
    [problem] = err.value.problems
    assert problem.path == "--rate-scale 2" and "(at services[0].workload, with --rate-scale 2)" in problem.allowed
    assert "makes it" not in problem.allowed


def test_the_whole_gate_over_its_budget_with_the_flag_names_the_flag():
    """rev14-diff F5: the total budget is keyed at gate.replications; it was blamed on the stack file."""
    import pytest

    from preflight.whatif import sides
    from validation.errors import InputError

    with pytest.raises(InputError) as err:
        sides("prod", ["gate.totalRequestBudget=1000000"], rate_scale=3)
    assert [p.path for p in err.value.problems] == ["--rate-scale 3"] and err.value.source == ""
    assert "gate.totalRequestBudget" in err.value.problems[0].allowed
