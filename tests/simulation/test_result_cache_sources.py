"""The on-disk cache holds only results of the code that produced them (review 11): the simulator's files are
noted when `simulation` is imported, and a process whose files changed since reads and writes no entry, whether it
simulated in-process or in forked or spawned workers. Also: an entry that is not a regular file (a FIFO) or is too
big is a miss, not a hang; every file but compiled ones is fingerprinted; folders of other versions are bounded
and entries are evicted by use; only a scenario that reads a file is left uncached."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulation import result_cache
from simulation.replicate import clear_cache, run_replications
from simulation.result_cache import ResultCache
from small_scenario import simple_service

SCENARIO = simple_service("cache-sources-mm1", "mm1", 1, 1.0, 0.5, 60)


def _copy_sources(root: Path) -> Path:
    for top in result_cache.SOURCES:
        shutil.copytree(result_cache.ROOT / top, root / top, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _python(root: Path, script: str, *args: str, timeout: float = 120) -> dict:
    """Run `script` in a fresh interpreter that imports the simulator from `root`; its last stdout line is JSON."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    env["PYTHONPATH"] = str(root)
    done = subprocess.run([sys.executable, "-c", script, *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


JOB = '("{}", 1, None)'   # a job's key needs no valid scenario; only put_all and get are exercised

PUT = f"""
import json, sys
from pathlib import Path
import simulation.workload                                # the code this process runs
from simulation.result_cache import ResultCache
if sys.argv[2] == "edit":                                 # saved while the process runs (an editor, git pull)
    path = Path("simulation/workload.py")
    path.write_bytes(path.read_bytes() + b"# edited\\n")
cache = ResultCache(sys.argv[1])
cache.put_all([({JOB}, {{"computed by": "the code before the edit"}})])
note = getattr(cache, "note", lambda: None)()
print(json.dumps({{"note": note, "off": getattr(cache, "off", lambda: None)()}}))
"""

GET = f"""
import json, sys
from simulation.result_cache import ResultCache
cache = ResultCache(sys.argv[1])
print(json.dumps({{"report": cache.get({JOB}), "hits": cache.hits}}))
"""


def test_a_source_edit_after_import_stores_nothing_under_the_new_codes_fingerprint(tmp_path):
    """Review 11, finding 1: the fingerprint was read from disk at the cache's first use, seconds after the
    simulator was imported, so an edit in between filed the old code's results under the new code's key."""
    root = _copy_sources(tmp_path / "copy")
    cache_dir = tmp_path / "cache"
    control = _python(root, PUT, str(cache_dir), "no edit")           # control: unchanged files are cached
    assert control == {"note": None, "off": None}
    assert _python(root, GET, str(cache_dir))["hits"] == 1
    shutil.rmtree(cache_dir)
    edited = _python(root, PUT, str(cache_dir), "edit")
    fresh = _python(root, GET, str(cache_dir))                        # the new code, in a fresh process
    assert fresh == {"report": None, "hits": 0}
    assert not list(cache_dir.glob("*/*.json"))
    assert "simulation/workload.py" in edited["note"] and "neither read nor written" in edited["note"]


READ_AFTER_EDIT = f"""
import json, sys, time
from pathlib import Path
from simulation.result_cache import ResultCache
cache = ResultCache(sys.argv[1])
cache.put_all([({JOB}, {{"ok": 1}})])
before = cache.get({JOB})
path = Path("validation/errors.py")
path.write_bytes(path.read_bytes().replace(b"class", b"class ", 1))
time.sleep(0.3)                       # a read may rely on a check of the files up to 0.2 s old
after = cache.get({JOB})
cache.put_all([(("{{}}", 2, None), {{"ok": 2}})])
note = getattr(cache, "note", lambda: None)()
print(json.dumps({{"before": before, "after": after, "hits": cache.hits, "note": note}}))
"""


def test_after_an_edit_the_process_reads_no_entry_either(tmp_path):
    root = _copy_sources(tmp_path / "copy")
    out = _python(root, READ_AFTER_EDIT, str(tmp_path / "cache"))
    assert out["before"] == {"ok": 1} and out["after"] is None and out["hits"] == 1
    assert len(list((tmp_path / "cache").glob("*/*.json"))) == 1       # the second report was not stored
    assert "validation/errors.py" in out["note"]


WORKERS = """
import json, multiprocessing, sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
import simulation.replicate
from simulation.replicate import run_replications
from simulation.result_cache import ResultCache

class Pool:                           # the local executor's pool, with the start method asked for
    name = "local"
    def map(self, fn, items):
        with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context(sys.argv[2])) as pool:
            return list(pool.map(fn, items))

scenario = json.loads(sys.argv[3])
if sys.argv[4] == "edit":             # a module the workers load only when they simulate
    path = Path("simulation/engine.py")
    path.write_bytes(path.read_bytes() + b"# edited\\n")
cache = ResultCache(sys.argv[1])
reports = run_replications([scenario], [1, 2, 3], Pool(), cache=cache)[0]
print(json.dumps({"misses": cache.misses, "n": len(reports), "note": getattr(cache, "note", lambda: None)()}))
"""


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_workers_that_load_edited_code_store_nothing_either(tmp_path, method):
    root = _copy_sources(tmp_path / "copy")
    cache_dir = tmp_path / "cache"
    control = _python(root, WORKERS, str(cache_dir), method, json.dumps(SCENARIO), "no edit", timeout=300)
    assert control["n"] == 3 and control["note"] is None and len(list(cache_dir.glob("*/*.json"))) == 3
    shutil.rmtree(cache_dir)
    edited = _python(root, WORKERS, str(cache_dir), method, json.dumps(SCENARIO), "edit", timeout=300)
    assert edited["n"] == 3 and not list(cache_dir.glob("*/*.json"))
    assert "simulation/engine.py" in edited["note"]


FIFO = f"""
import json, os, sys
from simulation.result_cache import ResultCache, simulator_fingerprint
cache = ResultCache(sys.argv[1])
folder = cache.dir / simulator_fingerprint()[:16]
folder.mkdir(parents=True)
os.mkfifo(folder / (cache.key({JOB}) + ".json"))
print(json.dumps({{"report": cache.get({JOB}), "misses": cache.misses}}))
"""


def test_an_entry_that_is_a_fifo_is_a_miss_not_a_hang(tmp_path):
    """Review 11, finding 2: a FIFO in an entry's place (a shared cache directory) blocked the check forever."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    try:
        out = _python(result_cache.ROOT, FIFO, str(tmp_path / "cache"), timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("reading a FIFO entry blocked")
    assert out == {"report": None, "misses": 1}


def test_an_entry_over_the_size_cap_is_a_miss_and_is_not_written(tmp_path, monkeypatch):
    cache = ResultCache(tmp_path)
    job = (json.dumps(SCENARIO, sort_keys=True), 1, None)
    small = {"padding": "x" * 1000}
    cache.put_all([(job, small)])
    assert cache.get(job) == small
    monkeypatch.setattr(result_cache, "MAX_ENTRY_BYTES", 900, raising=False)   # the same entry, now too big
    assert ResultCache(tmp_path).get(job) is None
    cache.put_all([((job[0], 2, None), small)])
    assert len(list(tmp_path.glob("*/*.json"))) == 1


@pytest.mark.parametrize("name", ["catalog/gpus.yml", "catalog/prices.csv", "validation/schemas/extra.txt",
                                  "simulation/gpu/table.npz", "simulation/settings.toml"])
def test_every_code_or_data_file_is_in_the_fingerprint(tmp_path, name):
    """Review 11, finding 6: only .py, .json and .yaml files were hashed."""
    fingerprint = result_cache.simulator_fingerprint
    root = _copy_sources(tmp_path / "copy")
    same = fingerprint(root)
    (root / "simulation" / "__pycache__").mkdir(exist_ok=True)
    (root / "simulation" / "__pycache__" / "engine.cpython-311.pyc").write_bytes(b"\0")
    (root / "simulation" / "stray.pyc").write_bytes(b"\0")
    (root / "simulation" / ".engine.py.swp").write_bytes(b"an editor's swap file")
    fingerprint.cache_clear()
    assert fingerprint(root) == same                                  # compiled files are not sources
    (root / name).write_bytes(b"data the simulator might read")
    fingerprint.cache_clear()
    changed = fingerprint(root)
    assert changed != same
    (root / name).write_bytes(b"data the simulator might read!")
    fingerprint.cache_clear()
    assert fingerprint(root) not in (same, changed)


def test_every_file_git_tracks_in_the_simulators_folders_is_fingerprinted():
    """Only hidden files and suffixes outside SOURCE_SUFFIXES are skipped, so a file the simulator ships with
    another suffix (a new data format) must be added to the list: this fails until it is."""
    listed = subprocess.run(["git", "ls-files", "-z", *result_cache.SOURCES], cwd=result_cache.ROOT,
                            capture_output=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    tracked = {name for name in listed.stdout.decode().split("\0") if name}
    assert len(tracked) > 50
    unlisted = sorted(n for n in tracked if os.path.splitext(n)[1].lower() not in result_cache.SOURCE_SUFFIXES
                      or os.path.basename(n).startswith("."))
    assert not unlisted, f"add their suffixes to result_cache.SOURCE_SUFFIXES: {unlisted}"
    assert tracked <= {rel for rel, *_ in result_cache.snapshot_sources()}


BACKUPS = ["engine.py~", "#engine.py#", "engine.py.orig", "engine.py.rej", "engine.py.bak", "engine.py.swp",
           "engine.py.swo", "4913", ".#engine.py", ".DS_Store"]


@pytest.mark.parametrize("name", BACKUPS)
def test_an_editor_backup_changes_neither_the_snapshot_nor_the_fingerprint(tmp_path, name):
    """Review 11 (diff), F3: Emacs' backup and autosave, merge leftovers and Vim's save probe were hashed, so a
    Dask/Ray worker on a clean checkout raised SimulatorMismatch and an autosave turned the cache off mid-run."""
    fingerprint = result_cache.simulator_fingerprint.__wrapped__
    root = _copy_sources(tmp_path / "copy")
    snap, same = result_cache.snapshot_sources(root), fingerprint(root)
    (root / "simulation" / name).write_bytes(b"an editor's copy")
    (root / "catalog" / name).write_bytes(b"an editor's copy")
    assert result_cache.snapshot_sources(root) == snap
    assert fingerprint(root) == same


def test_a_file_name_that_is_not_utf8_is_fingerprinted_not_a_crash(tmp_path):
    """Review 11 (diff), F4: `rel.encode()` raised UnicodeEncodeError on a surrogate-escaped name, from
    ResultCache.key, so every cached check crashed; the cache is best effort."""
    fingerprint = result_cache.simulator_fingerprint.__wrapped__
    root = tmp_path / "copy"
    for top in result_cache.SOURCES:
        (root / top).mkdir(parents=True)
    (root / "simulation" / "a.py").write_text("x = 1\n")
    before = fingerprint(root)
    try:
        with open(os.path.join(os.fsencode(root), b"simulation", b"caf\xe9.txt"), "wb") as f:
            f.write(b"notes")
    except (OSError, UnicodeError):
        pytest.skip("this filesystem refuses a file name that is not UTF-8")
    first = fingerprint(root)
    assert first != before and fingerprint(root) == first


def _version_folder(cache_dir: Path, name: str, age_s: float) -> Path:
    folder = cache_dir / name
    folder.mkdir(parents=True)
    (folder / f"{'c' * 64}.json").write_text("{}")
    t = time.time() - age_s
    os.utime(folder, (t, t))
    return folder


def test_at_most_max_folders_simulator_versions_are_kept_the_least_recently_used_going(tmp_path):
    """Review 11, finding 4: every other version's folder was kept for a week, however many there were."""
    ages = {f"{i:x}" * 16: 600 * (i + 1) for i in range(1, 7)}      # six other versions, used 20-70 minutes ago
    for name, age in ages.items():
        _version_folder(tmp_path, name, age)
    clear_cache()
    run_replications([SCENARIO], [1], cache=ResultCache(tmp_path))
    here = result_cache.simulator_fingerprint()[:16]
    newest = sorted(ages, key=ages.get)[:getattr(result_cache, "MAX_FOLDERS", 4) - 1]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(newest + [here])


def test_a_hit_keeps_its_entry_eviction_is_by_use(tmp_path, monkeypatch):
    """Review 11, finding 4: past MAX_ENTRIES the oldest writes went first, however often they were read."""
    monkeypatch.setattr(result_cache, "MAX_ENTRIES", 3)
    cache = ResultCache(tmp_path)
    jobs = [(json.dumps(SCENARIO, sort_keys=True), seed, None) for seed in range(1, 5)]
    cache.put_all([(job, {"seed": job[1]}) for job in jobs[:3]])
    for i, job in enumerate(jobs[:3]):                               # written 3, 2 and 1 hours ago
        t = time.time() - 3600 * (3 - i)
        path = tmp_path / result_cache.simulator_fingerprint()[:16] / f"{cache.key(job)}.json"
        os.utime(path, (t, t))
    assert cache.get(jobs[0]) == {"seed": 1}                         # the oldest write, used now
    cache.put_all([(jobs[3], {"seed": 4})])
    later = ResultCache(tmp_path)
    assert [later.get(job) is not None for job in jobs] == [True, False, True, True]


def _key(scenario: dict) -> str | None:
    return ResultCache("unused").key((json.dumps(scenario, sort_keys=True), 1, None))


def test_only_a_scenario_that_reads_a_file_is_left_uncached():
    """Review 11, finding 5: the text "trace" anywhere in the scenario (a service named trace) turned the cache
    off; what matters is a workload of kind trace or an inferenceServiceFile, in a scenario or a fleet."""
    named_trace = {**SCENARIO, "name": "trace",
                   "inferenceService": {**SCENARIO["inferenceService"], "metadata": {"name": "trace"}}}
    assert _key(named_trace) is not None and _key(SCENARIO) is not None
    assert _key({**SCENARIO, "server": {**SCENARIO["server"], "note": "inferenceServiceFile"}}) is not None
    trace = {**SCENARIO, "workload": {"kind": "trace", "path": "x.csv"}}
    from_file = {k: v for k, v in SCENARIO.items() if k != "inferenceService"} | {"inferenceServiceFile": "i.yaml"}
    assert _key(trace) is None and _key(from_file) is None
    fleet = {"name": "f", "duration_s": 60, "services": [{"scenario": SCENARIO}, {"scenario": trace}]}
    assert _key(fleet) is None
    assert _key({**fleet, "services": [{"scenario": SCENARIO}, {"scenario": from_file}]}) is None
    assert _key({**fleet, "services": [{"scenario": SCENARIO}, {"scenario": named_trace}]}) is not None


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    yield
    clear_cache()
