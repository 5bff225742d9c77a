"""The two policy jobs stay apart (review 13 policy, finding 1): the user check (`tests/policy/test_stacks.py`,
`python -m policy.report`) takes any stack name and fails only on mandatory violations; the project's rule tests
read the frozen fixtures, never `stacks/`."""

from __future__ import annotations

from test_stacks import mandatory_problems


def test_the_check_takes_any_stack_name_and_ignores_advisory_findings(tmp_path):
    """Review 13 policy, finding 1: a renamed service, an advisory finding and a stack named `qa` pass; a
    mandatory violation fails."""
    from policy_fixtures import flapping, write_stack

    def renamed_and_advisory(config: dict) -> None:
        services = config["kserve-preflight:services"]
        services[0]["name"] = "assistant"
        services[1]["resources"]["memory"] = "1536Mi"   # isvc-serving-memory, advisory

    folder = write_stack(tmp_path, "qa", renamed_and_advisory)
    write_stack(folder, "qa-window6", flapping)
    assert mandatory_problems("qa", folder) == []
    problems = mandatory_problems("qa-window6", folder)
    assert len(problems) == 1 and problems[0].startswith("[isvc-scale-down-stabilization] InferenceService chat")


def test_the_rule_fixtures_are_the_frozen_copies_not_stacks(monkeypatch):
    """Review 13 policy, finding 1: the rule tests ran on stacks/, so renaming prod's chat in a team's own stacks
    failed 65 of them. They read tests/policy/fixtures/ only."""
    import offline
    from policy_fixtures import FIXTURES, SHIPPED, _shipped

    real, read = offline.stack_config_values, []

    def recording(stack, *args, **kwargs):
        read.append(kwargs.get("stack_dir"))
        return real(stack, *args, **kwargs)

    monkeypatch.setattr(offline, "stack_config_values", recording)
    assert SHIPPED == ["dev", "prod", "staging"]
    assert any(r.name == "chat-isvc" for r in _shipped.__wrapped__("prod"))
    assert read == [FIXTURES]
