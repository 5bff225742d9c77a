"""Per-resource policy waivers (review 13 policy, finding 7): a service's `policyWaivers: {rule: reason}` moves that
rule's findings on that service to "waived" with the reason, in the rules, the CrossGuard pack, the report (table
and --json) and `preflight check`; an unknown rule, a rule that may not be waived and an empty reason are refused."""

from __future__ import annotations

import io
import json

from rich.console import Console

from policy import report
from policy.rules import RULES_BY_ID, evaluate, mandatory
from policy.waivers import WAIVER_ANNOTATION
from policy_fixtures import Stack, broken, flapping, write_stack
from test_policy_pack import POLICIES, run_policy

PINNED = "pinned at one replica: it cannot flap"


def _waive(**waivers):
    def edit(config: dict) -> None:
        flapping(config)
        config["kserve-preflight:services"][0]["policyWaivers"] = waivers
    return edit


def _run(argv):
    out = io.StringIO()
    code = report.main(argv, Console(file=out, width=250))
    return code, out.getvalue()


def test_a_waived_rule_is_listed_with_its_reason_and_does_not_fail(tmp_path, capsys):
    folder = write_stack(tmp_path / "ok", "qa", _waive(**{"isvc-scale-down-stabilization": PINNED}))
    [v] = [v for v in report.check_stack("qa", folder) if v.rule == "isvc-scale-down-stabilization"]
    assert v.waived == PINNED and not v.mandatory and v.key == "kserve-preflight:services[0].annotations"
    code, out = _run(["--stack-dir", str(folder)])
    assert code == 0
    assert "PASS stack qa: 0 mandatory, 0 advisory, 1 waived" in out
    assert "waived because: " + PINNED in out
    code, out = _run(["--stack-dir", str(folder), "--json"])
    [stack] = json.loads(out)["stacks"]
    assert code == 0 and stack["waived"] == 1 and stack["violations"][0]["waived"] == PINNED


def test_waivers_of_unknown_or_unwaivable_rules_and_empty_reasons_are_refused(tmp_path, capsys):
    folder = tmp_path / "bad"
    write_stack(folder, "qa-unknown", _waive(**{"isvc-scale-down-stabilisation": PINNED}))
    write_stack(folder, "qa-hostnet", _waive(**{"k8s-no-host-network": "the exporter needs it"}))
    write_stack(folder, "qa-empty", _waive(**{"isvc-scale-down-stabilization": " "}))
    code, out = _run(["--stack-dir", str(folder)])
    err = capsys.readouterr().err
    assert code == 2 and out.count("ERROR stack") == 3
    assert "kserve-preflight:services[0].policyWaivers.isvc-scale-down-stabilisation" in err
    assert "expected a policy rule id" in err
    assert "policyWaivers.k8s-no-host-network" in err and "is a Pod Security rule" in err
    assert "services[0].policyWaivers.isvc-scale-down-stabilization: got ' '" in err


def _waived_in(resources, name: str, **waivers) -> Stack:
    s = Stack(resources)
    s.props(name)["metadata"]["annotations"][WAIVER_ANNOTATION] = json.dumps(waivers)
    return s


def test_the_rules_and_the_pack_honour_the_annotation_on_that_resource_only():
    s = _waived_in(broken("isvc-timeout"), "code-isvc", **{"isvc-timeout": "a fail-fast endpoint"})
    found = evaluate(s.resources, [RULES_BY_ID["isvc-timeout"]])
    assert found and all(v.waived == "a fail-fast endpoint" for v in found) and mandatory(found) == []
    assert run_policy(POLICIES["isvc-timeout"], s.resources) == []          # CrossGuard: nothing to block
    other = _waived_in(broken("isvc-timeout"), "chat-isvc", **{"isvc-timeout": "on another service"})
    assert mandatory(evaluate(other.resources, [RULES_BY_ID["isvc-timeout"]]))   # code-isvc still fails


def test_a_rule_that_may_not_be_waived_still_fails():
    chat = _waived_in(broken("k8s-no-host-network"), "chat-isvc", **{"k8s-no-host-network": "no"})
    chat.props("chat-isvc")["spec"]["predictor"]["hostNetwork"] = True
    found = [v for v in evaluate(chat.resources, [RULES_BY_ID["k8s-no-host-network"]])
             if v.resource_name == "chat-isvc"]
    assert found and mandatory(found) == found


def test_the_loader_renders_the_waiver_as_the_annotation():
    rule_id = "isvc-timeout"
    from offline import run_program
    from policy_fixtures import FIXTURES

    run = run_program("staging", stack_dir=FIXTURES, edit=lambda c: c["kserve-preflight:services"][0].update(
        policyWaivers={rule_id: "why"}))
    [isvc] = [r for r in run.resources if r.name == "chat-isvc"]
    assert json.loads(isvc.inputs["metadata"]["annotations"][WAIVER_ANNOTATION]) == {rule_id: "why"}
