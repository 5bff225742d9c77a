"""`python -m simulation run`: JSON keys, seeded byte-identical output, exit 2 with a named key for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulation.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "scenarios"
REQUIRED = {"requests", "status_counts", "error_rates", "latency_s", "cold_starts", "pod_restarts", "replicas",
            "gpu_hours"}


def small(tmp_path: Path, scn, **changes) -> Path:
    data = {
        "name": "small",
        "inferenceService": scn.isvc(cc=2, min_replicas=1, max_replicas=3),
        "workload": {"kind": "gamma", "rate": 4.0, "cv": 2.0, "input_tokens": 200, "output_tokens": 50},
        "client": {"timeout_s": 30, "max_retries": 1},
        "server": {"kind": "simple", "base_s": 0.2, "per_output_token_s": 0.004},
        "cluster": {"node_provision_s": 30, "warmup_s": 5},
        "duration_s": 300,
    }
    data.update(changes)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_json(capsys, *argv: str) -> tuple[str, dict]:
    assert main(["run", *argv, "--json"]) == 0
    out = capsys.readouterr().out
    return out, json.loads(out)


def test_json_has_the_contract_keys(tmp_path, scn, capsys):
    _, d = run_json(capsys, str(small(tmp_path, scn)))
    assert REQUIRED <= set(d)
    assert set(d["latency_s"]) >= {"p50", "p95", "p99"}
    assert set(d["replicas"]) == {"min", "mean", "max"}
    assert all(isinstance(k, str) and k.isdigit() for k in d["status_counts"])
    assert sum(d["status_counts"].values()) == d["requests"]
    for rate in d["error_rates"].values():
        lo, hi = rate["ci95"]
        assert lo <= rate["rate"] <= hi


def test_same_seed_same_bytes_other_seed_differs(tmp_path, scn, capsys):
    path = str(small(tmp_path, scn))
    a, _ = run_json(capsys, path, "--seed", "7")
    b, _ = run_json(capsys, path, "--seed", "7")
    c, _ = run_json(capsys, path, "--seed", "8")
    assert a == b
    assert a != c


def test_table_output(tmp_path, scn, capsys):
    assert main(["run", str(small(tmp_path, scn))]) == 0
    out = capsys.readouterr().out
    assert "HTTP 200" in out and "latency p50/p95/p99" in out


@pytest.mark.parametrize("changes,key", [
    ({"duration_s": -5}, "duration_s"),
    ({"worklaod": {"kind": "poisson", "rate": 1}}, "worklaod"),
    ({"workload": {"kind": "poisson", "rate": "fast"}}, "workload.rate"),
    ({"server": {"kind": "quantum"}}, "server.kind"),
    ({"client": {"max_retries": -1}}, "client.max_retries"),
    ({"cluster": {"gpus_per_node": 0}}, "cluster.gpus_per_node"),
    ({"inferenceService": {"kind": "InferenceService", "metadata": {"annotations": {
        "autoscaling.knative.dev/window": "2s"}}, "spec": {"predictor": {}}}}, "autoscaling.knative.dev/window"),
    ({"inferenceService": {"spec": {"predictor": {"containerConcurrency": 5000}}}},
     "inferenceService.spec.predictor.containerConcurrency"),
], ids=["negative-duration", "typo", "rate-type", "server-kind", "retries", "gpus", "annotation", "cc-range"])
def test_bad_scenarios_exit_2_naming_the_key(tmp_path, scn, capsys, changes, key):
    with pytest.raises(SystemExit) as exc:
        main(["run", str(small(tmp_path, scn, **changes)), "--json"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and key in err


def test_missing_file_and_bad_yaml(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["run", str(tmp_path / "nope.yaml")])
    assert exc.value.code == 2 and "cannot read" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    bad.write_text("workload: [unclosed\n")
    with pytest.raises(SystemExit) as exc:
        main(["run", str(bad)])
    assert exc.value.code == 2 and "expected valid YAML" in capsys.readouterr().err


def test_subprocess_exit_status_without_traceback(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("duration_s: ten\n")
    p = subprocess.run([sys.executable, "-m", "simulation", "run", str(bad)], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and "duration_s" in p.stderr and "inferenceService" in p.stderr


def test_inference_service_file_with_hpa(capsys):
    _, d = run_json(capsys, str(EXAMPLES / "standard-hpa.yaml"), "--seed", "1")
    assert d["mode"] == "Standard"
    assert d["replicas"]["max"] > 1                      # the HPA scaled on in-flight requests
    assert set(d["errors_by_component"].get("429", {})) <= {"server"}


def test_example_scenarios_load():
    from simulation import load_scenario
    from validation.errors import InputError
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.name.endswith(".manifest.yaml"):
            continue
        try:
            load_scenario(path)
        except InputError as err:
            if "trace file not found" in str(err):
                continue   # the shared data folder is optional
            raise


def test_byte_identical_across_processes(tmp_path, scn):
    path = str(small(tmp_path, scn))
    outs = set()
    for hashseed in ("1", "2"):
        p = subprocess.run([sys.executable, "-m", "simulation", "run", path, "--json", "--seed", "5"], cwd=ROOT,
                           capture_output=True, text=True, env={"PYTHONHASHSEED": hashseed, "PATH": "/usr/bin:/bin"})
        assert p.returncode == 0, p.stderr
        outs.add(p.stdout)
    assert len(outs) == 1


def test_hpa_key_in_knative_mode_is_reported(tmp_path, scn, capsys):
    with pytest.raises(SystemExit):
        main(["run", str(small(tmp_path, scn, hpa={"kind": "HorizontalPodAutoscaler"}))])
    assert "hpa:" in capsys.readouterr().err


def test_pod_larger_than_a_node_is_reported(tmp_path, scn, capsys):
    with pytest.raises(SystemExit):
        main(["run", str(small(tmp_path, scn, inferenceService=scn.isvc(gpus=2), cluster={"gpus_per_node": 1}))])
    assert "cluster.gpus_per_node" in capsys.readouterr().err
