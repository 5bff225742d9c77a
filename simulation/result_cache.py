"""A content-addressed cache of replication results on disk, so an unchanged config is not simulated twice.

A replication is a pure function of (scenario, seed) and of the simulator itself (simulation/replicate.py), so
its report is stored under the SHA-256 of: the scenario as sorted JSON, the seed, the base directory its
relative paths resolve against, and a fingerprint of the simulator — the bytes of every source and data file
under `simulation/`, `catalog/` and `validation/`, and the Python, SimPy and NumPy versions. Any edit to the
simulator or to the stack's InferenceService, workload, cluster or gate settings gives new keys; an old entry
is never reused for new code. Scenarios that read a file (a replayed trace, an `inferenceServiceFile`) are not
cached: the file's contents are not part of the key.

Where: `$KSERVE_PREFLIGHT_CACHE_DIR`, else the user's cache directory (`platformdirs.user_cache_dir`, e.g.
~/.cache/kserve-preflight) under `replications/`. One JSON file per replication (~40 KB); past `MAX_ENTRIES`
the oldest are removed. The cache is best effort: an unreadable or unwritable directory only means simulating.
`preflight check --no-cache` (or `--cache-dir`) decides per run; library calls use no cache unless given one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Iterable

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("simulation", "catalog", "validation")
MAX_ENTRIES = 5000
ENV = "KSERVE_PREFLIGHT_CACHE_DIR"
FILE_KEYS = ('"trace"', '"inferenceServiceFile"')  # scenarios that read a file are not cached


@lru_cache(maxsize=1)
def simulator_fingerprint() -> str:
    """SHA-256 over the simulator's files (paths and bytes) and the versions of what it runs on."""
    import numpy
    import simpy

    h = hashlib.sha256(f"{sys.version_info[:3]} simpy {simpy.__version__} numpy {numpy.__version__}".encode())
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json", ".yaml"):
                h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def default_dir() -> Path:
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("kserve-preflight")) / "replications"


class ResultCache:
    """Replication reports by job key (see the module docstring)."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.dir = Path(directory) if directory is not None else default_dir()
        self.hits = self.misses = 0

    def key(self, job: tuple[str, int, str | None]) -> str | None:
        text, seed, base_dir = job
        if any(k in text for k in FILE_KEYS):  # a file the scenario reads: its contents are not in the key
            return None
        return hashlib.sha256(f"{simulator_fingerprint()}\0{seed}\0{base_dir}\0{text}".encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.dir / key[:2] / f"{key}.json"

    def get(self, job: tuple[str, int, str | None]) -> dict | None:
        key = self.key(job)
        if key is not None:
            try:
                report = json.loads(self._path(key).read_text(encoding="utf-8"))
                self.hits += 1
                return report
            except (OSError, ValueError):
                pass
        self.misses += 1
        return None

    def put_all(self, items: Iterable[tuple[tuple[str, int, str | None], dict]]) -> None:
        """Store reports (atomically: a reader never sees half a file), then keep the cache bounded."""
        wrote = False
        for job, report in items:
            key = self.key(job)
            if key is None:
                continue
            path = self._path(key)
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump(report, f, separators=(",", ":"))
                os.replace(tmp, path)
                wrote = True
            except OSError:
                return
        if wrote:
            self._prune()

    def _prune(self) -> None:
        try:
            files = list(self.dir.glob("*/*.json"))
            if len(files) <= MAX_ENTRIES:
                return
            files.sort(key=lambda p: p.stat().st_mtime)
            for path in files[:len(files) - MAX_ENTRIES]:
                path.unlink(missing_ok=True)
        except OSError:
            pass
