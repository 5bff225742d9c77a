"""Files a user names on a command line or in a scenario: only regular files are read, never past a cap, and
what they hold is checked (session 8 fuzz review items 4, 5, 12). Each refusal is exit 2 / an InputError naming
the file, the value and what is allowed; none reads a device or waits on a FIFO."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from simulation import load_scenario
from simulation import trace as wl
from simulation.__main__ import main
from validation.errors import InputError
from validation.yaml_input import read_text

FIX = Path(__file__).resolve().parents[1] / "simulation" / "fixtures" / "vllm"
BENCH = FIX / "bench-llama3.1-8b-l40s-c1.json"
MODEL = ["--model", "llama-3.1-8b", "--gpu", "L40S"]
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"


def _exit_2(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "internal error" not in err and "Traceback" not in err
    return err


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def test_a_fifo_is_refused_at_once_by_every_reader(fifo, capsys):
    """Opening a FIFO for reading blocks until a writer comes; the old readers (st_size 0 passed the cap) hung."""
    problems = []
    assert read_text(fifo, "--workload", problems) is None
    assert "not a regular file but a named pipe (FIFO)" in problems[0].allowed
    err = _exit_2(["calibrate", "vllm-log", str(fifo), *MODEL], capsys)
    assert f"FILE: got '{fifo}'" in err and "named pipe (FIFO)" in err
    err = _exit_2(["run", str(fifo)], capsys)
    assert "named pipe (FIFO)" in err
    with pytest.raises(wl.TraceError, match="named pipe"):
        wl.read_trace(str(fifo))


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
@pytest.mark.parametrize("source", ["bench", "vllm-log"])
def test_a_device_is_refused_before_it_is_read(source, capsys):
    """`calibrate bench /dev/zero` used to read until memory ran out (24 GB)."""
    err = _exit_2(["calibrate", source, "/dev/zero", *MODEL], capsys)
    assert "FILE: got '/dev/zero'" in err and "not a regular file but a character device" in err


def test_a_folder_is_refused_naming_it(tmp_path, capsys):
    err = _exit_2(["calibrate", "bench", str(tmp_path), *MODEL], capsys)
    assert "not a regular file but a folder" in err


def test_calibrate_reads_at_most_its_cap(tmp_path, capsys, monkeypatch):
    import preflight.calibrate as cal
    monkeypatch.setattr(cal, "MAX_INPUT_BYTES", 1024)
    path = tmp_path / "bench.json"
    path.write_text(BENCH.read_text())
    err = _exit_2(["calibrate", "bench", str(path), *MODEL], capsys)
    assert f"FILE: got '{path}'; expected a file of at most 0.000976562 MiB" in err
    monkeypatch.setattr(cal, "MAX_INPUT_BYTES", len(BENCH.read_bytes()))
    assert main(["calibrate", "bench", str(path), *MODEL]) == 0   # the control: the same file within the cap


def _bench(tmp_path, **changes) -> Path:
    data = json.loads(BENCH.read_text())
    data.update(changes)
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("outputs", [0, 1])
def test_a_prefill_only_benchmark_exits_2(outputs, tmp_path, capsys):
    """output_lens all 0 or 1 and empty itls: no decode step to fit (was ZeroDivisionError, exit 3)."""
    n = len(json.loads(BENCH.read_text())["ttfts"])
    path = _bench(tmp_path, output_lens=[outputs] * n, itls=[[] for _ in range(n)])
    err = _exit_2(["calibrate", "bench", str(path), *MODEL], capsys)
    assert "two or more output tokens" in err and "found 0" in err


@pytest.mark.parametrize("key, value", [("duration", 1e-9), ("duration", 1e308), ("request_throughput", 1e9)])
def test_a_run_time_no_run_can_have_is_refused(key, value, tmp_path, capsys):
    """A run shorter than its slowest TTFT (or the throughput that implies one) is not a measurement: it used to
    print efficiencies fitted to a batch of millions."""
    data = json.loads(BENCH.read_text())
    data.pop("request_throughput", None)
    data[key] = value
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    err = _exit_2(["calibrate", "bench", str(path), *MODEL], capsys)
    assert f"{key}: got {value!r}" in err and "slowest TTFT" in err


def _trace(tmp_path, rows: list[str]) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(rows) + "\n")
    wl._TRACE_CACHE.clear()
    return path


def test_negative_token_counts_are_refused_with_the_line(tmp_path):
    path = _trace(tmp_path, ["0,10,5", "1,-3,4", "2,7,0"])
    with pytest.raises(wl.TraceError, match=r"line 3: got -3 input and 4 output tokens.*expected token counts >= 0"):
        wl.read_trace(str(path))
    path = _trace(tmp_path, ["0,10,5", "1,3,4", "2,7,0"])   # the control: a 0 is replayed as 1 token
    assert wl.read_trace(str(path))[2] == [5, 4, 1]


def test_a_trace_is_bounded_in_rows_and_bytes(tmp_path, monkeypatch):
    rows = [f"{i},10,5" for i in range(20)]
    monkeypatch.setattr(wl, "MAX_TRACE_ROWS", 10)
    with pytest.raises(wl.TraceError, match="at most 10 rows"):
        wl.read_trace(str(_trace(tmp_path, rows)))
    monkeypatch.setattr(wl, "MAX_TRACE_ROWS", 20)
    assert len(wl.read_trace(str(_trace(tmp_path, rows)))[0]) == 20
    monkeypatch.setattr(wl, "MAX_TRACE_BYTES", 100)
    with pytest.raises(wl.TraceError, match="expected a CSV of at most 9.53674e-05 MiB; this one is"):
        wl.read_trace(str(_trace(tmp_path, rows)))


def test_a_scenario_naming_a_fifo_trace_says_what_it_is(fifo):
    with pytest.raises(InputError) as err:
        load_scenario({"name": "x", "workload": {"kind": "trace", "path": str(fifo)}, "duration_s": 60},
                      base_dir=EXAMPLES)
    assert "named pipe (FIFO)" in str(err.value) and "workload.path" in str(err.value)
