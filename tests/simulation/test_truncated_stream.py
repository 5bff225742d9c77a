"""Knative's revision timeout (pkg/http/handler/timeout.go): a 504 only while nothing was written; a streamed
response already under way is cut off — reported as "200-truncated" and counted as an error by the gate."""

from simulation import load_scenario, run_simulation
from simulation.report_terms import served_errors
from simulation.request import TRUNCATED, status_label


def scenario(base_s: float, per_output_token_s: float) -> dict:
    return {
        "name": "stream-timeout",
        "inferenceService": {
            "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService",
            "metadata": {"name": "s", "annotations": {"autoscaling.knative.dev/target-burst-capacity": "0"}},
            "spec": {"predictor": {"minReplicas": 1, "maxReplicas": 1, "containerConcurrency": 4, "timeout": 5,
                                   "model": {"modelFormat": {"name": "huggingface"}}}}},
        "workload": {"kind": "poisson", "rate": 0.2, "input_tokens": 100, "output_tokens": 100},
        "server": {"kind": "simple", "base_s": base_s, "per_output_token_s": per_output_token_s,
                   "distribution": "deterministic"},
        "duration_s": 600,
    }


def test_a_stream_past_the_timeout_is_a_truncated_200_and_an_error():
    report = run_simulation(load_scenario(scenario(0.1, 0.1)), seed=1).to_dict()  # first byte 0.1 s, done 10.1 s
    counts = report["status_counts"]
    assert counts.get("200-truncated", 0) == report["requests"] > 50 and "504" not in counts
    assert report["errors_by_component"]["200-truncated"] == {"queue-proxy": report["requests"]}
    assert served_errors(report) == report["requests"]


def test_no_first_byte_before_the_timeout_is_a_504():
    report = run_simulation(load_scenario(scenario(6.0, 0.0)), seed=1).to_dict()  # first byte at 6 s > 5 s
    counts = report["status_counts"]
    assert counts.get("504", 0) == report["requests"] and "200-truncated" not in counts


def test_streams_within_the_timeout_are_plain_200s():
    report = run_simulation(load_scenario(scenario(0.1, 0.01)), seed=1).to_dict()  # done at 1.1 s
    assert report["status_counts"] == {"200": report["requests"]}
    assert status_label(TRUNCATED) == "200-truncated" and status_label(504) == "504"
