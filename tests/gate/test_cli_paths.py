"""Paths and key paths a user writes on the command line (review rev9-cli findings 5, 7, 11): a `--workload` file's
trace is read next to that file, a stack file that is a folder is named as one, and `--set` takes a key as the
stack file writes it; a key path with dots in it is printed in brackets wherever it is reported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from preflight import check as cli
from preflight.overrides import apply_sets, read_workload, stack_values
from preflight.whatif import sides
from simulation import load_scenario
from stackconfig.load import ROOT, stack_config_values, stack_names
from validation.errors import InputError

ROWS = "t,pin,pout\n" + "".join(f"{i * 2},{100 + i},{20 + i}\n" for i in range(40))
AZURE = ROOT / "examples" / "scenarios" / "azure-conv-replay.yaml"


def _workload_file(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trace.csv").write_text(ROWS)
    wl = folder / "wl.yaml"
    wl.write_text("kind: trace\npath: trace.csv\ncolumns: {timestamp: t, input_tokens: pin, output_tokens: pout}\n")
    return wl


def test_a_workload_files_trace_is_read_next_to_the_file_not_at_the_repository_root(tmp_path, monkeypatch):
    wl = _workload_file(tmp_path / "mine")
    monkeypatch.chdir(tmp_path)
    assert read_workload(str(wl))["path"] == str(tmp_path / "mine" / "trace.csv")
    assert read_workload("mine/wl.yaml")["path"] == str(tmp_path / "mine" / "trace.csv")   # a relative FILE too
    before, after = sides("dev", [], workload="mine/wl.yaml", services=["chat"])
    [chat] = [s for s in after.services if s.name == "chat"]
    assert chat.workload["path"] == str(tmp_path / "mine" / "trace.csv")
    (tmp_path / "mine" / "trace.csv").unlink()
    with pytest.raises(InputError, match=f"trace file not found \\(looked at {tmp_path / 'mine' / 'trace.csv'}\\)"):
        read_workload(str(wl))


def test_an_absolute_trace_path_is_kept(tmp_path):
    wl = _workload_file(tmp_path)
    wl.write_text(wl.read_text().replace("path: trace.csv", f"path: {tmp_path / 'trace.csv'}"))
    assert read_workload(str(wl))["path"] == str(tmp_path / "trace.csv")


@pytest.mark.skipif(not (AZURE.parent / "../../../shared/data/azure-llm-inference-2023").resolve().is_dir(),
                    reason="needs the Azure trace beside the clone (README, Data)")
def test_the_shipped_trace_example_works_as_a_workload_file(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert read_workload(str(AZURE))["path"] == load_scenario(AZURE).workload.path


def test_set_takes_a_key_as_the_stack_file_writes_it():
    """`kserve-preflight:services.chat.maxReplicas=3` was reported as the unknown key
    'kserve-preflight:kserve-preflight:services'."""
    _, values = stack_values("dev")
    plain = apply_sets(values, ["services.chat.maxReplicas=3"])
    assert apply_sets(values, ["kserve-preflight:services.chat.maxReplicas=3"]) == plain
    assert plain["services"][0]["maxReplicas"] == 3
    with pytest.raises(InputError) as err:
        apply_sets(values, ["aws:region=us-west-2"])
    assert "--set: got 'aws:region=us-west-2'; expected a key of this project" in str(err.value)
    # a colon inside a bracketed key is part of the key, not a namespace
    out = apply_sets(values, ['services.chat.annotations["autoscaling.knative.dev/window"]=90s'])
    assert out["services"][0]["annotations"]["autoscaling.knative.dev/window"] == "90s"


def test_an_unknown_annotation_is_printed_in_brackets_as_a_known_one_is(capsys):
    for key in ("autoscaling.knative.dev/windoww", "autoscaling.knative.dev/window"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["whatif", "--stack", "dev", "--set", f'services.chat.annotations["{key}"]=6000s'])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and f"kserve-preflight:services[0].annotations[{key}]: got '6000s'" in err, err
    with pytest.raises(SystemExit):
        cli.main(["whatif", "--stack", "dev", "--set", "kserve-preflight:services.chat.maxReplica=3"])
    err = capsys.readouterr().err
    assert "kserve-preflight:services[0].maxReplica: got 3; unknown key" in err and "preflight:kserve" not in err


def _project_copy(tmp_path: Path) -> Path:
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    return tmp_path


def test_a_stack_file_that_is_a_folder_is_named_as_a_folder(tmp_path):
    """It was reported as a stack that does not exist: "--stack: got 'dev'; expected one of prod, staging"."""
    root = _project_copy(tmp_path)
    (root / "stacks" / "Pulumi.dev.yaml").unlink()
    (root / "stacks" / "Pulumi.dev.yaml").mkdir()
    assert "dev" in stack_names(root)
    with pytest.raises(InputError) as err:
        stack_config_values("dev", root)
    text = str(err.value)
    assert f"{root / 'stacks' / 'Pulumi.dev.yaml'}" in text and "not a regular file but a folder" in text
    assert "expected one of" not in text
    with pytest.raises(InputError, match="--stack: got 'nope'; expected one of dev, prod, staging"):
        stack_config_values("nope", root)


def test_a_check_of_a_stack_that_is_a_folder_exits_2_naming_it(tmp_path):
    """The reviewer's reproduction: a copy of the project whose stacks/Pulumi.dev.yaml is a folder."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".git", "tests", "docs", "benchmarks", "__pycache__"))
    os.remove(copy / "stacks" / "Pulumi.dev.yaml")
    os.mkdir(copy / "stacks" / "Pulumi.dev.yaml")
    proc = subprocess.run([sys.executable, "-m", "preflight", "check", "--stack", "dev", "--no-cache"], cwd=copy,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{copy / 'stacks' / 'Pulumi.dev.yaml'}" in proc.stderr and "not a regular file but a folder" in proc.stderr
    assert "expected one of" not in proc.stderr
