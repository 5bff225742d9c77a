"""Names in the report are text, not rich markup: a stress scenario's label "chat [spike]" printed through rich
lost its "[spike]" (read as a style tag), so three rows all read "chat"."""

from __future__ import annotations

import io

from rich.console import Console

from gate.verdict import Check, Verdict
from policy.report import violations_table
from policy.rules import MANDATORY, Violation
from preflight.check import slo_table
from preflight.whatif import Comparison, WhatIf
from preflight.whatif_tables import SHOWN, tables
from simulation.estimates import Estimate

E = Estimate(0.01, 0.0, 0.02, 5)


def _text(*renderables) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=250, color_system=None)
    for r in renderables:
        console.print(r)
    return buf.getvalue()


def _verdict(scenario: str) -> Verdict:
    return Verdict("chat", (Check("error rate", E, 0.05, note="[bold]not a tag[/]"),), {"duration_s": 600}, 5,
                   scenario, metrics={name: E for name in SHOWN})


def test_the_slo_table_keeps_scenario_labels_and_notes():
    text = _text(slo_table("dev", [_verdict("steady"), _verdict("spike"), _verdict("nodeLoss")]))
    assert "chat [spike]" in text and "chat [nodeLoss]" in text and "[bold]not a tag[/]" in text


def test_whatif_tables_keep_scenario_labels():
    shown = {name: E for name in SHOWN}
    changed = Comparison(("chat", "spike"), _verdict("spike"), _verdict("spike"), ([], []), shown,
                         metrics=(shown, shown))
    same = Comparison(("chat", "nodeLoss"), _verdict("nodeLoss"), _verdict("nodeLoss"), ([], []), {}, True)
    result = WhatIf("dev", "HEAD~[1]", [], 5, [1], [changed, same], {"before": [], "after": []})
    text = _text(*tables(result))
    assert "what-if dev/chat [spike]" in text and "dev/chat [nodeLoss]: unchanged" in text
    assert "before (HEAD~[1])" in text


def test_policy_findings_keep_bracketed_text():
    v = Violation("some-rule", MANDATORY, "kubernetes:serving.kserve.io/v1beta1:InferenceService", "chat", "urn:x",
                  "InferenceService/chat: args [spike] stay")
    assert "args [spike] stay" in _text(violations_table("dev", [v]))
