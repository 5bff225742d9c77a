"""The model-cache prefetch script, run for real under /bin/sh with a fake storage initializer.

Sleeps are shortened and paths moved to a temporary folder by text substitution; the control flow is the shipped one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from manifests.model_cache import DOWNLOAD, LOCK_STALE_MIN, MOUNT, RETRY_S, prefetch_script, readiness_command

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")

MODELS = {"llama-3-8b": "hf://meta-llama/Meta-Llama-3-8B-Instruct", "odd name;x": "s3://bucket/it's"}


def _script(tmp_path: Path, downloader: str, models=MODELS) -> str:
    fake = tmp_path / "fake-initializer"
    fake.write_text("#!/bin/sh\n" + downloader)
    fake.chmod(0o755)
    (tmp_path / "cache").mkdir(exist_ok=True)
    script = prefetch_script(models)
    script = script.replace(DOWNLOAD, str(fake)).replace(f"{MOUNT}/", f"{tmp_path}/cache/")
    script = script.replace(f"sleep {RETRY_S}", "sleep 0").replace("sleep 15", "sleep 0").replace("sleep 5;", "sleep 0.1;")
    return script.replace("exec sleep 2147483647", "exit 0")


def _run_bounded(script: str, timeout: float) -> int:
    """Run the script in its own process group and kill the whole group on timeout: the script's per-model
    downloads run in background subshells, which `subprocess.run(timeout=...)` would leave looping forever."""
    proc = subprocess.Popen(["sh", "-c", script], start_new_session=True)
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# Fails on its first call, then writes the URI it was given into DEST/weights.
FLAKY = 'n=$(cat "$0.count" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.count"\n' \
        '[ "$n" -ge 1 ] || exit 1\nmkdir -p "$2" && printf %s "$1" > "$2/weights"\n'


def test_downloads_every_model_retries_a_failure_and_marks_completion(tmp_path):
    proc = subprocess.run(["sh", "-c", _script(tmp_path, FLAKY)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, proc.stderr
    cache = tmp_path / "cache"
    for name, uri in MODELS.items():
        assert (cache / name / ".complete").is_file()
        assert (cache / name / "weights").read_text() == uri  # the URI reached the initializer unmangled
    assert sorted(p.name for p in cache.iterdir()) == sorted(MODELS)  # no lock, no .partial left behind
    # Downloads run in parallel: whichever model reaches the fake initializer first fails (both may, if they read
    # its call counter at the same moment); each failure was retried, as the .complete markers above show.
    assert any(f"downloading {uri} failed; retrying" in proc.stderr for uri in MODELS.values()), proc.stderr


def test_breaks_a_stale_lock_but_waits_for_a_fresh_one(tmp_path):
    script = _script(tmp_path, FLAKY.replace('[ "$n" -ge 1 ] || exit 1\n', ""), {"m": "hf://a/b"})
    stale = tmp_path / "cache" / "m.lock"
    stale.mkdir()
    old = time.time() - (LOCK_STALE_MIN + 5) * 60
    os.utime(stale, (old, old))
    subprocess.run(["sh", "-c", script], check=True, timeout=30)
    assert (tmp_path / "cache" / "m" / ".complete").is_file() and not stale.exists()

    fresh = tmp_path / "cache" / "n.lock"
    fresh.mkdir()
    with pytest.raises(subprocess.TimeoutExpired):  # a live holder's lock is respected
        _run_bounded(_script(tmp_path, "exit 0", {"n": "hf://a/b"}), timeout=1)
    assert fresh.is_dir()


def test_sigterm_releases_the_lock(tmp_path):
    # Signal only once the download runs: the lock directory appears a moment before the shell records that it
    # holds it (`mkdir` returns, then `held=`), and a TERM in that window leaves the lock to the stale-lock rule.
    # Waiting for the lock directory alone made this test flaky on a loaded machine (issue 9).
    started = tmp_path / "started"
    proc = subprocess.Popen(["sh", "-c", _script(tmp_path, f"touch {started}\nsleep 3\n", {"m": "hf://a/b"})])
    lock = tmp_path / "cache" / "m.lock"
    deadline = time.time() + 10
    while not started.exists() and time.time() < deadline:
        time.sleep(0.05)
    assert lock.is_dir() and started.exists()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 143
    assert not lock.exists()


def test_readiness_needs_every_marker(tmp_path):
    command = readiness_command(MODELS)
    assert command[:2] == ["sh", "-c"]
    check = command[2].replace(f"{MOUNT}/", f"{tmp_path}/")
    (tmp_path / "llama-3-8b").mkdir()
    (tmp_path / "llama-3-8b" / ".complete").touch()
    assert subprocess.run(["sh", "-c", check]).returncode != 0
    (tmp_path / "odd name;x").mkdir()
    (tmp_path / "odd name;x" / ".complete").touch()
    assert subprocess.run(["sh", "-c", check]).returncode == 0


def test_different_models_download_in_parallel(tmp_path):
    """Each download waits until the other one has started: in series the first would never finish."""
    rendezvous = (f'touch "$2.started"\nfor i in $(seq 50); do [ $(ls {tmp_path}/cache/*.started | wc -l) -ge 2 ] '
                  f'&& break; sleep 0.1; done\n[ $(ls {tmp_path}/cache/*.started | wc -l) -ge 2 ] || exit 1\n'
                  'mkdir -p "$2" && printf %s "$1" > "$2/weights"\n')
    models = {"a": "hf://o/a", "b": "s3://bucket/b"}
    proc = subprocess.run(["sh", "-c", _script(tmp_path, rendezvous, models)], capture_output=True, text=True,
                          timeout=30)
    assert proc.returncode == 0, proc.stderr
    assert "failed" not in proc.stderr  # neither download had to retry
    assert all((tmp_path / "cache" / name / ".complete").is_file() for name in models)


def test_cache_key_follows_the_source_uri():
    """A changed URI or pinned revision is a new folder (a fresh download), never the stale copy."""
    from dataclasses import replace

    from manifests.model_cache import cache_key, cache_uri
    from stackconfig.load import load_stack

    cfg = load_stack("dev")
    svc = cfg.services[0]
    pinned = replace(svc, storage_uri=svc.storage_uri + ":5f0b02c75b57c5855da9ae460ce51323ea669d8a")
    assert cache_key(svc) != cache_key(pinned) and cache_key(svc).startswith("llama-3-8b-")
    assert cache_uri(cfg, pinned) == f"pvc://model-cache/{cache_key(pinned)}"
