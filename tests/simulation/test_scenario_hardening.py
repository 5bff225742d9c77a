"""Issue 9's reproductions for scenarios and traces: every mistake is an InputError naming its key, the embedded
InferenceService is checked against the CRD schema, a run's cost is bounded before it starts."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulation import load_scenario, run_simulation
from simulation.budget import expected_requests
from simulation.workload import WorkloadSpec
from validation.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "scenarios"
CC1 = yaml.safe_load((EXAMPLES / "llm-knative-cc1.yaml").read_text())
ANN = "serving.kserve.io/deploymentMode"


def _edited(edit) -> dict:
    data = copy.deepcopy(CC1)
    edit(data)
    return data


def _meta(d):
    return d["inferenceService"]["metadata"]


def _pred(d):
    return d["inferenceService"]["spec"]["predictor"]


@pytest.mark.parametrize("edit, where, allowed", [
    (lambda d: _meta(d).update(annotations=["a"]), "inferenceService.metadata.annotations", "expected"),
    (lambda d: _meta(d)["annotations"].update({ANN: {"a": 1}}), f"[{ANN}]", "expected 'Knative'"),
    (lambda d: _meta(d)["annotations"].update({"preflight.kserve.io/engine": {"a": 1}}),
     "inferenceService.metadata.annotations.preflight.kserve.io/engine", "is not of type 'string'"),
    (lambda d: d["inferenceService"].update(metadata=[1]), "inferenceService.metadata", "expected"),
    (lambda d: _pred(d).update(containerConcurency=_pred(d).pop("containerConcurrency")),
     "inferenceService.spec.predictor", "'containerConcurency' was unexpected"),
    (lambda d: _pred(d).update(scaleTarget=0.5), "inferenceService.spec.predictor.scaleTarget",
     "is not of type 'integer'"),
    (lambda d: _meta(d)["annotations"].update({"autoscaling.knative.dev/activation-scale": "0"}),
     "activation-scale]: got '0'", "expected an integer >= 2"),
    (lambda d: d["workload"].update(rate=1e4), "workload: got 'mean rate 1e+04 req/s × 1800 s ≈ 18,000,000",
     "request budget of 2,000,000 requests"),
    (lambda d: d.update(max_requests=0), "max_requests: got 0", "expected an integer between 1"),
    (lambda d: d["workload"].update(output_tokens=float("inf")), "workload.output_tokens: got inf",
     "expected a token count between 1 and 10,000,000"),
    (lambda d: d["workload"].update(input_tokens=float("nan")), "workload.input_tokens: got nan",
     "expected a token count between 1 and 10,000,000"),
    # every pod is simulated: replica counts are bounded (hpa.MAX_REPLICAS)
    (lambda d: _pred(d).update(minReplicas=1_000_000), "predictor.minReplicas: got 1000000",
     "expected an integer between 0 and 10000"),
    (lambda d: _pred(d).update(maxReplicas=10_001), "predictor.maxReplicas: got 10001",
     "expected an integer between 0 and 10000"),
    (lambda d: _meta(d)["annotations"].update({"autoscaling.knative.dev/initial-scale": "1000000"}),
     "annotations[autoscaling.knative.dev/initial-scale]: got 1000000", "expected at most 10,000 replicas"),
], ids=["annotations-list", "mode-mapping", "engine-mapping", "metadata-list", "typo-in-isvc", "fractional-target",
        "activation-scale-0", "over-budget", "budget-0",
        "tokens-inf", "tokens-nan",  # these two found by the long fuzz run
        "min-replicas-huge", "max-replicas-huge", "initial-scale-huge"])
def test_scenario_mistake_is_an_input_error(edit, where, allowed):
    with pytest.raises(InputError) as err:
        load_scenario(_edited(edit), base_dir=EXAMPLES)
    assert where in str(err.value) and allowed in str(err.value), str(err.value)


def test_a_desired_scale_above_the_simulators_bound_keeps_the_run_bounded_and_says_so(monkeypatch):
    """An unbounded max-scale under a queue that keeps growing: Knative would create that many (Pending) pods;
    the simulator stops at MAX_REPLICAS (here lowered to 3) and reports the highest desired scale."""
    import simulation.replica_set as replica_set
    import simulation.report as report

    monkeypatch.setattr(replica_set, "MAX_REPLICAS", 3)
    monkeypatch.setattr(report, "MAX_REPLICAS", 3)
    sc = load_scenario(_edited(lambda d: (_pred(d).update(minReplicas=1, maxReplicas=0),
                                          d["workload"].update(rate=20.0), d.update(duration_s=120))),
                       base_dir=EXAMPLES)
    rep = run_simulation(sc, seed=1).to_dict()
    assert max(rep["replica_series"]["pods"]) == 3 and rep["replica_cap"]["limit"] == 3
    assert rep["replica_cap"]["desired_max"] > 3
    monkeypatch.undo()
    calm = load_scenario(copy.deepcopy(CC1), base_dir=EXAMPLES)
    assert "replica_cap" not in run_simulation(calm, seed=1).to_dict()      # control: no key when it never binds


def test_the_typo_no_longer_flips_the_prediction_silently():
    """Renaming containerConcurrency used to turn 6.1 % 504s into 0 errors without a word."""
    bad = _edited(lambda d: _pred(d).update(containerConcurency=_pred(d).pop("containerConcurrency")))
    with pytest.raises(InputError, match="containerConcurency"):
        load_scenario(bad, base_dir=EXAMPLES)
    load_scenario(copy.deepcopy(CC1), base_dir=EXAMPLES)  # control: the example itself is valid


def test_budget_can_be_raised_in_the_scenario_and_on_the_cli():
    big = _edited(lambda d: d["workload"].update(rate=1e4))
    load_scenario({**big, "max_requests": 20_000_000}, base_dir=EXAMPLES)
    load_scenario(big, base_dir=EXAMPLES, max_requests=20_000_000)
    with pytest.raises(InputError, match="request budget of 1,000 requests"):
        load_scenario(copy.deepcopy(CC1), base_dir=EXAMPLES, max_requests=1000)


@pytest.mark.parametrize("spec, duration, expected", [
    (WorkloadSpec("poisson", rate=2.0), 100, 200),
    (WorkloadSpec("gamma", rate=3.0, cv=4), 10, 30),
    (WorkloadSpec("step", rate=1.0, at_s=50, to_rate=3.0), 100, 50 + 150),
    (WorkloadSpec("step", rate=1.0, at_s=150, to_rate=3.0), 100, 100),
    (WorkloadSpec("spike", rate=1.0, at_s=10, duration_s=5, peak_rate=11.0), 100, 95 + 55),
    (WorkloadSpec("spike", rate=1.0, at_s=98, duration_s=5, peak_rate=11.0), 100, 98 + 22),
    (WorkloadSpec("diurnal", rate=2.0, period_s=100, amplitude=0.5), 100, 200),  # a whole period: the mean rate
    (WorkloadSpec("diurnal", rate=2.0, period_s=200, amplitude=0.5), 100, 200 + 2 * 0.5 * 200 / 3.141592653589793),
])
def test_expected_requests_integrate_the_rate(spec, duration, expected):
    assert expected_requests(spec, duration) == pytest.approx(expected)


def _trace(tmp_path, header: str, rows: list[str]) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def _trace_scenario(path: Path, **workload) -> dict:
    return _edited(lambda d: d.update(duration_s=60, warmup_s=0, workload={"kind": "trace", "path": str(path),
                                                                          **workload}))


def test_a_user_trace_with_other_columns_is_named_then_mapped(tmp_path):
    path = _trace(tmp_path, "time,prompt_tokens,output_tokens", [f"{i * 0.5},{100 + i},{20}" for i in range(100)])
    with pytest.raises(InputError) as err:
        load_scenario(_trace_scenario(path), base_dir=tmp_path)
    text = str(err.value)
    assert "no column for timestamp ('TIMESTAMP'), input_tokens ('ContextTokens'), output_tokens" in text
    assert "['time', 'prompt_tokens', 'output_tokens']" in text and "columns:" in text
    mapped = _trace_scenario(path, columns={"timestamp": "time", "input_tokens": "prompt_tokens",
                                            "output_tokens": "output_tokens"})
    scenario = load_scenario(mapped, base_dir=tmp_path)
    report = run_simulation(scenario, seed=1).to_dict()
    assert report["requests"] == 100  # rows at 0 … 49.5 s, all inside the 60 s run


@pytest.mark.parametrize("rows, allowed", [
    (["0,1,x"], "line 2: expected a timestamp"),
    (["yesterday,1,2"], "line 2: expected a timestamp"),
    (["0,1,2", "1,,2"], "line 3: expected a timestamp"),
    # capped as input_tokens/output_tokens are (MAX_TOKENS): 10^12 tokens made a run without end (rev9-cli 3)
    (["0,10000001,2"], "line 2: got 10000001 input and 2 output tokens .*; expected token counts of at most "
                       "10,000,000"),
    (["0,1,2", "1,5,999999999999"], "line 3: got 5 input and 999999999999 output tokens"),
])
def test_bad_trace_rows_are_named(tmp_path, rows, allowed):
    path = _trace(tmp_path, "TIMESTAMP,ContextTokens,GeneratedTokens", rows)
    with pytest.raises(InputError, match=allowed):
        load_scenario(_trace_scenario(path), base_dir=tmp_path)


def test_a_trace_row_at_the_token_cap_is_replayed(tmp_path):
    path = _trace(tmp_path, "TIMESTAMP,ContextTokens,GeneratedTokens", ["0,10000000,10000000", "1,5,6"])
    assert load_scenario(_trace_scenario(path), base_dir=tmp_path).workload.path == str(path)


def test_a_missing_trace_points_at_a_readme_section_that_exists(tmp_path):
    with pytest.raises(InputError) as err:
        load_scenario(_trace_scenario(tmp_path / "gone.csv"), base_dir=tmp_path)
    text = str(err.value)
    assert f"trace file not found (looked at {tmp_path / 'gone.csv'})" in text
    section = text.split("the README's '", 1)[1].split("'", 1)[0]
    readme = (EXAMPLES.parents[1] / "README.md").read_text(encoding="utf-8").splitlines()
    assert f"## {section}" in readme and "AzureLLMInferenceTrace" in "".join(readme)


def test_non_utf8_scenario_and_isvc_files(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes((EXAMPLES / "llm-knative-cc1.yaml").read_bytes().replace(b"# ", b"# \xff", 1))
    with pytest.raises(InputError, match="not UTF-8"):
        load_scenario(bad)
    (tmp_path / "isvc.yaml").write_bytes(b"kind: InferenceService\nmetadata: {name: caf\xe9}\n")
    data = {k: v for k, v in CC1.items() if k != "inferenceService"}
    with pytest.raises(InputError, match=r"inferenceServiceFile: got .*isvc.yaml'; expected a UTF-8 text file"):
        load_scenario({**data, "inferenceServiceFile": "isvc.yaml"}, base_dir=tmp_path)


def test_progress_does_not_change_the_result():
    scenario = load_scenario(_edited(lambda d: d.update(duration_s=120)), base_dir=EXAMPLES)
    seen: list[float] = []
    with_progress = run_simulation(scenario, seed=3, progress=seen.append).to_json()
    assert run_simulation(scenario, seed=3).to_json() == with_progress
    assert len(seen) == 100 and seen[-1] == 1.0 and seen == sorted(seen)


def test_cli_budget_flag_and_no_traceback(tmp_path):
    """Run from another working directory (the package root on PYTHONPATH, as `pip install -e .` provides)."""
    env = {**os.environ, "PYTHONPATH": str(EXAMPLES.parents[1])}
    big = tmp_path / "big.yaml"
    big.write_text(yaml.safe_dump(_edited(lambda d: d["workload"].update(rate=1e4))))
    proc = subprocess.run([sys.executable, "-m", "simulation", "run", str(big), "--max-requests", "5"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
    assert proc.returncode == 2 and "request budget of 5 requests" in proc.stderr
    assert "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "simulation", "run", str(big), "--max-requests", "0"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120, env=env)
    assert proc.returncode == 2 and "--max-requests: got 0" in proc.stderr


def test_timeline_samples_are_bounded_naming_both_keys():
    """30 days at 0.1 s was 26 million samples: minutes and gigabytes before the first request."""
    with pytest.raises(InputError) as err:
        load_scenario(_edited(lambda d: d.update(duration_s=86400, series_interval_s=0.1)), base_dir=EXAMPLES)
    text = str(err.value)
    assert "series_interval_s: got 0.1; expected at least duration_s / 50,000 = 1.728 s for duration_s 86400" in text
    sc = load_scenario(_edited(lambda d: d.update(duration_s=5000, series_interval_s=0.1)), base_dir=EXAMPLES)
    assert sc.series_interval_s == 0.1  # control: exactly 50,000 samples
    assert load_scenario(_edited(lambda d: d.update(duration_s=86400)), base_dir=EXAMPLES).series_interval_s is None


@pytest.fixture
def new_york(monkeypatch):
    """The machine's zone set to one with a DST change (2023-11-05 02:00 EDT → 01:00 EST); restored after."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _stamps_csv(tmp_path, name: str, *stamps: str) -> str:
    path = tmp_path / name
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(f"{s},10,20\n" for s in stamps))
    return str(path)


def test_trace_date_times_without_a_zone_are_utc_on_any_machine(tmp_path, new_york):
    from simulation.workload import read_trace

    path = _stamps_csv(tmp_path, "naive.csv", "2023-11-05 01:59:00.0000000", "2023-11-05 02:01:00.5000000")
    assert read_trace(path)[0] == [0.0, 120.5]  # was 3720.5 s in New York: the local clock fell back an hour
    zoned = _stamps_csv(tmp_path, "zoned.csv", "2023-11-05 01:59:00.1234567+00:00", "2023-11-05T02:01:00.1234567Z",
                   "2023-11-05 01:03:00-01:00")
    assert read_trace(zoned)[0] == pytest.approx([0.0, 120.0, 240.0 - 0.123456])  # the offset survives seven
                                                                                  # fractional digits


@pytest.mark.parametrize("stamps, line, message", [
    (("2023-11-05 01:59:00", "2023-11-05 02:01:00+00:00"), 3,
     "a date-time with a UTC offset in 'TIMESTAMP' after a date-time without a UTC offset (read as UTC) on line 2"),
    (("2023-11-05T01:59:00Z", "2023-11-05 02:01:00"), 3,
     "a date-time without a UTC offset (read as UTC) in 'TIMESTAMP' after a date-time with a UTC offset on line 2"),
    (("12.5", "2023-11-05 02:01:00"), 3, "after a number of seconds on line 2"),
])
def test_a_trace_mixing_timestamp_forms_is_refused(tmp_path, stamps, line, message):
    from simulation.workload import TraceError, read_trace

    with pytest.raises(TraceError) as err:
        read_trace(_stamps_csv(tmp_path, f"mixed{line}{len(message)}.csv", *stamps))
    assert str(err.value).startswith(f"line {line}: ") and message in str(err.value)
    with pytest.raises(InputError, match="workload.path"):  # as a scenario reports it
        load_scenario(_edited(lambda d: d.update(workload={"kind": "trace", "path": str(tmp_path / f"mixed{line}"
                                                                                           f"{len(message)}.csv")})),
                      base_dir=EXAMPLES)


def test_the_table_of_a_run_where_every_request_failed_prints_na():
    """Every request failed before a first byte (no node in time): the TTFB percentiles are None, and the table
    says n/a as --json says null, instead of a TypeError (exit 3) formatting None."""
    import io

    from rich.console import Console

    data = _edited(lambda d: d.update(duration_s=60, warmup_s=0, initial_replicas=0))
    data["cluster"]["node_provision_s"] = 900
    _pred(data)["timeout"] = 10
    report = run_simulation(load_scenario(data, base_dir=EXAMPLES), seed=1)
    assert report["ttfb_s"]["p50"] is None and report["status_counts"] == {"504": report["requests"]}
    out = io.StringIO()
    report.render(Console(file=out, width=200))
    assert "time to first byte p50/p99 (s)" in out.getvalue() and "n/a / n/a" in out.getvalue()
