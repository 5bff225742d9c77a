"""No worker process outlives the command, and a worker that dies is reported (review rev13-bounds findings 4-6).

Each test runs `preflight whatif` on dev with long replications (gate.durationS 20000 at 5 req/s: seconds of
CPU each) on two local workers, waits until both workers are busy, signals one process and checks the exit
status, the message and that no process of the command is left. Before the fix a SIGTERM or SIGKILL to the main
process left both workers waiting forever (reparented to init), a SIGINT waited for the running replications,
and a worker killed by SIGKILL had its job re-run silently in the main process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMAND = [sys.executable, "-m", "preflight", "whatif", "--stack", "dev", "--set", "gate.durationS=20000",
           "--set", "services.chat.workload.rate=5", "--replications", "2", "--workers", "2", "--service", "chat"]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers, /proc")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start() -> tuple[subprocess.Popen, list[psutil.Process]]:
    """The command, once its two workers have been busy for a moment (their CPU time grows)."""
    # SIGINT at its default, as in a terminal's foreground job: a suite started in the background by a shell
    # without job control (`pytest … &` in a script) inherits SIGINT ignored, and so would the command (Python
    # keeps an ignored SIGINT, as a Unix program should), which would then not stop.
    proc = subprocess.Popen(COMMAND, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            workers = psutil.Process(proc.pid).children()
            if len(workers) >= 2 and all(w.cpu_times().user > 0.3 for w in workers):
                return proc, workers
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    proc.kill()
    pytest.fail(f"no two busy workers: {proc.communicate()}")


def _left(workers: list[psutil.Process], within: float) -> list[psutil.Process]:
    """The workers still running after `within` seconds (zombies of a dead parent are reaped by init)."""
    deadline = time.monotonic() + within
    alive = workers
    while time.monotonic() < deadline:
        alive = [w for w in workers if w.is_running() and w.status() != psutil.STATUS_ZOMBIE]
        if not alive:
            break
        time.sleep(0.1)
    return alive


def _finish(proc: subprocess.Popen, within: float) -> tuple[int, str]:
    try:
        _, err = proc.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the command did not exit within {within} s of the signal")
    return proc.returncode, err


def _cleanup(workers: list[psutil.Process]) -> None:
    for w in workers:
        try:
            w.kill()
        except psutil.NoSuchProcess:
            pass


@pytest.mark.parametrize("sig, code, message", [(signal.SIGTERM, 143, "terminated (SIGTERM)"),
                                                (signal.SIGINT, 130, "interrupted")])
def test_a_signal_to_the_main_process_alone_stops_the_workers_at_once(sig, code, message):
    proc, workers = _start()
    try:
        proc.send_signal(sig)          # the main process only, not its group (as `kill PID` does)
        started = time.monotonic()
        rc, err = _finish(proc, 10)
        assert time.monotonic() - started < 5, "waited for the running replications"
        assert rc == code, err
        assert message in err and "Traceback" not in err, err
        assert not _left(workers, 2.0), "a worker outlived the command"
    finally:
        _cleanup(workers)


def test_workers_exit_when_the_main_process_is_killed():
    proc, workers = _start()
    try:
        proc.kill()
        _finish(proc, 10)
        assert not _left(workers, 3.0), "a worker outlived its killed parent"
    finally:
        _cleanup(workers)


def _busy(workers: list[psutil.Process]) -> psutil.Process:
    """A worker in the middle of a job: its CPU time grew in each of four 0.15-s windows in a row. One that
    finished its job may wait for none, and a short burst can be the hand-over between two jobs (the result sent,
    the next one read), where the message rightly names no job."""
    streak = {w.pid: 0 for w in workers}
    for _ in range(200):
        before = [w.cpu_times().user for w in workers]
        time.sleep(0.15)
        for w, used in zip(workers, before):
            streak[w.pid] = streak[w.pid] + 1 if w.cpu_times().user > used else 0
            if streak[w.pid] >= 4:
                return w
    pytest.fail("no worker is busy")


def test_a_worker_killed_is_reported_not_rerun_in_the_main_process():
    proc, workers = _start()
    try:
        _busy(workers).send_signal(signal.SIGKILL)     # as the kernel's out-of-memory killer does
        rc, err = _finish(proc, 10)
        assert rc == 2, err
        assert "SIGKILL" in err and "out-of-memory" in err and "--workers" in err and "gate.warmupS" in err, err
        assert re.search(r"the replication of 'dev/\w+' with seed \d+", err) and "Traceback" not in err, err
        assert not _left(workers, 2.0)
    finally:
        _cleanup(workers)
