"""Review rev-fuzz findings 6 and 8: a trace CSV saved by Excel ("CSV UTF-8", with a byte-order mark) is read like
any other, and a scenario whose duration_s is refused is not checked against the default 600 s instead."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from simulation import load_scenario
from simulation.trace import read_trace
from validation.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
CC1 = yaml.safe_load((EXAMPLES / "llm-knative-cc1.yaml").read_text())
ROWS = "t,pin,pout\r\n0,100,20\r\n1.5,200,30\r\n"
COLUMNS = (("timestamp", "t"), ("input_tokens", "pin"), ("output_tokens", "pout"))


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b""], ids=["excel-csv-utf-8", "plain"])
def test_a_trace_with_a_byte_order_mark_reads_its_first_column(tmp_path, bom):
    """The BOM used to stick to the first header: "the CSV has no column for timestamp ('t'); its columns are
    ['\\ufefft', 'pin', 'pout']"."""
    path = tmp_path / "trace.csv"
    path.write_bytes(bom + ROWS.encode())
    assert read_trace(str(path), COLUMNS) == ([0.0, 1.5], [100, 200], [20, 30])


def test_a_scenario_replays_an_excel_trace(tmp_path):
    path = tmp_path / "excel.csv"
    path.write_bytes(b"\xef\xbb\xbf" + ROWS.encode())
    data = copy.deepcopy(CC1)
    data.update(duration_s=60, warmup_s=0, workload={"kind": "trace", "path": str(path),
                                                     "columns": dict(COLUMNS)})
    assert load_scenario(data, base_dir=tmp_path).workload.kind == "trace"


def _problems(**top) -> list[str]:
    """The problems of CC1 at 1e9 req/s with `top` set over its keys (None: the key left out)."""
    data = copy.deepcopy(CC1)
    data.update(top)
    data = {k: v for k, v in data.items() if v is not None}
    data["workload"]["rate"] = 1e9
    with pytest.raises(InputError) as err:
        load_scenario(data, base_dir=EXAMPLES)
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize("duration", [0.001, "ten", None], ids=["too-short", "not-a-number", "missing"])
def test_nothing_is_checked_against_a_refused_duration(duration):
    """duration_s 0.001 and rate 1e9 used to read "mean rate 1e+09 req/s × 600 s": a duration never typed (and
    warmup_s was held to "less than duration_s (600.0)")."""
    problems = _problems(duration_s=duration, warmup_s=900)
    assert [p.split(":")[0] for p in problems] == ["duration_s"]


def test_a_valid_duration_is_checked_against_the_budget():
    """The control: the typed duration is the one named."""
    problems = _problems(duration_s=10, warmup_s=0)
    assert problems == [problems[0]] and problems[0].startswith(
        "workload: got 'mean rate 1e+09 req/s × 10 s ≈ 10,000,000,000 requests'")


def test_a_refused_max_requests_is_not_replaced_by_the_default_budget():
    assert _problems(duration_s=10, warmup_s=0, max_requests=0) == [
        "max_requests: got 0; expected an integer between 1 and 1000000000000"]
