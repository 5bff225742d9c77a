"""A stack read from `--stack-dir DIR` is refused in DIR's file: the node-fit check (manifests/admission.py) and the
server start-up check (gate/startup.py) run on the loaded config and name the file it came from, not
stacks/Pulumi.<stack>.yaml (review rev13-diff F2)."""

from __future__ import annotations

import pytest

from gate.startup import check_servers_start
from manifests.admission import check_pods_can_run
from stackconfig.load import ROOT, load_stack
from validation.errors import InputError

DEV = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()


def _team_stack(tmp_path, old: str, new: str, name: str = "qa"):
    assert old in DEV
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(DEV.replace(old, new, 1))
    return load_stack(name, stack_dir=tmp_path), str(path)


@pytest.mark.parametrize("name", ["qa", "prod"])  # prod: a shipped stack's name must not send the user to stacks/
def test_node_fit_refusal_names_the_stack_dir_file(tmp_path, name):
    cfg, path = _team_stack(tmp_path, 'cpu: "3", memory: 24Gi', 'cpu: "3.9", memory: 24Gi', name)
    assert cfg.source == path
    with pytest.raises(InputError) as err:
        check_pods_can_run(cfg)
    assert err.value.source == path
    assert f"problem in {path}:" in str(err.value)


def test_server_start_refusal_names_the_stack_dir_file(tmp_path):
    cfg, path = _team_stack(tmp_path, "        modelFormat: huggingface\n",
                            "        modelFormat: huggingface\n        args: ['--max-num-batched-tokens=8']\n")
    with pytest.raises(InputError) as err:
        check_servers_start(cfg)
    assert err.value.source == path
