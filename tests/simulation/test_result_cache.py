"""The on-disk cache of replication results: what a warm run returns is what a cold run computes, and any
change to the scenario, the seed or the simulator's source misses."""

from __future__ import annotations

import json

import pytest

from simulation import result_cache
from simulation.replicate import clear_cache, run_replications
from simulation.result_cache import ResultCache

SCENARIO = {
    "name": "cache-mm2",
    "inferenceService": {
        "apiVersion": "serving.kserve.io/v1beta1", "kind": "InferenceService", "metadata": {"name": "mm2"},
        "spec": {"predictor": {"minReplicas": 2, "maxReplicas": 2, "containerConcurrency": 1,
                               "model": {"modelFormat": {"name": "sklearn"}}}}},
    "workload": {"kind": "poisson", "rate": 1.5},
    "server": {"kind": "simple", "base_s": 1.0, "distribution": "exponential"},
    "duration_s": 300,
}


def _run(cache, scenario=SCENARIO, seeds=(1, 2, 3)):
    clear_cache()  # this process's own cache would answer first
    return run_replications([scenario], list(seeds), cache=cache)[0]


def test_a_warm_run_returns_exactly_what_the_cold_run_computed(tmp_path):
    cold_cache = ResultCache(tmp_path)
    cold = _run(cold_cache)
    assert (cold_cache.hits, cold_cache.misses) == (0, 3) and len(list(tmp_path.glob("*/*.json"))) == 3
    warm_cache = ResultCache(tmp_path)
    warm = _run(warm_cache)
    assert (warm_cache.hits, warm_cache.misses) == (3, 0)
    assert json.dumps(warm, sort_keys=True) == json.dumps(cold, sort_keys=True) == json.dumps(_run(None),
                                                                                           sort_keys=True)


def test_the_seed_the_scenario_and_the_simulator_source_are_in_the_key(tmp_path, monkeypatch):
    cache = ResultCache(tmp_path)
    job = (json.dumps(SCENARIO, sort_keys=True), 1, None)
    key = cache.key(job)
    assert key != cache.key((job[0], 2, None))
    assert key != cache.key((json.dumps({**SCENARIO, "duration_s": 301}, sort_keys=True), 1, None))
    assert key != cache.key((job[0], 1, "/elsewhere"))
    monkeypatch.setattr(result_cache, "simulator_fingerprint", lambda: "edited simulator")
    assert key != cache.key(job)
    trace = {**SCENARIO, "workload": {"kind": "trace", "path": "x.csv"}}
    assert cache.key((json.dumps(trace, sort_keys=True), 1, None)) is None   # the file is not in the key
    from_file = {**SCENARIO, "inferenceServiceFile": "isvc.yaml"}
    assert cache.key((json.dumps(from_file, sort_keys=True), 1, None)) is None


def test_the_fingerprint_covers_every_simulator_source_file():
    before = result_cache.simulator_fingerprint()
    assert len(before) == 64 and before == result_cache.simulator_fingerprint()
    files = {p.relative_to(result_cache.ROOT).as_posix() for top in result_cache.SOURCES
             for p in (result_cache.ROOT / top).rglob("*.py")}
    assert {"simulation/gpu/vllm_v1.py", "simulation/engine.py", "catalog/__init__.py"} <= files


def test_an_unusable_directory_only_means_simulating(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = ResultCache(blocked / "cache")
    assert _run(cache, seeds=(1,)) == _run(None, seeds=(1,))
    assert cache.hits == 0
    corrupt = ResultCache(tmp_path)
    key = corrupt.key((json.dumps(SCENARIO, sort_keys=True), 1, None))
    (tmp_path / key[:2]).mkdir(exist_ok=True)
    (tmp_path / key[:2] / f"{key}.json").write_text("{half a file")
    assert _run(corrupt, seeds=(1,)) == _run(None, seeds=(1,)) and corrupt.hits == 0


def test_the_cache_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(result_cache, "MAX_ENTRIES", 4)
    cache = ResultCache(tmp_path)
    _run(cache, seeds=range(1, 7))
    assert len(list(tmp_path.glob("*/*.json"))) == 4


def test_preflight_check_uses_the_cache_unless_told_not_to(tmp_path, capsys):
    from preflight import check as cli

    args = ["check", "--json", "--timings", "--workers", "1", "--cache-dir", str(tmp_path)]
    clear_cache()
    assert cli.main(args) == 0
    cold = json.loads(capsys.readouterr().out)
    clear_cache()
    assert cli.main(args) == 0
    warm = json.loads(capsys.readouterr().out)
    assert warm["stacks"] == cold["stacks"]
    hits = [n for n in warm["timings"]["notes"] if "from the cache" in n]
    assert hits and hits[0].startswith("replications from the cache: ") and " 0 of" not in hits[0]
    clear_cache()
    assert cli.main(args + ["--no-cache"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    assert fresh["stacks"] == cold["stacks"] and not fresh["timings"]["notes"]


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    yield
    clear_cache()
