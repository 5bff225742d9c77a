"""Kubernetes CrashLoopBackOff delays: 10 s doubling to 300 s, reset after 10 minutes."""

from simulation.gpu.crashloop import CrashLoopBackOff


def crash_times(backoff, running_s, n, start=0.0):
    """Crash n times, each `running_s` after the previous restart; return the delays."""
    now, delays = start, []
    for _ in range(n):
        now += running_s
        d = backoff.on_crash(now)
        delays.append(d)
        now += d
    return delays


def test_sequence_doubles_to_five_minutes():
    assert crash_times(CrashLoopBackOff(), 30.0, 8) == [10, 20, 40, 80, 160, 300, 300, 300]


def test_resets_after_ten_minutes_without_a_crash():
    b = CrashLoopBackOff()
    assert crash_times(b, 5.0, 4) == [10, 20, 40, 80]
    last = b._last_update
    assert b.on_crash(last + 601.0) == 10  # stable for > 2 × 300 s: back to the initial delay
    assert b.on_crash(last + 601.0 + 10 + 100) == 20
    assert b.restarts == 6


def test_no_reset_just_under_ten_minutes():
    b = CrashLoopBackOff()
    b.on_crash(0.0)
    assert b.on_crash(599.0) == 20


def test_configurable_for_newer_kubelets():
    b = CrashLoopBackOff(initial_s=1.0, max_s=60.0)
    assert crash_times(b, 1.0, 8) == [1, 2, 4, 8, 16, 32, 60, 60]
