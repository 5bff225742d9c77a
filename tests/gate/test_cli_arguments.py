"""Command-line arguments a user can get wrong — `--workers`, `--plot`, `--cache-dir`, `--out`, `--against`, the
tuner's `--seed`, `--price` and `--knobs` — refused with exit status 2 naming the flag, the value and what is
allowed, before any simulation starts; and the same flags with good values accepted."""

from __future__ import annotations

import math
import os
import shutil
import subprocess

import pytest

from preflight.overrides import stack_values
from simulation.executors import LocalExecutor, make_executor, max_workers
from stackconfig.load import ROOT
from validation.errors import InputError
from tests.gate.cli_refusal import exit_2, refuse_work
from validation.paths import check_output_dir


@pytest.fixture
def no_gate(monkeypatch):
    refuse_work(monkeypatch, "sides")


_exit_2 = exit_2


@pytest.mark.parametrize("command", [["check"], ["whatif"], ["tune", "--stack", "dev", "--service", "chat"]])
@pytest.mark.parametrize("workers", ["0", "100000"])
def test_absurd_worker_counts_are_refused_before_anything_starts(command, workers, no_gate, capsys):
    err = _exit_2([*command, "--workers", workers], capsys)
    assert f"--workers: got {workers}; expected an integer between 1 and {max_workers()}" in err


def test_the_pool_never_exceeds_the_documented_maximum():
    assert max_workers() == 4 * (os.cpu_count() or 1)
    assert make_executor(workers=max_workers()).workers == max_workers()
    assert LocalExecutor(10 ** 6).workers == max_workers()   # library callers are capped, not refused
    with pytest.raises(InputError, match="--workers"):
        make_executor(workers=max_workers() + 1)


@pytest.mark.parametrize("flag", ["--plot", "--cache-dir"])
def test_check_refuses_an_output_folder_that_is_a_file_before_the_gate_runs(flag, tmp_path, no_gate, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    for path in (afile, afile / "sub"):
        err = _exit_2(["check", flag, str(path)], capsys)
        assert f"{flag}: got '{path}'; expected a folder to write into" in err


def test_whatif_refuses_a_plot_folder_that_is_a_file_before_simulating(tmp_path, no_gate, capsys):
    (tmp_path / "afile").write_text("x")
    err = _exit_2(["whatif", "--plot", str(tmp_path / "afile")], capsys)
    assert f"--plot: got '{tmp_path / 'afile'}'; expected a folder to write into; this is an existing file" in err


def test_an_output_folder_that_can_be_created_is_accepted(tmp_path):
    assert check_output_dir("--plot", tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert check_output_dir("--plot", tmp_path) == tmp_path
    with pytest.raises(InputError, match="--plot: got '/dev/null'"):
        check_output_dir("--plot", "/dev/null")


@pytest.mark.parametrize("out", ["FILE", "/dev/null"])
def test_manifests_render_refuses_an_out_that_is_not_a_folder(out, tmp_path, capsys):
    import manifests.__main__ as render_cli

    out = str(tmp_path / "afile") if out == "FILE" else out
    (tmp_path / "afile").write_text("x")
    with pytest.raises(SystemExit) as exc:
        render_cli.main(["render", "--stack", "dev", "--out", out])
    assert exc.value.code == 2
    assert f"--out: got '{out}'; expected a folder to write into" in capsys.readouterr().err
    assert render_cli.main(["render", "--stack", "dev", "--out", str(tmp_path / "rendered")]) == 0
    assert (tmp_path / "rendered" / "dev" / "eks-nodegroup.yaml").is_file()


def test_against_never_passes_an_option_to_git(tmp_path):
    target = tmp_path / "written"
    for rev in (f"--output={target}", "-p", ""):
        with pytest.raises(InputError, match="--against: got .*not starting with '-'"):
            stack_values("dev", rev)
    assert not list(tmp_path.iterdir())
    with pytest.raises(InputError, match="--against: got 'HEAD:stacks'; expected a git revision"):
        stack_values("dev", "HEAD:stacks")   # a tree, not a commit


def _repo_with_dev_stack(tmp_path, content: bytes):
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.dev.yaml").write_bytes(content)
    for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "x"]):
        _git(tmp_path, *argv)


def _git(repo, *argv):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv], cwd=repo, check=True,
                   capture_output=True)


def test_a_stack_file_that_is_not_utf8_at_the_revision_is_an_input_error(tmp_path, monkeypatch):
    import preflight.overrides as overrides

    good = (ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes()
    _repo_with_dev_stack(tmp_path, good.replace(b"config:", b"# caf\xe9\nconfig:", 1))
    monkeypatch.setattr(overrides, "ROOT", tmp_path)
    with pytest.raises(InputError, match=r"--against: got 'HEAD'; expected stacks/Pulumi.dev.yaml at that "
                                         r"revision to be UTF-8 text \(byte \d+"):
        stack_values("dev", "HEAD")
    (tmp_path / "stacks" / "Pulumi.dev.yaml").write_bytes(good)
    _git(tmp_path, "commit", "-q", "-a", "-m", "y")
    assert stack_values("dev", "HEAD") == stack_values("dev")


@pytest.mark.parametrize("args, expected", [
    (["--seed", "-1"], "--seed: got -1; expected an integer between 0 and 4294967295"),
    (["--seed", str(2 ** 32)], "--seed: got 4294967296; expected an integer between 0 and 4294967295"),
    (["--price", "g6e.xlarge=nan"], "--price: got 'g6e.xlarge=nan'; expected prices in $/h greater than 0"),
    (["--price", "g6e.xlarge=1:-1"], "--price: got 'g6e.xlarge=1:-1'; expected prices in $/h greater than 0"),
    (["--price", "g6e.xlarge=0"], "--price: got 'g6e.xlarge=0'; expected prices in $/h greater than 0"),
    (["--price", "g6e.xlarge=1e400"], "--price: got 'g6e.xlarge=1e400'; expected prices in $/h greater than 0"),
    (["--price", "nope=1"], "--price: got 'nope=1'; 'nope' is not an instance type of the stack's catalog"),
    (["--price", "=1"], "--price: got '=1'; expected TYPE=ON_DEMAND[:SPOT]"),
    (["--knobs", ","], "--knobs: got ','; expected one or more names from instanceType"),
])
def test_bad_tune_arguments_exit_2_before_any_trial(args, expected, no_gate, capsys):
    err = _exit_2(["tune", "--stack", "dev", "--service", "chat", "--workers", "1", *args], capsys)
    assert expected in err


def test_good_tune_prices_and_knobs_are_read_and_its_json_has_no_nan():
    from tuner.cli import _finite, _knobs, _prices

    prices = _prices(["g6e.xlarge=2:0.5", "g5.xlarge=1.5"], {"g6e.xlarge", "g5.xlarge"})
    assert (prices["g6e.xlarge"].on_demand, prices["g6e.xlarge"].spot) == (2.0, 0.5)
    assert (prices["g5.xlarge"].on_demand, prices["g5.xlarge"].spot) == (1.5, 1.5)
    assert _knobs("minReplicas, maxReplicas,") == ("minReplicas", "maxReplicas") and _knobs(None) is None
    assert _finite({"a": math.nan, "b": [math.inf, 1.5, "x"], "c": None}) == {"a": None, "b": [None, 1.5, "x"],
                                                                             "c": None}


def _render(argv, capsys):
    import manifests.__main__ as render_cli

    code = render_cli.main(argv)
    return code, capsys.readouterr()


def test_manifests_render_refuses_an_empty_out(tmp_path, monkeypatch, capsys):
    """`--out ""` wrote dev/*.yaml into the working directory (rev9-cli finding 10)."""
    import manifests.__main__ as render_cli

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:
        render_cli.main(["render", "--stack", "dev", "--out", ""])
    assert exc.value.code == 2
    assert "--out: got ''; expected a folder path" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_rerender_leaves_exactly_this_render_and_the_users_own_files(tmp_path, monkeypatch, capsys):
    """rev9-cli finding 4: with the model cache turned off, the second render's InferenceService is 05-…, and the
    first render's 06-inferenceservice-chat.yaml (pvc://) stayed; `kubectl apply -f` applied it last."""
    import manifests.__main__ as render_cli

    out = tmp_path / "rendered"
    code, first = _render(["render", "--stack", "dev", "--out", str(out)], capsys)
    folder = out / "dev"
    before = {p.name for p in folder.iterdir()}
    assert code == 0 and render_cli.RECORD in before
    (folder / "kustomization.yaml").write_text("resources: []\n")   # the user's own
    (folder / "NOTES.txt").write_text("mine\n")
    real = render_cli.render_stack
    dropped = []

    def without_the_cache(cfg):   # as modelCache.enabled: false renders: fewer objects, the indexes shift
        kept = []
        for m in real(cfg):
            (dropped if m["kind"] in ("PersistentVolumeClaim", "DaemonSet") and "cache" in m["metadata"]["name"]
             else kept).append(m)
        return kept

    monkeypatch.setattr(render_cli, "render_stack", without_the_cache)
    code, second = _render(["render", "--stack", "dev", "--out", str(out)], capsys)
    assert code == 0 and dropped
    written = {line.rsplit("/", 1)[1] for line in second.out.split()}
    after = {p.name for p in folder.iterdir()}
    assert after == written | {render_cli.RECORD, "kustomization.yaml", "NOTES.txt"}
    assert len([n for n in after if "-inferenceservice-chat" in n]) == 1
    removed = before - written - {render_cli.RECORD}
    assert removed and all(f"removed {folder / n}: an earlier render wrote it" in second.err for n in removed)
    assert f"{folder} also holds kustomization.yaml, which this tool did not write" in second.err
    record = (folder / render_cli.RECORD).read_text().splitlines()
    assert set(record[1:]) == written


def test_a_folder_rendered_without_a_record_loses_only_files_of_the_tools_names(tmp_path, capsys):
    import manifests.__main__ as render_cli

    folder = tmp_path / "out" / "dev"
    folder.mkdir(parents=True)
    mine = {"07-inferenceservice-chat.yaml": "stale", "12-daemonset-model-cache-prefetch.yaml": "stale"}
    theirs = {"my-extra.yaml": "x", "README.md": "x", "7-inferenceservice-chat.yaml": "x", "Eks-nodegroup.yaml": "x"}
    for name, text in {**mine, **theirs}.items():
        (folder / name).write_text(text)
    code, out = _render(["render", "--stack", "dev", "--out", str(tmp_path / "out")], capsys)
    names = {p.name for p in folder.iterdir()}
    assert code == 0 and not set(mine) & names and set(theirs) <= names
    # a record is read for this tool's names only: one naming another file (or a path) removes nothing
    (folder / render_cli.RECORD).write_text("my-extra.yaml\n../dev/README.md\n99-configmap-gone.yaml\n")
    code, out = _render(["render", "--stack", "dev", "--out", str(tmp_path / "out")], capsys)
    assert code == 0 and set(theirs) <= {p.name for p in folder.iterdir()} and "removed" not in out.err
