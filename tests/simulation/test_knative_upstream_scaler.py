"""The KPA loop's PodAutoscaler reconcile against knative/serving's own tests and code (Knative 1.23):
- `pkg/reconciler/autoscaling/kpa/scaler_test.go` TestScaler and TestDisableScaleToZero, row by row (the row
  names are upstream's), through `KpaLoop.tick` with a decider that returns the row's `scaleTo` (−1: no
  metrics, the decider never had a valid result) and the handleScaleToZero rows through `KpaLoop._scale_to_zero`;
  constants as kpa_test.go: grace 60 s, stable window 5 min, PA window 45 s, progress deadline 121 s;
- `scaler.go: lastPodRetention` and `scale`: an Unreachable PA (the old revision after a rollout) has no
  scale-to-zero-pod-retention-period and no initial scale (review 13, finding 2);
- `multiscaler.go: tickScaler` + `kpa.go: ReconcileKind`: a tick without metric data keeps the decider's last
  valid desired scale, which the reconcile goes on applying, so an activation that never turns Ready times out
  (review 13, finding 6).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from simulation.autoscaler.aggregation import make_window
from simulation.autoscaler.config import AutoscalerConfig
from simulation.autoscaler.kpa import DeciderSpec, KpaDecider, ScaleResult
from simulation.autoscaler.loop import KpaLoop
from simulation.stress import _unreachable

GRACE, STABLE, PA_WINDOW, DEADLINE = 60.0, 300.0, 45.0, 121.0   # kpa_test.go:103-106
TIMEOUT = DEADLINE + 30.0                                         # activationTimeout (+ activationTimeoutBuffer)
NOW = 10_000.0
UNSET = object()   # loop.want before the tick: still UNSET after it → the reconcile's want was −1 (scaleUnknown)


class _Sim:
    """What the tick reads and writes on a revision: Ready pods, replicas, the SKS mode and since when it proxies."""

    def __init__(self, replicas: int, ready: int = 0, proxy_for: float | None = None, now: float = NOW) -> None:
        self.endpoints = [object()] * ready
        self.replicas = self.n_live = replicas
        self.proxy = True
        self.proxy_since = None if proxy_for is None else now - proxy_for
        self.activator = SimpleNamespace(n=0)
        self.scaled: list[int] = []

    def set_replicas(self, n: int) -> None:
        self.scaled.append(n)
        self.replicas = self.n_live = n

    def set_proxy(self, proxy: bool) -> None:
        self.proxy = proxy


class _Fixed(KpaDecider):
    """A decider whose Scale() returns the row's scaleTo (the reconcile is what is tested)."""

    to = 0

    def scale(self, now, ready_pods, stable, panic):
        return ScaleResult(self.to, 0, True)


def _cfg(**kw) -> AutoscalerConfig:
    kw = {"stable_window_s": STABLE, "scale_to_zero_grace_period_s": GRACE, "progress_deadline_s": DEADLINE, **kw}
    return AutoscalerConfig(**kw)


def _pa_cfg(retention_annotation: str, cm_retention: float) -> AutoscalerConfig:
    """The PA's `autoscaling.knative.dev/scale-to-zero-pod-retention-period` over config-autoscaler's
    (`PodAutoscaler.ScaleToZeroPodRetention` before `cfg.ScaleToZeroPodRetentionPeriod`)."""
    from dataclasses import replace

    from simulation.autoscaler.cluster_config import DEFAULT
    from simulation.autoscaler.config import from_annotations

    problems: list = []
    cfg = from_annotations({"autoscaling.knative.dev/scale-to-zero-pod-retention-period": retention_annotation}, 0,
                           problems, cluster=replace(DEFAULT, scale_to_zero_pod_retention_s=cm_retention))
    assert not problems
    return replace(cfg, stable_window_s=STABLE, scale_to_zero_grace_period_s=GRACE, progress_deadline_s=DEADLINE)


def _loop(cfg: AutoscalerConfig, state: str, since: float, replicas: int = 1, *, ready: int = 0,
          reached: bool = True, proxy_for: float | None = None, decider: KpaDecider | None = None,
          now: float = NOW) -> KpaLoop:
    """A KpaLoop on a stub revision, its PA `state` since `since` ("active", "activating", "inactive": paMarkActive
    and co.), every tick run in full (EAGER: no settled-tick bookkeeping)."""
    lp = KpaLoop.__new__(KpaLoop)
    lp.EAGER = True
    lp.cfg = cfg
    lp.env = SimpleNamespace(_now=now, now=now)
    lp.sim = _Sim(replicas, ready, proxy_for, now)
    lp.decider = decider or KpaDecider(DeciderSpec(target_value=cfg.target_value, total_value=cfg.total_value,
                                                   target_burst_capacity=cfg.target_burst_capacity))
    lp.stable = make_window(cfg.stable_window_s, 1.0, "linear")
    lp.panic = make_window(cfg.panic_window_s, 1.0, "linear")
    lp.want, lp.ebc, lp.state, lp.since, lp.reached_initial, lp.quiet = UNSET, 0, state, since, reached, None
    return lp


def _scale(cfg: AutoscalerConfig, scale_to: int, state: str, since: float, replicas: int, *,
           unreachable: bool = False, reached: bool = True, proxy_for: float | None = None) -> tuple[int, bool]:
    """scaler.go `scale(pa, sks, scaleTo)` as one tick: (the want it returns, whether it patched the replicas).
    scaleTo −1 is a decider that never had data (no metrics recorded); otherwise one metric at `NOW`."""
    decider = _Fixed(DeciderSpec(target_value=1.0, total_value=1.0))
    decider.to = scale_to
    lp = _loop(cfg, state, since, replicas, reached=reached, proxy_for=proxy_for, decider=decider)
    if unreachable:
        _unreachable(lp)
    if scale_to >= 0:
        lp.stable.add(int(NOW), 1.0)
        lp.panic.add(int(NOW), 1.0)
    lp.tick()
    want = -1 if lp.want is UNSET else lp.want
    return want, bool(lp.sim.scaled)


# scaler_test.go TestScaler / TestDisableScaleToZero rows that go through `scale` (bounds, initial scale,
# reachability, then handleScaleToZero): (label, cfg, scaleTo, PA state, since, start replicas, options) →
# (wantReplicas, wantScaling).
SCALE_ROWS = [
    ("scale down to minScale before grace period", _cfg(min_scale=2), 0, "inactive", NOW - GRACE + 1, 10, {},
     (2, True)),
    ("scale down to minScale after grace period", _cfg(min_scale=2), 0, "inactive", NOW - GRACE, 10, {}, (2, True)),
    ("ignore minScale if unreachable", _cfg(min_scale=2), 0, "inactive", NOW - GRACE, 10, {"unreachable": True},
     (0, True)),
    ("scale to 1 waiting for idle expires", _cfg(), 0, "active", NOW - STABLE + 1, 10, {}, (1, True)),
    ("scales up", _cfg(), 10, "active", NOW, 1, {}, (10, True)),
    ("scales up to maxScale", _cfg(max_scale=8), 10, "active", NOW, 1, {}, (8, True)),
    ("scale up inactive revision", _cfg(), 10, "inactive", NOW - GRACE / 2, 1, {}, (10, True)),
    ("does not scale up from zero with no metrics", _cfg(), -1, "inactive", NOW, 0, {}, (-1, False)),
    ("scales up from zero to desired one", _cfg(), 1, "inactive", NOW, 0, {}, (1, True)),
    ("scales up from zero to desired high scale", _cfg(), 10, "inactive", NOW, 0, {}, (10, True)),
    ("negative scale does not scale", _cfg(), -1, "active", NOW, 12, {}, (-1, False)),
    ("initial scale attained, but now time to scale down", _cfg(initial_scale=2), 0, "active", NOW - 120, 2, {},
     (1, True)),
    ("haven't scaled to initial scale, override desired scale with initial scale", _cfg(initial_scale=2), 1,
     "activating", NOW, 0, {"reached": False}, (2, True)),
    ("initial scale reached for the first time", _cfg(initial_scale=5), 1, "activating", NOW, 5,
     {"reached": False}, (5, False)),
    ("reaching initial scale zero", _cfg(initial_scale=0, allow_zero_initial_scale=True), 0, "inactive", NOW, 0,
     {"reached": False}, (0, False)),
    # finding 2: the Unreachable PA's initial scale is ignored (scaler.go scale), so it deactivates (1) on its way
    # to 0; the loop held it at initial-scale 2 before.
    ("unreachable revision with initialScale > 1 can scale to 0", _cfg(initial_scale=2), 0, "active", NOW - 120, 2,
     {"reached": False, "unreachable": True}, (1, True)),
    # TestDisableScaleToZero
    ("EnableScaleToZero == false and minScale == 0", _cfg(enable_scale_to_zero=False), 0, "active", NOW - 600, 10,
     {}, (1, True)),
    ("EnableScaleToZero == false and minScale == 2", _cfg(enable_scale_to_zero=False, min_scale=2), 0, "active",
     NOW - 600, 10, {}, (2, True)),
    ("EnableScaleToZero == false and desire pod is -1(initial value)", _cfg(enable_scale_to_zero=False), -1,
     "active", NOW - 600, 10, {}, (-1, False)),
]


@pytest.mark.parametrize("label, cfg, scale_to, state, since, replicas, opts, expected", SCALE_ROWS,
                         ids=[r[0] for r in SCALE_ROWS])
def test_scaler_rows_through_the_tick(label, cfg, scale_to, state, since, replicas, opts, expected):
    assert _scale(cfg, scale_to, state, since, replicas, **opts) == expected


# scaler_test.go TestScaler, the handleScaleToZero rows (desired 0): (label, cfg, PA state, since, SKS proxying
# for, Unreachable) → (want, apply).
ZERO_ROWS = [
    ("waits to scale to zero (just before idle period)", _cfg(), "active", NOW - STABLE + 1, None, False, (1, True)),
    ("waits to scale to zero (just before idle period), custom PA window", _cfg(stable_window_s=PA_WINDOW),
     "active", NOW - PA_WINDOW + 1, None, False, (1, True)),
    ("custom PA window, check for standard window, no probe", _cfg(stable_window_s=PA_WINDOW), "active",
     NOW - STABLE, None, False, (0, False)),
    ("waits to scale to zero after idle period", _cfg(), "active", NOW - STABLE, None, False, (0, False)),
    ("waits to scale to zero after idle period; sks in proxy mode", _cfg(), "active", NOW - STABLE, STABLE, False,
     (0, False)),
    ("waits to scale to zero after idle period (custom PA window)", _cfg(stable_window_s=PA_WINDOW), "active",
     NOW - PA_WINDOW, None, False, (0, False)),
    ("can scale to zero after grace period, but 0 PA retention", _pa_cfg("0", 2 * GRACE), "inactive", NOW - GRACE,
     None, False, (0, True)),
    ("can't scale to zero after grace period, but before last pod retention",
     _cfg(scale_to_zero_pod_retention_s=2 * GRACE), "inactive", NOW - GRACE, None, False, (0, False)),
    ("can't scale to zero after grace period, but before last pod retention, pa defined", _pa_cfg("120s", 0.0),
     "inactive", NOW - GRACE, None, False, (0, False)),
    ("scale to zero after grace period, and after last pod retention", _cfg(scale_to_zero_pod_retention_s=GRACE),
     "inactive", NOW - GRACE, None, False, (0, True)),
    ("scale to zero after grace period", _cfg(), "inactive", NOW - GRACE, None, False, (0, True)),
    ("waits to scale to zero (just before grace period)", _cfg(), "inactive", NOW - GRACE + 1, None, False,
     (0, False)),
    ("waits to scale to zero (just before grace period, sks short)", _cfg(), "inactive", NOW - GRACE + 1, GRACE - 1,
     False, (0, False)),
    ("waits to scale to zero (just before grace period, sks in proxy long) and last pod timeout positive",
     _cfg(scale_to_zero_pod_retention_s=42.0), "inactive", NOW - GRACE + 1, GRACE, False, (0, True)),
    ("waits to scale to zero (just before grace period, sks in proxy long)", _cfg(), "inactive", NOW - GRACE + 1,
     GRACE, False, (0, True)),
    ("scale to zero with TBC=-1", _cfg(target_burst_capacity=-1), "inactive", NOW - GRACE, None, False, (0, True)),
    ("waits to scale to zero while activating until after deadline exceeded", _cfg(), "activating",
     NOW - TIMEOUT / 2, None, False, (-1, False)),
    ("scale to zero while activating after deadline exceeded", _cfg(), "activating", NOW - (TIMEOUT + 1), None,
     False, (0, True)),
    ("scale to zero while activating after revision deadline exceeded", _cfg(progress_deadline_s=5.0),
     "activating", NOW - (5 + 30 + 1), None, False, (0, True)),
    # finding 2: scaler.go lastPodRetention is 0 for an Unreachable PA (config-autoscaler retention 10 × grace).
    ("scale to zero ignore last pod retention if  revision is unreachable",
     _cfg(scale_to_zero_pod_retention_s=10 * GRACE), "inactive", NOW - GRACE, None, True, (0, True)),
    ("can't scale to zero if revision is unreachable, but before deadline",
     _cfg(scale_to_zero_pod_retention_s=10 * GRACE), "inactive", NOW - GRACE + 1, GRACE - 1, True, (0, False)),
]


@pytest.mark.parametrize("label, cfg, state, since, proxy_for, unreachable, expected", ZERO_ROWS,
                         ids=[r[0] for r in ZERO_ROWS])
def test_handle_scale_to_zero_rows(label, cfg, state, since, proxy_for, unreachable, expected):
    lp = _loop(cfg, state, since, proxy_for=proxy_for)
    if unreachable:
        _unreachable(lp)
    assert lp._scale_to_zero(NOW) == expected


def test_the_unreachable_retention_row_through_the_tick():
    """The same row as a whole tick: desired 0, Inactive for the grace period, retention 10 × grace. Reachable,
    the pod stays for the retention period; Unreachable, it goes now (the loop kept it 540 s more before)."""
    cfg = _cfg(scale_to_zero_pod_retention_s=10 * GRACE)
    assert _scale(cfg, 0, "inactive", NOW - GRACE, 1) == (0, False)
    assert _scale(cfg, 0, "inactive", NOW - GRACE, 1, unreachable=True) == (0, True)


def test_the_old_revision_after_a_rollout_does_not_wait_out_its_pod_retention(monkeypatch):
    """End to end (simulation/stress.py RolloutDriver): the old revision, Unreachable once the route moves, with
    `scale-to-zero-pod-retention-period: 600s` (and a 20 s window): its pods go within the window + the 30 s
    grace of the flip, as without a retention (scaler.go lastPodRetention), not 600 s after it turned Inactive."""
    from simulation import stress
    from simulation.fleet import load_fleet, run_fleet

    from tests.simulation.test_fleet import _fleet, _svc

    flips: list[float] = []
    check = stress.RolloutDriver._check

    def spy(self):
        before = self.old.route
        check(self)
        if before is None and self.old.route is not None:
            flips.append(self.new.env.now)

    monkeypatch.setattr(stress.RolloutDriver, "_check", spy)
    fleet = _fleet({"scenario": _svc("a", 1.0, min_r=2, max_r=4, **{
        "autoscaling.knative.dev/scale-to-zero-pod-retention-period": "600s"}), "rollout": {"at_s": 60}},
        cluster={"warm_nodes": 4, "max_nodes": 8}, duration=600)
    a = run_fleet(load_fleet(fleet), 1)["services"]["a"]
    flip = flips[0]
    series = a["replica_series"]
    last_ready = max(t for t, r in zip(series["t"], series["ready"]) if r > 0)
    assert flip < last_ready < flip + 120 and series["ready"][-1] == 0


# -- finding 6: no metric data keeps the last valid desired scale ---------------------------------------------

def _activation_run(first_tick: float, end: float = 1000.0, data_until: int = 300) -> list[tuple]:
    """A scale from zero that never turns Ready: the PA Activating since t = 0 with 1 replica; the activator held
    one request (concurrency 1, target 70: no panic) and reported it every second up to `data_until`, nothing
    after. Ticks every 2 s from `first_tick` with the real decider; (t, replicas, PA state) after each."""
    cfg = AutoscalerConfig()   # progress deadline 600 s: activation timeout 630 s
    lp = _loop(cfg, "activating", 0.0, 1, now=0.0)
    lp.want = 1
    for k in range(1, data_until + 1):
        lp.stable.add(k, 1.0)
        lp.panic.add(k, 1.0)
    log = []
    t = first_tick
    while t <= end:
        lp.env._now = lp.env.now = t
        lp.tick()
        log.append((t, lp.sim.replicas, lp.state))
        t += 2.0
    return log


def test_an_activation_whose_last_valid_desire_was_0_times_out_without_data():
    """The decider's one valid 0 comes at t = 360 (the last record a stable window old, d = window: its average
    is 0); handleScaleToZero answers "activating, not timed out" (scaleUnknown). Every tick after has no data:
    the multiscaler keeps DesiredScale 0 (tickScaler ignores invalid results) and the PA reconcile goes on
    applying it, so at the activation timeout (630 s) the revision is scaled to 0 and marked Inactive. The loop
    dropped the 0 (want −1 on every tick without data) and kept the pod forever."""
    log = _activation_run(first_tick=2.0)
    at = {t: (replicas, state) for t, replicas, state in log}
    assert at[358.0] == (1, "activating") and at[360.0] == (1, "activating")
    assert at[628.0] == (1, "activating")
    assert at[630.0] == (0, "inactive") and at[1000.0] == (0, "inactive")


def test_without_a_valid_0_the_last_desire_stands():
    """The same run ticking on odd seconds: no tick falls on d = window, the last valid desired scale is 1 (at
    d = 59 the average is still 1) and stays — no data alone never scales anything down."""
    log = _activation_run(first_tick=1.0, end=1001.0)
    assert {replicas for _, replicas, _ in log} == {1}
    assert log[-1][2] == "activating"


def test_an_activation_that_never_had_data_times_out_unless_min_scale_holds_it():
    """No metric at all (the decider's DesiredScale still −1, e.g. a new revision the route does not send to yet):
    scaler.go `scale` goes on for an Activating PA, applyBounds raises −1 to min-scale; at 0 handleScaleToZero
    scales it to 0 once the activation times out (630 s). With min-scale 1 it stays at 1. The loop left both
    alone."""
    for min_scale, after in ((0, 0), (1, 1)):
        lp = _loop(AutoscalerConfig(min_scale=min_scale), "activating", 0.0, 1, now=0.0)
        seen = {}
        for t in range(2, 702, 2):
            lp.env._now = lp.env.now = float(t)
            lp.tick()
            seen[t] = lp.sim.replicas
        assert seen[628] == 1 and seen[630] == after and seen[700] == after
        assert lp.sim.scaled == ([0] if after == 0 else [])


def test_a_revision_scaled_to_zero_settles_on_its_kept_desire():
    """Scaled to zero, Inactive past the grace period, no data: each tick now reconciles the kept desired scale 0
    (handleScaleToZero: scale to 0, already there) and changes nothing, so the loop still counts as settled and
    its ticks are skipped (quiet.py), as when the no-data tick did nothing."""
    from simulation.autoscaler import quiet

    lp = _loop(AutoscalerConfig(), "inactive", 0.0, 0, now=200.0)
    lp.EAGER = False
    lp.desired = 0
    lp.want = 0
    lp.sim.direct_t = -1.0
    lp.sim.n_direct = 0
    lp.sim.kpa_ready = []
    lp.sim.activator = SimpleNamespace(n=0, count=0, area=0.0, mark=(0.0, 0))
    lp.tick()
    assert lp.quiet is not None and lp.want == 0 and lp.sim.scaled == []
    assert quiet.settled(lp, 200.0, 0, 0)
    lp.stable.add(150, 0.0)                                # data again (a stable window not yet over): not settled
    assert not quiet.settled(lp, 200.0, 0, 0)
