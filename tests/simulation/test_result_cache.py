"""The on-disk cache of replication results: what a warm run returns is what a cold run computes, and any
change to the scenario, the seed or the simulator's source misses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from simulation import result_cache
from simulation.replicate import clear_cache, run_replications
from simulation.result_cache import ResultCache
from small_scenario import simple_service

SCENARIO = simple_service("cache-mm2", "mm2", 2, 1.5, 1.0, 300)


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


def _copy_sources(root):
    import shutil

    for top in result_cache.SOURCES:
        shutil.copytree(result_cache.ROOT / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.parametrize("edit", ["simulation/engine.py", "simulation/gpu/vllm_v1.py", "catalog/__init__.py",
                                  "validation/errors.py", "new file", "renamed"])
def test_any_edit_to_the_simulators_files_changes_the_fingerprint(tmp_path, edit):
    fingerprint = result_cache.simulator_fingerprint
    root = _copy_sources(tmp_path / "copy")
    same = fingerprint(root)
    assert len(same) == 64 and same == fingerprint(result_cache.ROOT)   # paths relative, bytes the same
    if edit == "new file":
        (root / "simulation" / "gpu" / "extra.py").write_text("")
    elif edit == "renamed":
        (root / "simulation" / "engine.py").rename(root / "simulation" / "engine2.py")
    else:
        data = bytearray((root / edit).read_bytes())
        data[len(data) // 2] ^= 1                                     # one bit of one byte
        (root / edit).write_bytes(bytes(data))
    fingerprint.cache_clear()
    assert fingerprint(root) != same
    (root / "simulation" / "__pycache__").mkdir(exist_ok=True)        # compiled files are not sources
    (root / "simulation" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert fingerprint(result_cache.ROOT) == same == fingerprint(_copy_sources(tmp_path / "again"))


def test_a_replication_imports_nothing_from_the_project_outside_the_fingerprinted_folders():
    """The key holds the simulator's files only: a replication that loaded stackconfig/ or manifests/ would be
    answered from the cache after an edit there. Each kind of job (a single scenario, and the gate's fleets:
    steady and every stress scenario of the prod stack) runs in a fresh interpreter, which lists what it
    loaded."""
    import subprocess
    import sys

    import gate
    from stackconfig.load import load_stack

    fleets = {json.dumps(t.scenario, sort_keys=True) for t in gate.trials(load_stack("prod"))}
    assert len(fleets) >= 4
    jobs = [[json.dumps(SCENARIO, sort_keys=True), 1, None]] + [[text, 1, str(result_cache.ROOT)]
                                                               for text in sorted(fleets)]
    script = (
        "import json, sys\n"
        "from simulation.replicate import simulate_job\n"
        "for job in json.load(sys.stdin):\n"
        "    simulate_job(tuple(job))\n"
        "print(json.dumps(sorted(getattr(m, '__file__', None) or '' for m in list(sys.modules.values()))))\n")
    out = subprocess.run([sys.executable, "-c", script], input=json.dumps(jobs), capture_output=True, text=True,
                         cwd=result_cache.ROOT, timeout=300, check=True).stdout
    root = result_cache.ROOT.resolve()
    loaded = [p.relative_to(root).as_posix() for f in json.loads(out) if f
              for p in [Path(f).resolve()] if p.is_relative_to(root)]
    assert {"simulation/engine.py", "simulation/fleet.py", "validation/errors.py"} <= set(loaded)
    outside = [f for f in loaded if f.split("/")[0] not in result_cache.SOURCES]
    assert not outside, f"a replication loads {outside}: add their folders to result_cache.SOURCES"


def _entry(cache, seed=1, scenario=SCENARIO):
    key = cache.key((json.dumps(scenario, sort_keys=True), seed, None))
    return cache.dir / result_cache.simulator_fingerprint()[:16] / f"{key}.json"


def test_an_unusable_directory_only_means_simulating(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    cache = ResultCache(blocked / "cache")
    assert _run(cache, seeds=(1,)) == _run(None, seeds=(1,))
    assert (cache.hits, cache.misses) == (0, 1)


def _other_entry(path):
    entry = json.loads(path.read_text())
    return json.dumps({**entry, "key": "0" * 64})


@pytest.mark.parametrize("content", [
    "{}", "null", "[]", "[1, 2]", '"report"', "{half a file", "", "\xff\xfe", "[" * 100_000,
    '{"key": "KEY", "fingerprint": "FP"}', '{"key": "KEY", "fingerprint": "FP", "report": null}',
    '{"key": "KEY", "fingerprint": "elsewhere", "report": {}}', "other entry",
    '{"key": "KEY", "fingerprint": "FP", "report": {}}', "report emptied", "numbers as strings",
    "a figure changed", "a space added", "report cut short"])
def test_an_entry_that_is_not_this_jobs_report_is_a_miss_and_is_rewritten(tmp_path, content):
    cold_cache = ResultCache(tmp_path)
    cold = _run(cold_cache)
    path = _entry(cold_cache)
    good = path.read_text()
    key = path.stem
    if content == "other entry":  # a well-formed entry of another job, at this job's path
        content = _other_entry(path)
    elif content == "report emptied":  # this job's entry, its report edited (failed with KeyError 'services')
        content = json.dumps({**json.loads(good), "report": {}})
    elif content == "numbers as strings":  # ... or its figures turned into strings (failed with ValueError)
        content = re.sub(r'":(-?[0-9][0-9.e+-]*)', r'":"\1"', good.split('"report":', 1)[1])
        content = good.split('"report":', 1)[0] + '"report":' + content
        assert json.loads(content)["report"] != json.loads(good)["report"]
    elif content == "a figure changed":  # the layout as written, one digit of the report changed in place
        content = re.sub(r'("requests":)([0-9])', lambda m: m[1] + str((int(m[2]) + 1) % 10), good, count=1)
    elif content == "a space added":  # the same report, laid out otherwise: read the general way, intact
        content = good.replace('"report":', '"report": ', 1)
    elif content == "report cut short":  # still ends in "}", one key of the report gone
        content = good[:good.rindex(',"')] + "}}"
    if isinstance(content, bytes):   # not UTF-8
        path.write_bytes(content)
    else:
        path.write_text(content.replace("KEY", key).replace("FP", result_cache.simulator_fingerprint()))
    assert content != good
    warm_cache = ResultCache(tmp_path)
    warm = _run(warm_cache)
    assert json.dumps(warm, sort_keys=True) == json.dumps(cold, sort_keys=True)
    if content == good.replace('"report":', '"report": ', 1):
        assert (warm_cache.hits, warm_cache.misses) == (3, 0)
        return
    assert (warm_cache.hits, warm_cache.misses) == (2, 1)
    assert path.read_text() == good  # simulated again and stored over the bad entry
    assert not list(tmp_path.glob("*/*.tmp"))


def test_a_report_that_cannot_be_stored_is_skipped_and_the_others_are_kept(tmp_path):
    import numpy as np

    cache = ResultCache(tmp_path)
    jobs = [(json.dumps(SCENARIO, sort_keys=True), seed, None) for seed in (1, 2, 3)]
    cache.put_all([(jobs[0], {"count": np.int64(3)}), (jobs[1], {"x": float("nan"), "big": 10 ** 5000}),
                   (jobs[2], {"ok": 1})])   # numpy ints are not JSON; a 5000-digit int is a ValueError
    assert cache.get(jobs[2]) == {"ok": 1} and cache.get(jobs[0]) is None
    assert [p.name for p in tmp_path.glob("*/*")] == [f"{cache.key(jobs[2])}.json"]  # no temporary file left


def test_a_cache_that_fails_never_breaks_the_gate(tmp_path, monkeypatch):
    import numpy as np

    import gate
    from simulation import replicate
    from stackconfig.load import load_stack

    def verdicts(cache):
        clear_cache()
        return [v.to_dict() for v in gate.start_check(cfg, None, None, cache)()]

    cfg = load_stack("dev")
    plain = verdicts(None)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert verdicts(ResultCache(blocked / "cache")) == plain
    load = replicate._load

    def numpy_in_report(mapping, base_dir):  # a report JSON cannot hold, as a future metric might give
        run = load(mapping, base_dir)
        return lambda seed: {**run(seed), "extra": np.int64(1)}

    monkeypatch.setattr(replicate, "_load", numpy_in_report)
    cache = ResultCache(tmp_path / "cache")
    assert verdicts(cache) == plain
    assert cache.hits == 0 and cache.misses and not list((tmp_path / "cache").glob("*/*"))


def test_jobs_all_answered_from_a_cache_are_done_at_once_so_the_gate_takes_them_first(tmp_path):
    from simulation.replicate import submit_replications

    _run(ResultCache(tmp_path))
    clear_cache()
    assert submit_replications([SCENARIO], [1, 2, 3], cache=ResultCache(tmp_path)).done()  # from disk
    assert submit_replications([SCENARIO], [1, 2, 3]).done()                            # from this process
    assert not submit_replications([SCENARIO], [1, 2, 4]).done()  # serial work starts only when asked for


def test_the_cache_stays_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(result_cache, "MAX_ENTRIES", 4)
    cache = ResultCache(tmp_path)
    _run(cache, seeds=range(1, 7))
    assert len(list(tmp_path.glob("*/*.json"))) == 4


def test_a_write_removes_unused_folders_of_other_versions_and_leaves_other_files_alone(tmp_path):
    import os
    import time

    old = tmp_path / ("ab" * 8)           # an older simulator's folder, unused for over a week
    old.mkdir()
    (old / f"{'c' * 64}.json").write_text("{}")
    (old / "tmpx1.tmp").write_text("")
    week_ago = time.time() - result_cache.STALE_FOLDER_S - 60
    os.utime(old, (week_ago, week_ago))
    legacy = tmp_path / "cd"              # the first layout: <key[:2]>/<key>.json
    legacy.mkdir()
    (legacy / f"{'cd' * 32}.json").write_text("{}")
    mine = tmp_path / "mine"              # not the cache's: kept
    mine.mkdir()
    (mine / f"{'e' * 64}.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("kept")
    here = tmp_path / result_cache.simulator_fingerprint()[:16]
    here.mkdir()
    stale, fresh = here / "tmpstale.tmp", here / "tmpfresh.tmp"
    stale.write_text("")
    fresh.write_text("")
    hour_ago = time.time() - 3600
    os.utime(stale, (hour_ago, hour_ago))
    _run(ResultCache(tmp_path), seeds=(1,))
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([here.name, "mine", "notes.txt"])
    assert (mine / f"{'e' * 64}.json").exists() and fresh.exists() and not stale.exists()
    assert len(list(here.glob("*.json"))) == 1


def test_another_version_in_use_keeps_its_entries(tmp_path, monkeypatch):
    """Two checkouts of different versions sharing one cache do not wipe each other's entries; a hit marks its
    folder in use, so a version that only reads keeps its folder too."""
    import os
    import time

    other = tmp_path / ("ab" * 8)                     # another version, written an hour ago
    other.mkdir()
    (other / f"{'c' * 64}.json").write_text("{}")
    hour_ago = time.time() - 3600
    os.utime(other, (hour_ago, hour_ago))
    _run(ResultCache(tmp_path), seeds=(1,))
    assert (other / f"{'c' * 64}.json").exists()
    here = tmp_path / result_cache.simulator_fingerprint()[:16]
    week_ago = time.time() - result_cache.STALE_FOLDER_S - 60
    os.utime(here, (week_ago, week_ago))
    clear_cache()
    cache = ResultCache(tmp_path)
    _run(cache, seeds=(1,))                           # read only: a hit
    assert cache.hits == 1 and time.time() - here.stat().st_mtime < 60


def test_preflight_check_uses_the_cache_unless_told_not_to(tmp_path, capsys, monkeypatch):
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
    monkeypatch.setenv("KSERVE_PREFLIGHT_CACHE_DIR", str(tmp_path))  # the warm cache, where --no-cache must not look
    no_cache = [a for a in args if a not in ("--cache-dir", str(tmp_path))]  # --no-cache with --cache-dir: refused
    assert cli.main(no_cache + ["--no-cache"]) == 0
    fresh = json.loads(capsys.readouterr().out)
    assert fresh["stacks"] == cold["stacks"] and not fresh["timings"]["notes"]
    entries = list(tmp_path.glob("*/*.json"))
    for path in entries:  # every entry overwritten by valid JSON that is not an entry: all misses, same result
        path.write_text("{}")
    clear_cache()
    assert cli.main(args) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["stacks"] == cold["stacks"]
    assert [n for n in again["timings"]["notes"] if n.startswith(f"replications from the cache: 0 of {len(entries)} ")]


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    yield
    clear_cache()


def test_an_entry_as_written_is_read_without_encoding_its_report_again(tmp_path, monkeypatch):
    """Its digest is checked on the report's bytes as written (`_as_written`): a warm prod check reads 50."""
    cold = _run(ResultCache(tmp_path))

    def encoded(report):
        raise AssertionError("the report was encoded again to check its digest")

    for path in tmp_path.glob("*/*.json"):   # written as the whole entry's compact JSON would be
        entry = json.loads(path.read_text())
        assert list(entry) == ["key", "fingerprint", "digest", "report"]
        assert path.read_text() == json.dumps(entry, separators=(",", ":"))
        assert entry["digest"] == result_cache._digest(entry["report"])
    monkeypatch.setattr(result_cache, "_digest", encoded)
    warm_cache = ResultCache(tmp_path)
    assert json.dumps(_run(warm_cache), sort_keys=True) == json.dumps(cold, sort_keys=True)
    assert (warm_cache.hits, warm_cache.misses) == (3, 0)
