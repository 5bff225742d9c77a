"""The model-cache claim's protection, and the manual step docs/deploying.md §9 gives for the edits Pulumi refuses
on it (`modelCache.enabled: false`, a new `pvcName`, `storageClass` or `namespace`): the URN to unprotect must be
the one the program registers, or the documented command fails on a real state."""

from __future__ import annotations

from pathlib import Path

from offline import run_program

P = "kserve-preflight"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "deploying.md"
PVC_URN = ("urn:pulumi:{stack}::kserve-preflight::kserve-preflight:infra:ModelCache"
           "$kubernetes:core/v1:PersistentVolumeClaim::model-cache-pvc")


def test_the_documented_unprotect_urn_is_the_claim_the_program_registers():
    run = run_program("dev", edit=lambda c: c.update({f"{P}:gate": {"enabled": False}}))
    assert PVC_URN.format(stack="dev") in list(run.monitor.get_registered_resources())
    options = run.options["model-cache-pvc"]
    assert options.protect is True and options.retain_on_delete is True
    text = " ".join(DOCS.read_text().split())
    assert f"pulumi state unprotect --stack <stack> '{PVC_URN.format(stack='<stack>')}'" in text.replace("\\ ", "")


def test_the_docs_say_which_edits_need_it():
    text = " ".join(DOCS.read_text().split())
    for edit in ("`modelCache.enabled: false`", "`pvcName`", "`storageClass`", "change `pvcName` together with "
                 "`storageClass`", "AlreadyExists"):
        assert edit in text, edit
