"""Every YAML entry point (stack files, scenario files, inferenceServiceFile, `--workload FILE`, `--set` values):
alias expansion bounded by go-yaml's rule, a file-size cap, and plain scalars resolved as go-yaml (the Pulumi CLI's
reader) resolves them. Each refusal is an InputError naming the file or option, quickly."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from preflight import check as cli
from preflight.overrides import apply_set, stack_values
from preflight.whatif import sides
from simulation import load_scenario
from simulation.__main__ import main as sim_main
from stackconfig.load import ROOT, load_stack, stack_config_values, stack_names
from validation.errors import InputError
from validation.yaml_input import MAX_BYTES, _allowed_alias_ratio, parse_yaml

EXAMPLE = ROOT / "examples" / "scenarios" / "llm-knative-cc1.yaml"


def _bomb(levels: int = 5, anchor: str = "a") -> str:
    """A flow list of 9 aliases to the previous level, `levels` deep: 9**levels leaves from ~100 bytes per level."""
    out = f"[&{anchor}0 [x, x, x, x, x, x, x, x, x]"
    for i in range(1, levels + 1):
        out += f", &{anchor}{i} [" + ", ".join([f"*{anchor}{i - 1}"] * 9) + "]"
    return out + "]"


def _merge_bomb(levels: int = 5) -> str:
    """Merge keys (<<) of 9 aliases to the previous mapping: PyYAML copies the pairs while it builds the mappings."""
    lines = ["m0: &m0 {k0: 1, k1: 2, k2: 3, k3: 4, k4: 5, k5: 6, k6: 7, k7: 8, k8: 9}"]
    lines += [f"m{i}: &m{i} {{<<: [{', '.join([f'*m{i - 1}'] * 9)}]}}" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _project(tmp_path: Path, extra: str = "", text: str | None = None) -> Path:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir(exist_ok=True)
    path = tmp_path / "stacks" / "Pulumi.dev.yaml"
    path.write_text((text if text is not None else (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()) + extra)
    return path


def _refused(fn, *args, **kwargs) -> str:
    start = time.process_time()
    with pytest.raises(InputError) as err:
        fn(*args, **kwargs)
    assert time.process_time() - start < 5
    return str(err.value)


# -- alias expansion: go-yaml's "excessive aliasing" rule ---------------------------------------------------------

def test_go_yaml_alias_ratio_bounds():
    assert _allowed_alias_ratio(1_000) == _allowed_alias_ratio(400_000) == 0.99
    assert _allowed_alias_ratio(2_200_000) == pytest.approx(0.545)
    assert _allowed_alias_ratio(4_000_000) == _allowed_alias_ratio(10**8) == 0.10


@pytest.mark.parametrize("text", [f"bomb: {_bomb()}\n", _merge_bomb()], ids=["aliases", "merge-keys"])
def test_alias_bombs_are_refused_before_anything_is_built(text):
    problems = []
    start = time.process_time()
    assert parse_yaml(text, "bomb.yaml", "(file)", problems) is None
    assert time.process_time() - start < 1
    assert len(problems) == 1 and problems[0].value == "bomb.yaml"
    assert "aliases (*name) expand to at most 99% of its nodes" in problems[0].allowed


def test_ordinary_anchors_and_merge_keys_still_load():
    problems = []
    data = parse_yaml("base: &b {cpu: 1, mem: 2}\nx: {<<: *b, cpu: 3}\nys: [*b, *b, *b]\nl: &l [1, 2]\nm: *l\n",
                      "ok.yaml", "(file)", problems)
    assert problems == [] and data["x"] == {"cpu": 3, "mem": 2} and data["ys"] == [{"cpu": 1, "mem": 2}] * 3
    # 924 nodes, 90% from aliases: under go-yaml's floor (it judges a document only past 1,000 nodes)
    assert parse_yaml(f"small: {_bomb(levels=2)}\n", "ok.yaml", "(file)", problems) is not None and problems == []


def test_alias_bomb_in_a_stack_file_names_the_file(tmp_path):
    path = _project(tmp_path, f"  aws:bomb: {_bomb()}\n")
    text = _refused(load_stack, "dev", tmp_path)
    assert str(path) in text and "expand to at most 99%" in text


def test_alias_bomb_in_a_scenario_and_its_inference_service_file(tmp_path, capsys):
    scenario = yaml.safe_load(EXAMPLE.read_text())
    path = tmp_path / "s.yaml"
    path.write_text(EXAMPLE.read_text() + f"bomb: {_bomb()}\n")
    assert "expand to at most 99%" in _refused(load_scenario, path)
    with pytest.raises(SystemExit) as exit_:
        sim_main(["run", str(path)])
    assert exit_.value.code == 2 and "expand to at most 99%" in capsys.readouterr().err
    (tmp_path / "isvc.yaml").write_text(yaml.safe_dump(scenario.pop("inferenceService")) + f"bomb: {_bomb()}\n")
    scenario["inferenceServiceFile"] = "isvc.yaml"
    text = _refused(load_scenario, scenario, base_dir=tmp_path)
    assert "inferenceServiceFile: got" in text and "expand to at most 99%" in text


def test_alias_bomb_in_a_workload_file_and_a_set_value(tmp_path, capsys):
    path = tmp_path / "w.yaml"
    path.write_text(f"kind: poisson\nrate: 1\nbomb: {_bomb()}\n")
    text = _refused(sides, "dev", [], workload=str(path))
    assert f"in {path}:" in text and "--workload" in text and "expand to at most 99%" in text
    _, values = stack_values("dev")
    text = _refused(apply_set, values, f"services.chat.x={_bomb()}")
    assert "--set: got 'services.chat.x=" in text and "expand to at most 99%" in text
    for argv in (["--workload", str(path)], ["--set", f"services.chat.x={_bomb()}"]):
        with pytest.raises(SystemExit) as exit_:
            cli.main(["whatif", "--stack", "dev", *argv])
        assert exit_.value.code == 2 and "expand to at most 99%" in capsys.readouterr().err


# -- file size ------------------------------------------------------------------------------------------------

def test_oversized_yaml_files_are_refused_unread(tmp_path):
    pad = "#" + "x" * 1000 + "\n"
    path = _project(tmp_path, pad * (MAX_BYTES // len(pad) + 1))
    text = _refused(load_stack, "dev", tmp_path)
    assert str(path) in text and f"expected a file of at most {MAX_BYTES // 1024} KiB; this one is 0.5 MiB" in text
    scenario = tmp_path / "big.yaml"
    scenario.write_text(EXAMPLE.read_text() + pad * (MAX_BYTES // len(pad) + 1))
    assert f"at most {MAX_BYTES // 1024} KiB" in _refused(load_scenario, scenario)
    workload = tmp_path / "w.yaml"
    workload.write_text("kind: poisson\nrate: 1\n" + pad * (MAX_BYTES // len(pad) + 1))
    assert f"at most {MAX_BYTES // 1024} KiB" in _refused(sides, "dev", [], workload=str(workload))
    _project(tmp_path, pad * 100)  # control: 100 KiB of comments is fine
    load_stack("dev", tmp_path)


# -- plain scalars as go-yaml resolves them -------------------------------------------------------------------

@pytest.mark.parametrize("text, value", [
    # floats go-yaml reads (resolve.go: yamlStyleFloat, strconv.ParseFloat) where YAML 1.1 PyYAML kept strings
    ("5e-1", 0.5), ("1E3", 1000.0), ("1e3", 1000.0), ("1.0e3", 1000.0), ("-5e-1", -0.5), ("+.5", 0.5),
    ("-.5", -0.5), (".5e3", 500.0), ("08", 8.0), ("1.", 1.0),
    # unchanged: floats both read, integers, booleans, nulls, quoted strings, strings
    (".5", 0.5), ("1.5", 1.5), ("1_000.5", 1000.5), ("1.5e-3", 0.0015), (".inf", float("inf")),
    ("10", 10), ("-3", -3), ("0x1F", 31), ("0777", 511), ("1_000", 1000), ("true", True), ("yes", True),
    ("off", False), ("null", None), ("~", None), ("'5e-1'", "5e-1"), ('"1E3"', "1E3"), ("e3", "e3"),
    ("1e", "1e"), ("5e-1s", "5e-1s"), ("1.2.3", "1.2.3"),
    # strings to go-yaml: an out-of-range float, YAML 1.1 base-60 floats, date-times (their text, not a date)
    ("1e400", "1e400"), ("1:30.5", "1:30.5"), ("2024-01-01", "2024-01-01"),
    ("2024-01-01T10:00:00Z", "2024-01-01T10:00:00Z"), ("2001-12-14 21:59:43.10 -5", "2001-12-14 21:59:43.10 -5"),
])
def test_plain_scalars_resolve_like_go_yaml(text, value):
    problems = []
    assert parse_yaml(f"v: {text}\n", "f.yaml", "(file)", problems) == {"v": value} and problems == []
    assert type(parse_yaml(f"v: {text}\n", "f.yaml", "(file)", problems)["v"]) is type(value)


def test_an_exponent_rate_in_a_stack_file_is_the_number_pulumi_up_hands_the_program(tmp_path):
    text = (ROOT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert text.count("{kind: poisson, rate: 0.5,") == 1
    _project(tmp_path, text=text.replace("{kind: poisson, rate: 0.5,", "{kind: poisson, rate: 5e-1,"))
    # the Pulumi CLI: go-yaml reads 5e-1 as 0.5 and passes the object as JSON {"rate": 0.5}
    assert load_stack("dev", tmp_path).services[0].workload["rate"] == 0.5
    assert load_stack("dev", tmp_path) == load_stack("dev")
    _project(tmp_path, text=text.replace("{kind: poisson, rate: 0.5,",
                                         "{kind: poisson, rate: '5e-1',"))  # quoted: a string both ways
    assert "workload.rate: got '5e-1'" in _refused(load_stack, "dev", tmp_path)


def test_set_values_resolve_like_the_stack_file():
    _, values = stack_values("dev")
    apply_set(values, "services.chat.workload.rate=5e-1")
    assert values["services"][0]["workload"]["rate"] == 0.5


# -- stack names ----------------------------------------------------------------------------------------------

def test_a_folder_named_as_a_stack_file_is_named_as_a_folder_not_as_a_missing_stack(tmp_path):
    """It was left out of the stacks, so `--stack notes` read "expected one of dev" for a stack the user can see
    (review rev9-cli finding 7); now its reader says what it is."""
    _project(tmp_path)
    (tmp_path / "stacks" / "Pulumi.notes.yaml").mkdir()
    assert stack_names(tmp_path) == ["dev", "notes"]
    with pytest.raises(InputError, match=r"Pulumi.notes.yaml'; cannot read the file \(not a regular file but a folder"):
        stack_config_values("notes", tmp_path)
    with pytest.raises(InputError, match="--stack: got 'nope'; expected one of dev, notes$"):
        stack_config_values("nope", tmp_path)
