"""Stack-file and environment inputs that used to pass silently or end in a traceback (session 8 fuzz review items
7, 8, 9, 11, 13): a key written twice, catalog figures past anything physical, a JSON config string with a huge
integer or a repeated key, an output path too long for the file system, a cache folder variable naming a file."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from simulation import result_cache
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from validation.errors import InputError
from validation.paths import check_output_dir
from validation.yaml_input import parse_yaml

PROJECT, VALUES = stack_config_values("dev")


def _yaml(text: str):
    problems = []
    return parse_yaml(text, "Pulumi.x.yaml", "Pulumi.x.yaml", problems), problems


@pytest.mark.parametrize("text, line, path, first", [
    ("a: 1\na: 2\n", 2, "a", 1),
    ("config:\n  svc:\n    maxReplicas: 5\n    minReplicas: 1\n    maxReplicas: 50\n", 5, "config.svc.maxReplicas", 3),
    ("services:\n  - {name: a, gpus: 1}\n  - {name: b, gpus: 1, 'gpus': 2}\n", 3, "services[1].gpus", 3),
])
def test_a_key_written_twice_is_refused_with_both_lines(text, line, path, first):
    """PyYAML keeps the last value silently (maxReplicas 50, not 5); go-yaml v3 refuses the file."""
    data, problems = _yaml(text)
    assert data is None and len(problems) == 1
    assert problems[0].value == f"Pulumi.x.yaml, line {line}: {path}"
    assert f"is already defined at line {first}" in problems[0].allowed


def test_keys_once_each_and_merge_keys_are_accepted():
    data, problems = _yaml("base: &b {gpus: 1, cpu: '3'}\nsvc:\n  <<: *b\n  cpu: '4'\nother: *b\n")
    assert not problems and data["svc"] == {"gpus": 1, "cpu": "4"} and data["other"]["cpu"] == "3"


def _parse(edit):
    values = project_values(copy.deepcopy(VALUES), PROJECT)
    edit(values)
    return parse_stack_config(values, PROJECT, "dev")


GPU = {"memoryGib": 48, "bandwidthGbps": 864, "bf16Tflops": 362, "cudaTotalGib": 44.4}
MODEL = {"paramsB": 8, "layers": 32, "kvHeads": 8, "headDim": 128, "hiddenSize": 4096, "vocabSize": 128256,
         "maxContext": 8192, "intermediateSize": 14336}


@pytest.mark.parametrize("section, field, value, allowed", [
    ("models", "paramsB", 1e308, "between 0.0001 and 100000"),
    ("gpus", "memoryGib", 1e308, "between 1 and 4096"),
    ("gpus", "cudaTotalGib", 1e308, "between 0 and 4096"),
    ("gpus", "bandwidthGbps", 1e308, "between 1 and 100000"),
    ("models", "hiddenSize", 2 ** 63, "between 0 and 1000000"),
    ("instanceTypes", "memoryGib", 10 ** 20, "between 1 and 65536"),
])
def test_catalog_figures_past_anything_physical_are_refused(section, field, value, allowed):
    """1e308 used to overflow the memory arithmetic (OverflowError, exit 3)."""
    def edit(v):
        catalog = {"gpus": {"G": dict(GPU)}, "models": {"M": dict(MODEL)},
                   "instanceTypes": {"x.big": {"gpu": "G", "gpus": 1, "memoryGib": 64, "vcpus": 8}}}
        name = {"gpus": "G", "models": "M", "instanceTypes": "x.big"}[section]
        catalog[section][name][field] = value
        v["catalog"] = catalog
    with pytest.raises(InputError) as err:
        _parse(edit)
    assert f"catalog.{section}." in str(err.value) and f".{field}: got" in str(err.value) and allowed in str(err.value)


def test_a_catalog_at_real_figures_is_accepted():
    _parse(lambda v: v.update(catalog={"gpus": {"B200x": {**GPU, "memoryGib": 180, "bandwidthGbps": 8000,
                                                           "bf16Tflops": 2250}},
                                       "models": {"M": {**MODEL, "paramsB": 2000}}}))


@pytest.mark.parametrize("text, expected", [
    ('{"sizeGib": ' + "1" * 5000 + "}", "expected JSON whose numbers have at most 30 digits"),
    ('{"sizeGib": 100, "sizeGib": 5, "credentialsSecret": "hf-token"}',
     "expected each key once in a JSON object; 'sizeGib' appears twice"),
])
def test_a_json_config_string_is_read_safely(text, expected):
    """The CLI hands objects over as JSON strings: a 5,000-digit integer was a ValueError (exit 3), a repeated key
    silently kept the last value."""
    values = dict(VALUES)
    values["kserve-preflight:modelCache"] = text
    with pytest.raises(InputError) as err:
        project_values(values, PROJECT)
    assert "kserve-preflight:modelCache: got" in str(err.value) and expected in str(err.value)


def test_an_output_path_too_long_for_the_file_system_is_an_input_error(tmp_path):
    """A name over 255 bytes: OSError ENAMETOOLONG from Path.exists (exit 3)."""
    with pytest.raises(InputError, match=r"--cache-dir: got .*\(3\d\d characters\)'; expected a folder path this "
                                         r"system can create"):
        check_output_dir("--cache-dir", tmp_path / ("x" * 300))
    assert check_output_dir("--cache-dir", tmp_path / ("x" * 200)) == tmp_path / ("x" * 200)


def test_the_cache_folder_variable_is_checked_as_cache_dir_is(tmp_path, monkeypatch):
    """KSERVE_PREFLIGHT_CACHE_DIR naming a file used to run silently without a cache; --cache-dir refused it."""
    file = tmp_path / "file"
    file.write_text("")
    monkeypatch.setenv(result_cache.ENV, str(file))
    with pytest.raises(InputError, match="KSERVE_PREFLIGHT_CACHE_DIR: got .*; expected a folder to write into; this "
                                         "is an existing file"):
        result_cache.ResultCache()
    monkeypatch.setenv(result_cache.ENV, str(tmp_path / "cache"))
    assert result_cache.ResultCache().dir == Path(tmp_path / "cache")
