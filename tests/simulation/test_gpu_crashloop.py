"""Kubernetes CrashLoopBackOff (kuberuntime `doBackOff` + client-go `flowcontrol.Backoff`): the first crash
restarts at once, then 10 s doubling to 300 s; the entry expires 10 minutes after the last restart."""

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


def test_first_restart_immediate_then_doubles_to_five_minutes():
    assert crash_times(CrashLoopBackOff(), 30.0, 8) == [0, 10, 20, 40, 80, 160, 300, 300]


def test_resets_after_ten_minutes_without_a_restart():
    b = CrashLoopBackOff()
    assert crash_times(b, 5.0, 4) == [0, 10, 20, 40]
    last = b._last_update
    assert b.on_crash(last + 601.0) == 0   # > 2 × 300 s after the last restart: a fresh entry, restart at once
    assert b.on_crash(last + 601.0 + 100) == 10
    assert b.restarts == 6


def test_expiry_counts_from_the_restart_not_the_crash():
    b = CrashLoopBackOff()
    assert b.on_crash(0.0) == 0
    assert b.on_crash(10.0) == 10           # restarted at 20 s: Backoff.Next stamps lastUpdate then
    assert b.on_crash(615.0) == 20          # 595 s after that restart (605 s after the crash): not expired


def test_no_reset_at_exactly_ten_minutes():
    b = CrashLoopBackOff()
    b.on_crash(0.0)
    assert b.on_crash(600.0) == 10          # hasExpired is strictly greater than 2 × maxDuration


def test_configurable_for_newer_kubelets():
    b = CrashLoopBackOff(initial_s=1.0, max_s=60.0)
    assert crash_times(b, 1.0, 8) == [0, 1, 2, 4, 8, 16, 32, 60]
