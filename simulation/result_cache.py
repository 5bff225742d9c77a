"""A content-addressed cache of replication results on disk, so an unchanged config is not simulated twice.

A replication is a pure function of (scenario, seed) and of the simulator itself (simulation/replicate.py), so
its report is stored under the SHA-256 of: the scenario as sorted JSON, the seed, the base directory its
relative paths resolve against, and a fingerprint of the simulator — the bytes of every source and data file
under `simulation/`, `catalog/` and `validation/` (a replication imports nothing else from the project; a test
checks this), and the Python, SimPy and NumPy versions. Any edit to the simulator or to the stack's
InferenceService, workload, cluster or gate settings gives new keys; an old entry is never reused for new code.
The key holds the caller's fingerprint, so only reports of the caller's simulator may be stored under it: a
Dask or Ray worker returns its own fingerprint with each report and simulation/replicate.py refuses a
mismatch before anything is stored.
Scenarios that read a file (a replayed trace, an `inferenceServiceFile`) are not cached: the file's contents are
not part of the key.

Where: `$KSERVE_PREFLIGHT_CACHE_DIR`, else the user's cache directory (`platformdirs.user_cache_dir`, e.g.
~/.cache/kserve-preflight) under `replications/`, in one folder per simulator fingerprint: `<fp[:16]>/<key>.json`,
each `{"key", "fingerprint", "digest", "report"}` (~30 KB), `digest` the SHA-256 of the report's JSON as written.
A read accepts only an entry of that shape naming its own key and fingerprint whose report still has its digest;
anything else (truncated, edited — a report emptied or a number turned into a string —, foreign) is a miss and is
overwritten, so a damaged entry costs one simulation, never a failing run. A write removes other
fingerprints' folders once none has been written or read for `STALE_FOLDER_S` (a week: two checkouts of different
versions sharing the cache keep each other's entries while both are in use; a hit touches its folder), the first
layout's folders, stale temporary files and, past `MAX_ENTRIES`, the oldest entries of this fingerprint.
The cache is best effort: an unreadable or unwritable directory, or a report that cannot be stored, only means
simulating. `preflight check --no-cache` (or `--cache-dir`) decides per run; library calls use no cache unless
given one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("simulation", "catalog", "validation")
MAX_ENTRIES = 2000  # ~60 MB
STALE_TMP_S = 600   # a temporary file this old is a crashed writer's, not one being written
STALE_FOLDER_S = 7 * 24 * 3600   # another simulator version's folder unused this long goes
ENV = "KSERVE_PREFLIGHT_CACHE_DIR"
FILE_KEYS = ('"trace"', '"inferenceServiceFile"')  # scenarios that read a file are not cached
_OURS_DIR = re.compile(r"[0-9a-f]{16}|[0-9a-f]{2}")  # a fingerprint's folder (or the old layout's key[:2])
_LEGACY_DIR = re.compile(r"[0-9a-f]{2}")
_OURS_FILE = re.compile(r"[0-9a-f]{64}\.json|tmp\w+\.tmp")

Job = tuple[str, int, str | None]


@lru_cache(maxsize=4)
def simulator_fingerprint(root: Path = ROOT) -> str:
    """SHA-256 over the simulator's files under `root` (relative paths and bytes) and the versions of what it
    runs on."""
    import numpy
    import simpy

    h = hashlib.sha256(f"{sys.version_info[:3]} simpy {simpy.__version__} numpy {numpy.__version__}".encode())
    for top in SOURCES:
        for path in sorted((root / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json", ".yaml"):
                h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _digest(report: dict) -> str:
    """SHA-256 of the report as JSON (floats and key order survive a JSON round trip, so a read recomputes it)."""
    return hashlib.sha256(json.dumps(report, separators=(",", ":")).encode()).hexdigest()


def default_dir() -> Path:
    env = os.environ.get(ENV)
    if env:  # checked as --cache-dir is: a file there is refused, not silently left without a cache
        from validation.paths import check_output_dir
        return check_output_dir(ENV, Path(env))
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("kserve-preflight")) / "replications"


def _unlink(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


class ResultCache:
    """Replication reports by job key (see the module docstring); `hits` counts the entries used, `misses` the
    jobs asked for that had none usable."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.dir = Path(directory) if directory is not None else default_dir()
        self.hits = self.misses = 0
        self._touched = False

    def key(self, job: Job) -> str | None:
        text, seed, base_dir = job
        if any(k in text for k in FILE_KEYS):  # a file the scenario reads: its contents are not in the key
            return None
        return hashlib.sha256(f"{simulator_fingerprint()}\0{seed}\0{base_dir}\0{text}".encode()).hexdigest()

    def _folder(self) -> Path:
        return self.dir / simulator_fingerprint()[:16]

    def get(self, job: Job) -> dict | None:
        key = self.key(job)
        report = None if key is None else self._read(key)
        if report is None:
            self.misses += 1
        else:
            self.hits += 1
            if not self._touched:     # in use: another version's writes leave this folder alone (`_prune`)
                self._touched = True
                try:
                    os.utime(self._folder())
                except OSError:
                    pass
        return report

    def _read(self, key: str) -> dict | None:
        try:
            entry = json.loads((self._folder() / f"{key}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        if not (isinstance(entry, dict) and entry.get("key") == key
                and entry.get("fingerprint") == simulator_fingerprint() and isinstance(entry.get("report"), dict)):
            return None
        try:
            intact = entry.get("digest") == _digest(entry["report"])
        except (ValueError, RecursionError):
            return None
        return entry["report"] if intact else None

    def put_all(self, items: Iterable[tuple[Job, dict]]) -> None:
        """Store reports (atomically: a reader never sees half a file), skipping any that cannot be written,
        then tidy the directory."""
        tried = False
        for job, report in items:
            key = self.key(job)
            if key is None:
                continue
            tried, tmp = True, None
            folder = self._folder()
            try:
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"key": key, "fingerprint": simulator_fingerprint(), "digest": _digest(report),
                               "report": report}, f, separators=(",", ":"))
                os.replace(tmp, folder / f"{key}.json")
                tmp = None
            except (OSError, TypeError, ValueError):
                continue
            finally:
                if tmp is not None:
                    _unlink(Path(tmp))
        if tried:
            self._prune()

    def _prune(self) -> None:
        """Other fingerprints' folders unused for STALE_FOLDER_S (the first layout's at once) and stale temporary
        files go; past MAX_ENTRIES, this fingerprint's oldest entries."""
        here = self._folder()
        try:
            now = time.time()
            folders = [d for d in self.dir.iterdir() if d != here and d.is_dir() and _OURS_DIR.fullmatch(d.name)
                       and (_LEGACY_DIR.fullmatch(d.name) or now - d.stat().st_mtime > STALE_FOLDER_S)]
            for folder in folders:
                for path in folder.iterdir():
                    if _OURS_FILE.fullmatch(path.name):
                        _unlink(path)
                try:
                    folder.rmdir()
                except OSError:
                    pass
            for path in here.glob("tmp*.tmp"):
                if now - path.stat().st_mtime > STALE_TMP_S:
                    _unlink(path)
            files = list(here.glob("*.json"))
            if len(files) > MAX_ENTRIES:
                files.sort(key=lambda p: p.stat().st_mtime)
                for path in files[:len(files) - MAX_ENTRIES]:
                    _unlink(path)
        except OSError:
            pass
