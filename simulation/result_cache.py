"""A content-addressed cache of replication results on disk, so an unchanged config is not simulated twice.

A replication is a pure function of (scenario, seed) and of the simulator itself (simulation/replicate.py), so
its report is stored under the SHA-256 of: the scenario as sorted JSON, the seed, the base directory its
relative paths resolve against, and a fingerprint of the simulator — the bytes of every file under
`simulation/`, `catalog/` and `validation/` with a suffix in `SOURCE_SUFFIXES` (code and data: `.py`, `.json`,
`.yaml`, `.csv`, …; not hidden ones, nor `__pycache__/`; a replication imports nothing else from the project; a
test checks that git tracks no file there outside that list), and the Python, SimPy and NumPy versions. Editor
backups and autosaves (`engine.py~`, `#engine.py#`, `*.orig`, `*.rej`, `*.bak`, `*.swp`, Vim's `4913`) are not
sources: hashing them set Dask/Ray workers with a clean checkout apart and turned the cache off mid-run.
Any edit to the simulator or to the stack's InferenceService, workload, cluster or gate settings gives new keys;
an old entry is never reused for new code.
The fingerprint is that of the code this process runs, not of the files on disk when the cache is first used:
`import simulation` notes each of those files' size and modification time (`snapshot_sources`: ~0.5 ms), and
the cache is used only while the files are still as noted then. Once one differs (a save, `git checkout` or
`git pull` during a check: this process, and any worker that imports a module later, may run a mix of old and
new code), this process reads and writes no entry and `ResultCache.note()` says so; the next run uses the
cache again. Forked local workers inherit the parent's fingerprint; whatever any worker imported, its reports
are stored only after that comparison, made once they are all back.
The key holds the caller's fingerprint, so only reports of the caller's simulator may be stored under it: a
Dask or Ray worker returns its own fingerprint with each report and simulation/replicate.py refuses a
mismatch before anything is stored.
Scenarios that read a file (a `workload` of kind `trace`, an `inferenceServiceFile`, in a scenario or in any
service of a fleet) are not cached: the file's contents are not part of the key.

Where: `$KSERVE_PREFLIGHT_CACHE_DIR`, else the user's cache directory (`platformdirs.user_cache_dir`, e.g.
~/.cache/kserve-preflight) under `replications/`, in one folder per simulator fingerprint: `<fp[:16]>/<key>.json`,
each `{"key", "fingerprint", "digest", "report"}` (~30 KB), `digest` the SHA-256 of the report's JSON as written.
A read accepts only a regular file of at most `MAX_ENTRY_BYTES` (opened without blocking: a FIFO or a device
there is a miss, never a hang) holding an entry of that shape naming its own key and fingerprint whose report
still has its digest; anything else (truncated, edited — a report emptied or a number turned into a string —,
foreign) is a miss and is overwritten, so a damaged entry costs one simulation, never a failing run. A hit
touches its entry and its folder, so what goes first is what was least recently used: a write removes other
fingerprints' folders past the `MAX_FOLDERS` most recently used (this one included) or once none has been
written or read for `STALE_FOLDER_S` (a week: two checkouts of different versions sharing the cache keep each
other's entries while both are in use), the first layout's folders, stale temporary files and, past
`MAX_ENTRIES`, this fingerprint's least recently used entries. At most MAX_FOLDERS × MAX_ENTRIES entries, then.
The cache is best effort: an unreadable or unwritable directory, or a report that cannot be stored, only means
simulating. `preflight check --no-cache` (or `--cache-dir`) decides per run; library calls use no cache unless
given one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
import tempfile
import time
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ("simulation", "catalog", "validation")
MAX_ENTRIES = 2000  # ~60 MB per simulator version
MAX_FOLDERS = 4     # simulator versions kept, this one included (least recently used go first)
MAX_ENTRY_BYTES = 4 * 2**20   # an entry is ~30 KB; a bigger file is not read (nor a report this big written)
STALE_TMP_S = 600   # a temporary file this old is a crashed writer's, not one being written
STALE_FOLDER_S = 7 * 24 * 3600   # another simulator version's folder unused this long goes
ENV = "KSERVE_PREFLIGHT_CACHE_DIR"
_OURS_DIR = re.compile(r"[0-9a-f]{16}|[0-9a-f]{2}")  # a fingerprint's folder (or the old layout's key[:2])
_LEGACY_DIR = re.compile(r"[0-9a-f]{2}")
_OURS_FILE = re.compile(r"[0-9a-f]{64}\.json|tmp\w+\.tmp")

Job = tuple[str, int, str | None]
Snapshot = tuple[tuple[str, int, int, int], ...]


# What the simulator is made of and reads: code, schemas, tables. An allow-list, not a deny-list: an editor's
# backup or autosave (engine.py~, #engine.py#, engine.py.orig, .rej, .bak, .swp, Vim's all-digit probe 4913) or
# a .DS_Store would otherwise change the fingerprint while a file is open, turn the cache off and set Dask/Ray
# workers apart. A test fails when git tracks a file there whose suffix is not listed.
SOURCE_SUFFIXES = frozenset({".py", ".json", ".yaml", ".yml", ".csv", ".tsv", ".txt", ".toml", ".npz", ".npy"})


def _skipped_dir(name: str) -> bool:
    return name == "__pycache__" or name.startswith(".")


def _skipped(name: str) -> bool:
    """A file that is not a source: hidden, or whose suffix is not in SOURCE_SUFFIXES (compiled, a backup)."""
    return name.startswith(".") or os.path.splitext(name)[1].lower() not in SOURCE_SUFFIXES


def snapshot_sources(root: Path = ROOT) -> Snapshot:
    """(relative path, file type, size, st_mtime_ns) of every fingerprinted file under `root`, sorted by path: a
    few stat calls, no reads. A file that vanishes between the listing and its stat has type -1."""
    out = []
    for top in SOURCES:
        base = os.path.join(root, top)
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = [d for d in dirnames if not _skipped_dir(d)]
            rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
            for name in filenames:
                if _skipped(name):
                    continue
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    out.append((f"{rel_dir}/{name}", -1, -1, -1))
                    continue
                out.append((f"{rel_dir}/{name}", stat.S_IFMT(st.st_mode), st.st_size, st.st_mtime_ns))
    out.sort()
    return tuple(out)


_IMPORTED: Snapshot | None = None   # the files as `import simulation` found them (simulation/__init__.py)
_CHANGED: str | None = None         # once set, the first file found changed since: no cache in this process
_CHECKED_AT = float("-inf")         # when the files were last found unchanged (time.monotonic)


def note_import() -> None:
    """Called once, first thing, when the `simulation` package is imported: what the loaded code was read from."""
    global _IMPORTED
    if _IMPORTED is None:
        _IMPORTED = snapshot_sources(ROOT)


def sources_changed(max_age_s: float = 0.0) -> str | None:
    """None while the simulator's files are as when this process imported it; else a file that differs (added,
    removed or modified), and it stays so for this process. `max_age_s`: an unchanged result that recent is
    taken as is (a snapshot is ~0.5 ms; a read of an entry need not take one each)."""
    global _CHANGED, _CHECKED_AT
    if _CHANGED is None and _IMPORTED is not None and time.monotonic() - _CHECKED_AT >= max_age_s:
        now = snapshot_sources(ROOT)
        if now != _IMPORTED:
            _CHANGED = sorted(set(now) ^ set(_IMPORTED))[0][0]
        else:
            _CHECKED_AT = time.monotonic()
    return _CHANGED


@lru_cache(maxsize=4)
def simulator_fingerprint(root: Path = ROOT) -> str:
    """SHA-256 over the simulator's files under `root` (relative paths and bytes; a file that is not a regular one
    by its type only) and the versions of what it runs on. For this checkout it is read after checking that the
    files are still those the process imported (`sources_changed`); if not, the cache is off for this process."""
    import numpy
    import simpy

    from validation.paths import open_regular

    if root == ROOT:
        sources_changed()
    h = hashlib.sha256(f"{sys.version_info[:3]} simpy {simpy.__version__} numpy {numpy.__version__}".encode())
    for rel, kind, _, _ in snapshot_sources(root):
        h.update(os.fsencode(rel) + b"\0")   # a name that is not UTF-8 round-trips (surrogateescape)
        if kind == stat.S_IFREG:
            try:
                with open_regular(os.path.join(root, rel)) as f:
                    h.update(f.read())
            except OSError:
                h.update(b"\1unreadable")
        else:
            h.update(b"\1type %d" % kind)
        h.update(b"\0")
    if root == ROOT:
        sources_changed()   # changed while being read: the hash may mix old and new bytes
    return h.hexdigest()


def _digest(report: dict) -> str:
    """SHA-256 of the report as JSON (floats and key order survive a JSON round trip, so a read recomputes it)."""
    return hashlib.sha256(json.dumps(report, separators=(",", ":")).encode()).hexdigest()


_REPORT_AT = '","report":'


def _entry_text(key: str, fingerprint: str, report: dict) -> str:
    """An entry as `put_all` writes it: `{"key":…,"fingerprint":…,"digest":…,"report":…}`, compact JSON, the
    report encoded once (its digest is of the same text; `json.dumps` of the whole entry gives the same bytes)."""
    body = json.dumps(report, separators=(",", ":"))
    return f'{_entry_head(key, fingerprint)}{hashlib.sha256(body.encode()).hexdigest()}{_REPORT_AT}{body}}}'


def _entry_head(key: str, fingerprint: str) -> str:
    return f'{{"key":"{key}","fingerprint":"{fingerprint}","digest":"'


def _as_written(data: bytes, key: str) -> dict | None:
    """The report of an entry laid out as `_entry_text` writes it, its digest checked on the report's bytes as
    written (no re-encoding: ≈ 1.5 ms per entry of prod). None for any other layout or a digest that differs;
    the general reading in `_read` then decides."""
    head = _entry_head(key, simulator_fingerprint()).encode()
    start = len(head) + 64 + len(_REPORT_AT)
    if not (data.startswith(head) and data[start - len(_REPORT_AT):start] == _REPORT_AT.encode()
            and data.endswith(b"}")):
        return None
    body = data[start:-1]
    if hashlib.sha256(body).hexdigest().encode() != data[len(head):len(head) + 64]:
        return None
    report = json.loads(body)
    return report if isinstance(report, dict) else None


def _reads_a_file(value: Any) -> bool:
    """Whether a scenario (or fleet) mapping names a file the simulator reads: a `kind: trace` mapping (a
    workload) or an `inferenceServiceFile`, at any depth (a fleet's `services[i].scenario`)."""
    if isinstance(value, dict):
        kind = value.get("kind")
        if "inferenceServiceFile" in value or (isinstance(kind, str) and kind.strip().lower() == "trace"):
            return True
        return any(_reads_a_file(v) for v in value.values())
    if isinstance(value, list):
        return any(_reads_a_file(v) for v in value)
    return False


@lru_cache(maxsize=64)
def _cacheable(text: str) -> bool:
    try:
        return not _reads_a_file(json.loads(text))
    except (ValueError, RecursionError):
        return False


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


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


class ResultCache:
    """Replication reports by job key (see the module docstring); `hits` counts the entries used, `misses` the
    jobs asked for that had none usable."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.dir = Path(directory) if directory is not None else default_dir()
        self.hits = self.misses = 0
        self._touched = False

    def key(self, job: Job) -> str | None:
        text, seed, base_dir = job
        if not _cacheable(text):  # a file the scenario reads: its contents are not in the key
            return None
        return hashlib.sha256(f"{simulator_fingerprint()}\0{seed}\0{base_dir}\0{text}".encode()).hexdigest()

    def _folder(self) -> Path:
        return self.dir / simulator_fingerprint()[:16]

    def off(self, max_age_s: float = 0.0) -> str | None:
        """Why this process uses no entry (a simulator file changed since it was imported), or None."""
        changed = sources_changed(max_age_s)
        return None if changed is None else (
            f"the simulator's files changed while this ran ({changed}), so its results may come from the old code: "
            "the on-disk cache of replications was neither read nor written")

    def note(self) -> str | None:
        """One line for the user when the cache answered something or was switched off; else None."""
        off = self.off()
        if off:
            return off + "; the next run uses it again"
        if self.hits:
            return (f"{self.hits} of {self.hits + self.misses} replications from the on-disk cache ({self.dir}); "
                    "--no-cache to re-simulate")
        return None

    def to_dict(self) -> dict:
        return {"dir": str(self.dir), "hits": self.hits, "misses": self.misses, "off": self.off()}

    def get(self, job: Job) -> dict | None:
        key = self.key(job)
        report = None
        # Checked after the key is made, so its fingerprint is of the files this process loaded. An entry under it
        # is this code's own result, so a read may rely on a check up to 0.2 s old; a write may not (put_all).
        if key is not None and not self.off(max_age_s=0.2):
            path = self._folder() / f"{key}.json"
            report = self._read(key, path)
        if report is None:
            self.misses += 1
        else:
            self.hits += 1
            try:
                os.utime(path)        # used: the least recently used entries go first (`_prune`)
            except OSError:
                pass
            if not self._touched:     # in use: another version's writes leave this folder alone (`_prune`)
                self._touched = True
                try:
                    os.utime(self._folder())
                except OSError:
                    pass
        return report

    def _read(self, key: str, path: Path) -> dict | None:
        from validation.paths import open_regular

        try:
            with open_regular(path) as f:   # a FIFO or a device is refused at once, not waited on
                data = f.read(MAX_ENTRY_BYTES + 1)
            if len(data) > MAX_ENTRY_BYTES:
                return None
            report = _as_written(data, key)
            if report is not None:
                return report
            entry = json.loads(data.decode("utf-8"))
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
        then tidy the directory. Nothing is stored once a simulator file changed since this process imported it:
        the reports (computed before this call, here or by workers) may come from the old code or a mix."""
        items = [(job, report, key) for job, report in items for key in [self.key(job)] if key is not None]
        if not items or self.off():
            return
        fingerprint = simulator_fingerprint()
        folder = self._folder()
        for job, report, key in items:
            tmp = None
            try:
                text = _entry_text(key, fingerprint, report)
                if len(text.encode("utf-8")) > MAX_ENTRY_BYTES:
                    continue            # it would never be read
                folder.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, folder / f"{key}.json")
                tmp = None
            except (OSError, TypeError, ValueError):
                continue
            finally:
                if tmp is not None:
                    _unlink(Path(tmp))
        self._prune()

    def _prune(self) -> None:
        """Other fingerprints' folders past the MAX_FOLDERS most recently used or unused for STALE_FOLDER_S (the
        first layout's at once) and stale temporary files go; past MAX_ENTRIES, this fingerprint's least recently
        used entries."""
        here = self._folder()
        try:
            now = time.time()
            others = [d for d in self.dir.iterdir() if d != here and d.is_dir() and _OURS_DIR.fullmatch(d.name)]
            folders = [d for d in others if _LEGACY_DIR.fullmatch(d.name)]
            versions = sorted(((m, d) for d in others if d not in folders for m in [_mtime(d)] if m is not None),
                              key=lambda md: -md[0])   # most recently used first
            folders += [d for i, (m, d) in enumerate(versions) if i >= MAX_FOLDERS - 1 or now - m > STALE_FOLDER_S]
            for folder in folders:
                for path in folder.iterdir():
                    if _OURS_FILE.fullmatch(path.name):
                        _unlink(path)
                try:
                    folder.rmdir()
                except OSError:
                    pass
            for path in here.glob("tmp*.tmp"):
                m = _mtime(path)
                if m is not None and now - m > STALE_TMP_S:
                    _unlink(path)
            files = [(m, p) for p in here.glob("*.json") for m in [_mtime(p)] if m is not None]
            if len(files) > MAX_ENTRIES:
                files.sort(key=lambda mp: mp[0])
                for _, path in files[:len(files) - MAX_ENTRIES]:
                    _unlink(path)
        except OSError:
            pass
