"""The model-cache prefetch script, run for real under /bin/sh with a fake storage initializer.

Sleeps are shortened and paths moved to a temporary folder by text substitution; the control flow is the shipped one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from manifests.model_cache import DOWNLOAD, IDLE, LOCK_STALE_MIN, MOUNT, RETRY_S, prefetch_script, readiness_command

pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")

MODELS = {"llama-3-8b": "hf://meta-llama/Meta-Llama-3-8B-Instruct", "odd name;x": "s3://bucket/it's"}


def _script(tmp_path: Path, downloader: str, models=MODELS, idle: bool = False) -> str:
    """The shipped script, paths moved and pauses shortened; it exits once every model is complete unless
    `idle` (then it idles as shipped)."""
    fake = tmp_path / "fake-initializer"
    fake.write_text("#!/bin/sh\n" + downloader)
    fake.chmod(0o755)
    (tmp_path / "cache").mkdir(exist_ok=True)
    script = prefetch_script(models)
    script = script.replace(DOWNLOAD, str(fake)).replace(f"{MOUNT}/", f"{tmp_path}/cache/")
    script = script.replace(f"nap {RETRY_S}", "nap 0").replace("nap 15", "nap 0").replace("nap 5;", "nap 0.1;")
    assert IDLE in script
    return script if idle else script.replace(IDLE, "exit 0")


def _start(script: str, user: tuple[str, ...] = (), stderr=subprocess.PIPE) -> subprocess.Popen:
    """The script in its own process group (session), so `_stop` can end its background subshells and sleeps,
    which would otherwise outlive a failed test and loop for ever. `user` prefixes the command (`_as_image_user`)."""
    return subprocess.Popen([*user, "sh", "-c", script], start_new_session=True, stderr=stderr, text=True)


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _run_bounded(script: str, timeout: float, user: tuple[str, ...] = ()) -> tuple[int, str]:
    """(exit status, stderr); the whole process group is killed on timeout (TimeoutExpired) and afterwards."""
    proc = _start(script, user)
    try:
        _, err = proc.communicate(timeout=timeout)
        return proc.returncode, err
    finally:
        _stop(proc)


# Fails on its first call, then writes the URI it was given into DEST/weights.
FLAKY = 'n=$(cat "$0.count" 2>/dev/null || echo 0); echo $((n + 1)) > "$0.count"\n' \
        '[ "$n" -ge 1 ] || exit 1\nmkdir -p "$2" && printf %s "$1" > "$2/weights"\n'


def test_downloads_every_model_retries_a_failure_and_marks_completion(tmp_path):
    status, stderr = _run_bounded(_script(tmp_path, FLAKY), timeout=30)
    assert status == 0, stderr
    cache = tmp_path / "cache"
    for name, uri in MODELS.items():
        assert (cache / name / ".complete").is_file()
        assert (cache / name / "weights").read_text() == uri  # the URI reached the initializer unmangled
    assert sorted(p.name for p in cache.iterdir()) == sorted(MODELS)  # no lock, no .partial left behind
    # Downloads run in parallel: whichever model reaches the fake initializer first fails (both may, if they read
    # its call counter at the same moment); each failure was retried, as the .complete markers above show.
    assert any(f"downloading {uri} failed; retrying" in stderr for uri in MODELS.values()), stderr


def test_breaks_a_stale_lock_but_waits_for_a_fresh_one(tmp_path):
    script = _script(tmp_path, FLAKY.replace('[ "$n" -ge 1 ] || exit 1\n', ""), {"m": "hf://a/b"})
    stale = tmp_path / "cache" / "m.lock"
    stale.mkdir()
    old = time.time() - (LOCK_STALE_MIN + 5) * 60
    os.utime(stale, (old, old))
    assert _run_bounded(script, timeout=30)[0] == 0
    assert (tmp_path / "cache" / "m" / ".complete").is_file() and not stale.exists()

    fresh = tmp_path / "cache" / "n.lock"
    fresh.mkdir()
    with pytest.raises(subprocess.TimeoutExpired):  # a live holder's lock is respected
        _run_bounded(_script(tmp_path, "exit 0", {"n": "hf://a/b"}), timeout=1)
    assert fresh.is_dir()


def _as_image_user() -> tuple[str, ...]:
    """The storage initializer image's user (uid 1000) when the tests run as root, which writes anywhere."""
    if os.geteuid() != 0:
        return ()
    if shutil.which("setpriv") is None:
        pytest.skip("needs setpriv to drop root")
    return ("setpriv", "--reuid=1000", "--regid=1000", "--clear-groups")


def test_exits_naming_the_fix_when_the_volume_is_not_writable(tmp_path):
    """A root-owned share (a static EFS volume without an access point, FSx for Lustre) mounted for uid 1000: every
    lock `mkdir` failed like a lock another node holds, and the pod napped for ever without a word (review: `pulumi
    up` died at the fill timeout with no hint). Now it exits 1 at once, naming the mount, the uid and the fix."""
    user = _as_image_user()
    volume = Path(tempfile.mkdtemp(dir="/tmp"))  # tmp_path's parents are closed to uid 1000 under root
    try:
        cache = volume / "cache"
        cache.mkdir()
        volume.chmod(0o755)
        cache.chmod(0o755 if user else 0o555)  # root-owned 755 (under root), else read-only to its owner
        script = prefetch_script({"m": "hf://a/b"}).replace(DOWNLOAD, "true").replace(f"{MOUNT}/", f"{cache}/")
        status, stderr = _run_bounded(script.replace(IDLE, "exit 0"), timeout=10, user=user)
        assert status == 1, stderr
        uid = 1000 if user else os.geteuid()
        assert f"cannot write the model cache volume mounted at {cache}/ as uid {uid}" in stderr, stderr
        assert "mktemp: " in stderr and "efs-ap" in stderr and "access point" in stderr, stderr
        assert list(cache.iterdir()) == []  # no lock taken
    finally:
        cache.chmod(0o755)
        shutil.rmtree(volume)


def test_a_lock_that_cannot_be_created_is_logged_and_retried(tmp_path):
    """`mkdir` of a lock failing for another reason than a live lock (here a plain file in its place; no space
    left, an I/O error) was taken for another node's lock, and the stale-lock rule cannot remove it: a silent
    wait for ever. Now each attempt logs the error and retries."""
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "m.lock").write_text("")
    log = tmp_path / "stderr"
    with log.open("w") as err:
        proc = _start(_script(tmp_path, "exit 0", {"m": "hf://a/b"}), stderr=err)
    try:
        deadline = time.time() + 10
        while log.read_text().count("cannot create the lock") < 2 and time.time() < deadline:
            time.sleep(0.05)
        text = log.read_text()
        assert text.count(f"prefetch: cannot create the lock {tmp_path}/cache/m.lock (mkdir: ") >= 2, text
        assert f"retrying in {RETRY_S} s" in text, text
        assert proc.poll() is None  # still retrying
    finally:
        _stop(proc)


def test_sigterm_releases_the_lock(tmp_path):
    # Signal only once the download runs: the lock directory appears a moment before the shell records that it
    # holds it (`mkdir` returns, then `held=`), and a TERM in that window leaves the lock to the stale-lock rule.
    # Waiting for the lock directory alone made this test flaky on a loaded machine (issue 9).
    started = tmp_path / "started"
    proc = _start(_script(tmp_path, f"touch {started}\nsleep 3\n", {"m": "hf://a/b"}))
    try:
        lock = tmp_path / "cache" / "m.lock"
        deadline = time.time() + 10
        while not started.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert lock.is_dir() and started.exists()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == 143
        assert not lock.exists()
    finally:
        _stop(proc)


def _catches(pid: int, sig: int) -> bool:
    """Whether process `pid` installed a handler for `sig` (/proc/PID/status SigCgt, a bit mask from signal 1)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    raise AssertionError(f"no SigCgt in /proc/{pid}/status")


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="reads /proc (Linux)")
@pytest.mark.parametrize("phase", ["idle", "waiting for a lock"])
def test_pid_1_catches_sigterm_and_exits_at_once(tmp_path, phase):
    """The script is PID 1 of the prefetch container, and the kernel delivers a signal to a PID namespace's init
    only if it catches it (pid_namespaces(7)): the process must hold a TERM handler while idle (an `exec sleep`
    does not: every pod then waited the full 30 s grace) and while waiting on another node's lock, and end at
    once on TERM rather than after its current pause."""
    models = {"m": "hf://a/b"}
    if phase == "idle":
        (tmp_path / "cache" / "m").mkdir(parents=True)
        (tmp_path / "cache" / "m" / ".complete").touch()
        script = _script(tmp_path, "exit 1", models, idle=True)
    else:  # a fresh lock held by another node: this pod naps 15 s between looks, as shipped
        (tmp_path / "cache" / "m.lock").mkdir(parents=True)
        script = _script(tmp_path, "exit 1", models).replace("nap 0", "nap 15")
    proc = _start(script)
    try:
        time.sleep(0.5)  # past the traps' installation, into the pause
        assert proc.poll() is None, proc.stderr.read()
        assert _catches(proc.pid, signal.SIGTERM)
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=10)
        assert time.monotonic() - start < 3, "TERM waited for the current pause"
        assert status == (0 if phase == "idle" else 143)
    finally:
        _stop(proc)


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
    status, stderr = _run_bounded(_script(tmp_path, rendezvous, models), timeout=30)
    assert status == 0, stderr
    assert "failed" not in stderr  # neither download had to retry
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
