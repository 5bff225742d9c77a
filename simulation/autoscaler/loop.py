"""The SimPy side of the KPA: scrape (1 s) + tick (2 s) + PA reconcile.

KPA (knative/serving, reference knative-kserve.md §1–§3):
- scrape every 1 s (`metrics/collector.go: scrapeTickInterval`) of the ready pods, sampling
  n = N if N ≤ 3 else ceil(N·X/(N+X−1)), X = 15.3664 (`metrics/sample_size.go`), total = Σsample/n·N; each pod
  reports its time-weighted concurrency over the last second minus the activator-proxied part
  (`collection.record`); the activator adds its own (queued + proxied) concurrency; no ready pods → no scrape.
- 1 s buckets, stable window 60 s and panic window 6 s (`aggregation.WindowBuckets`, or `WeightedWindowBuckets` for
  `metric-aggregation-algorithm: weighted-exponential`); no record for a whole stable window → no data → the
  decider's result is invalid and its last valid desired scale stands.
- decider tick every 2 s (`multiscaler.go: tickInterval`) and on a poke from the activator's first request.
- PA reconcile (`pkg/reconciler/autoscaling/kpa/scaler.go: scale, handleScaleToZero`), every tick with the
  decider's last valid desired scale (an invalid result leaves it: `multiscaler.go: tickScaler`; −1 before the
  first valid one, when only an Activating PA goes on): clamp to [min-scale, max-scale], initial scale until first
  reached; scale to zero only after the PA has been Active for a stable window, then Inactive (activator in path)
  for max(grace 30 s, retention) — or at once if the activator has been in path ≥ grace. An Unreachable revision
  (the old one after a rollout, `stress._unreachable`) has no initial scale and no retention (`scaler.go:
  lastPodRetention`). SKS mode Serve iff want > 0 and EBC ≥ 0 (`kpa.go: ReconcileKind`).
Activation that does not produce a Ready pod within the progress deadline + 30 s (the revision's
`serving.knative.dev/progress-deadline`, else 600 s: `AutoscalerConfig.activation_timeout_s`) while the decider
wants 0 (or has never had data) scales back to 0. The PA is Active once max(min-scale, initial-scale) pods are
Ready until the scale target has been initialized, max(min-scale, 1) after (`kpa.go: activeThreshold`).
Cost: the tick is one reused event; the scrapes have none (`catch_scrapes`, run before anything they read
changes) and skip the pods in a second when no request reached one except through the activator; a run of
seconds in which nothing moved is scraped in one step (`_quiet_scrapes`), and once the loop has settled (scaled to zero,
or pods with nothing to do) ticks are skipped until something moves (`quiet.py`), and the tick event itself jumps to the
first tick time at or after the next event anywhere (`_past_idle`: nothing can move before it), keeping its place among
events of the same instant. `EAGER` is the reference for all of these (an event per scrape, every tick in full).
Simplified: scrapes land on whole seconds of the clock (Knative's ticker has an arbitrary phase).
The HPA's sync loop is `hpa_loop.py`.
"""

from __future__ import annotations

import math
from typing import Any

from simulation.autoscaler.aggregation import add_pair, make_window
from simulation.autoscaler.kpa import INVALID, DeciderSpec, KpaDecider
from simulation.autoscaler.quiet import settled, signature, skip_bookkeeping
from simulation.autoscaler.sampling import sample_size, sorted_sample
from simulation.clock import Recurring, call_later, grid_loops

_SAMPLE = [sample_size(n) for n in range(1024)]
_floor, _ceil = math.floor, math.ceil


class KpaLoop:
    EAGER = False   # True: a SimPy event per scrape (the reference the lazy scrapes are tested against)
    reachable = True   # the PA's Spec.Reachability (`stress._unreachable` sets False on the instance)
    desired = -1       # the decider's Status.DesiredScale: its last valid result, −1 before the first

    def __init__(self, sim: Any, cfg: Any, initial: int) -> None:
        self.sim = sim
        self.env = sim.env
        self.cfg = cfg
        spec = DeciderSpec(target_value=cfg.target_value, total_value=cfg.total_value,
                           target_burst_capacity=cfg.target_burst_capacity, panic_threshold=cfg.panic_threshold,
                           max_scale_up_rate=cfg.max_scale_up_rate, max_scale_down_rate=cfg.max_scale_down_rate,
                           stable_window_s=cfg.stable_window_s, scale_down_delay_s=cfg.scale_down_delay_s,
                           activation_scale=cfg.activation_scale, reachable=True)
        # newAutoscaler reads the Ready count when the decider is made: a warm start's pods (Ready at once, an
        # autoscaler starting without metric history) → panic holding them; a new revision's none → no panic.
        self.decider = KpaDecider(spec, ready_pods=len(sim.endpoints), now=self.env.now)
        # newCollection: both windows linear, or both weighted (metric-aggregation-algorithm).
        self.stable = make_window(cfg.stable_window_s, cfg.bucket_s, cfg.aggregation)
        self.panic = make_window(cfg.panic_window_s, cfg.bucket_s, cfg.aggregation)
        self.want = initial
        tbc = cfg.target_burst_capacity
        self.ebc = 0 if tbc == 0 else (-1 if tbc < 0 else int(math.floor(initial * cfg.total_value - tbc)))
        self.state = "active" if initial > 0 else "inactive"   # PA Active condition
        self.since = 0.0
        self.reached_initial = initial >= max(cfg.min_scale, cfg.initial_scale)   # ScaleTargetInitialized
        self.rng = sim.rng_scrape
        self.owed: list[list[int]] = []   # [pods, sample size, times]: samples drawn later (`_owe`)
        self.quiet: tuple | None = None   # settled: what the ticks read, unchanged while they are skipped
        self.rps = 1 if cfg.metric == "rps" else 0   # index into `Pod.kpa_stat`
        sim.set_proxy(not (self.want > 0 and self.ebc >= 0))
        sim.proxy_since = 0.0 if sim.proxy else None
        # Scrape k runs at t = k s, whole seconds of the shared clock (Knative's scrape ticker has no phase to
        # copy): a revision created later (a rollout) splits its pods' load at its own scrape times.
        t0 = self.env.now
        sim.scrape_ticks = int(math.floor(t0))
        self.started = False
        if not self.EAGER:
            sim.scrape_due = sim.scrape_ticks + 1.0
            grid_loops(self.env).append(self)
        call_later(self.env, 0.0, self._start)

    def _start(self) -> None:
        # The tick is a chain of callbacks (cheaper than a SimPy process), each scheduling its next run after its
        # body, as a process's `yield timeout` would: same-time events keep their order. The 1 s scrapes have
        # no events of their own (`catch_scrapes`).
        self.started = True
        if self.EAGER:
            call_later(self.env, self.sim.scrape_ticks + 1.0 - self.env.now, self._scrape_event)
        if self.cfg.tick_interval_s >= 2.0:
            self._next_tick = Recurring(self._tick)
            self._next_tick.schedule(self.env, self.cfg.tick_interval_s)
        else:
            self._next_tick = None
            call_later(self.env, self.cfg.tick_interval_s, self._tick)

    def _scrape_event(self) -> None:
        self._scrape(self.sim.scrape_ticks + 1)
        call_later(self.env, 1.0, self._scrape_event)

    # -- metrics --------------------------------------------------------------------------------------
    def catch_scrapes(self, now: float, inclusive: bool = False) -> None:
        """Perform the scrapes due before `now` (at `now` too when `inclusive`), in order, as if each had run at its
        own second: scrape k reads the pods' and the activator's stats over (k − 1, k], split there lazily.

        Called before anything a scrape reads changes (a request entering or leaving a pod or the activator, the
        Ready set, a tick), so each reads what it would have read at its second. At exactly t = k, a scrape
        event would have run after the events scheduled before scrape k − 1 ran (`clock.call_later` marks the
        later ones, which run this first with `inclusive`); the earlier ones see scrape k not yet done.
        """
        sim = self.sim
        k = sim.scrape_ticks + 1
        end = _ceil(now) - 1 if not inclusive or now % 1.0 else int(now)   # the last scrape due
        while k <= end:
            self._scrape(k)
            if k < end and not sim.n_direct and sim.direct_t < k and not sim.activator.n:
                self._quiet_scrapes(k + 1, end)
                k = end
            k += 1
        sim.scrape_due = float(k)

    def _quiet_scrapes(self, k: int, end: int) -> None:
        """Scrapes k..end when nothing has moved since scrape k − 1 (no request in the activator or in a pod
        but through it, and none comes before `end`: `catch_scrapes` runs before any change): the activator's
        stat is 0 and it reports nothing, each pod's stat is 0 (the sample is owed) and the windows get 0.0 —
        what `_scrape` does each second, in O(1) per window instead of O(seconds)."""
        sim = self.sim
        sim.scrape_ticks = end
        sim.activator.last = end                    # `Activator.scrape(1.0, end)` with nothing in it
        n_all = len(sim.kpa_ready)
        if n_all:
            n = _SAMPLE[n_all] if n_all < len(_SAMPLE) else sample_size(n_all)
            if n < n_all:
                owed = self.owed
                times = end - k + 1
                if owed and owed[-1][0] == n_all:
                    owed[-1][2] += times
                else:
                    self._owe(n_all, n)
                    owed[-1][2] += times - 1
            self.stable.add_zeros(k, end)
            self.panic.add_zeros(k, end)

    def _record(self, t: float, value: float) -> None:
        self.stable.record(t, value)
        self.panic.record(t, value)

    def _scrape(self, k: int) -> None:
        """Scrape k (at t = k): a sample of the Ready pods (the rest catch up lazily, `Pod.catch_up`) + the
        activator. When no request reached a pod but through the activator during the second, every pod's stat
        (non-proxied load, `collection.record`) is 0 and the pods are not read (the sample is owed, `_owe`)."""
        sim = self.sim
        sim.scrape_ticks = k
        pods = sim.kpa_ready
        n_all = len(pods)
        value = 0.0
        if n_all:
            if sim.n_direct or sim.direct_t >= k - 1:
                n = _SAMPLE[n_all] if n_all < len(_SAMPLE) else sample_size(n_all)
                if self.owed:
                    self._pay()
                idx = range(n_all) if n >= n_all else sorted_sample(self.rng, n_all, n)
                rps = self.rps
                total = 0   # as sum(): a pod idle since before scrape k − 1 adds 0 (`Pod.kpa_stat`), left out
                km1 = k - 1
                for i in idx:
                    pod = pods[i]
                    if pod.n or pod.ticked >= km1:
                        total += pod.kpa_stat(k)[rps]
                value = total / n * n_all
            elif n_all > 3:                              # maybe a sample (n < n_all): drawn later, owed
                owed = self.owed
                if owed and owed[-1][0] == n_all:
                    owed[-1][2] += 1
                else:
                    n = _SAMPLE[n_all] if n_all < len(_SAMPLE) else sample_size(n_all)
                    if n < n_all:
                        self._owe(n_all, n)
        # The activator's stat over the second (`Activator.scrape(1.0, k)`, inline: x / 1.0 is x).
        act = sim.activator
        a_n = act.n
        area = act.area
        if a_n:
            area = act.area = area + a_n * (k - act.last)
        act.last = k
        count = act.count
        a, c = act.mark
        act.mark = (area, count)
        # A 0 from the pods before the activator's value in the same bucket changes nothing: one add.
        if area > a or count > c or a_n:
            if n_all and value:
                add_pair(self.stable, self.panic, k, value)
            add_pair(self.stable, self.panic, k, float(count - c) if self.rps else area - a)
        elif n_all:
            add_pair(self.stable, self.panic, k, value)

    def _owe(self, n_all: int, n: int) -> None:
        """A sample nobody reads (every stat 0): drawn later, in order, only before one that is read — the
        scrape generator serves nothing else, so every draw that matters is the same."""
        owed = self.owed
        if owed and owed[-1][0] == n_all:
            owed[-1][2] += 1
        else:
            if len(owed) >= 256:                      # bounded: pay the older ones now
                self._pay()
            owed.append([n_all, n, 1])

    def _pay(self) -> None:
        rng = self.rng
        for n_all, n, times in self.owed:
            for _ in range(times):
                sorted_sample(rng, n_all, n)
        self.owed.clear()

    def poke(self) -> None:
        """The activator's first request: an immediate {conc 1, count 1} stat; tick now if last want was 0."""
        if self.want == 0:
            now = self.env.now
            self.catch_scrapes(now)
            self._record(now, 1.0)
            self.tick()

    def _tick(self, _event: Any = None) -> None:
        env = self.env
        now = env._now
        quiet = self.quiet
        if quiet is not None and quiet == signature(self):
            skip_bookkeeping(self, now)                # settled, nothing moved: the tick would change nothing
        else:
            if self.sim.scrape_due < now:
                self.catch_scrapes(now)
            self.tick()
        nxt = self._next_tick
        if nxt is None:
            call_later(env, self.cfg.tick_interval_s, self._tick)
        elif self.quiet is None:
            nxt.schedule_at(env, now + self.cfg.tick_interval_s)   # `Recurring.schedule`: the same float
        else:
            nxt.schedule_at(env, self._past_idle(now, self.cfg.tick_interval_s))

    def _past_idle(self, now: float, interval: float) -> float:
        """Settled: the next tick's time, past every tick before the next event anywhere (`env.peek()`), which
        would all be skipped (nothing can move before it). The tick times are summed as the chain of ticks sums
        them, and this tick is scheduled earlier than that chain would schedule it, so among events at its
        instant it keeps its place: those already queued run first either way (they were scheduled before
        now), those scheduled from the next event on run after it either way (the chain's tick would be
        scheduled before that event, less than one interval before its time). The skipped ticks' one effect,
        recording the same desired scale in the scale-down-delay window, leaves the window as the last one does
        (`MaxWindow.record`: an equal value replaces the one held)."""
        t = now + interval
        until = self.env.peek()
        if until <= t or until == math.inf:          # (inf: a run without `until`, nothing else queued)
            return t
        last = t
        while t < until:
            last = t
            t += interval
        skip_bookkeeping(self, last)
        return t

    # -- decide + reconcile -------------------------------------------------------------------------
    def tick(self) -> None:
        now = self.env._now
        sim = self.sim
        cfg = self.cfg
        ready = len(sim.endpoints)
        self.quiet = None
        moving = False
        stable = self.stable
        last = stable.last
        now_idx = _floor(now + 1e-9)                   # the bucket of `now` (1 s buckets)
        if last is None or now_idx - last > stable.n:
            result = INVALID                           # no data: the decider's result is invalid
        else:
            result = self.decider.scale(now, ready, stable.average_at(now_idx), self.panic.average_at(now_idx))
        if result.valid:
            want, self.ebc, _ = result
            self.desired = want
        else:
            # The multiscaler ignores an invalid result and keeps its last valid desired scale (`tickScaler`),
            # which the PA reconcile goes on reading (`kpa.go: c.scaler.scale(…, decider.Status.DesiredScale)`):
            # −1 before the first valid one.
            want = self.desired
        reached = self.reached_initial
        if want >= 0 or self.state == "activating":
            # scaler.go: scale — bounds (applyBounds: −1 while Activating is raised to min-scale), initial scale
            # until first reached unless Unreachable, then handleScaleToZero.
            lo = cfg.min_scale
            if not reached and cfg.initial_scale > 1 and cfg.initial_scale > lo and self.reachable:
                lo = cfg.initial_scale
            if want < lo:
                want = lo
            hi = cfg.max_scale
            if hi and want > hi:
                want = hi
            if want == 0:
                state = self.state
                want, apply = self._scale_to_zero(now)
                if apply and want >= 0 and not (want == sim.replicas == sim.n_live):
                    sim.set_replicas(want)
                    moving = True
                elif not (apply and want == 0 and state == "inactive"):   # (Inactive past them, at 0: for good)
                    moving = True                          # timers
            elif not (want == sim.replicas == sim.n_live):
                sim.set_replicas(want)
                moving = True                          # the next tick reads other counts
        # kpa.go activeThreshold: initial-scale counts until the scale target has been initialized, which
        # computeActiveCondition marks once that many pods are Ready (the threshold read before the mark).
        min_ready = cfg.min_scale
        if min_ready < 1 and reached:
            min_ready = 1
        elif not reached and min_ready < cfg.initial_scale:
            min_ready = cfg.initial_scale
        if ready >= min_ready and not reached:
            self.reached_initial = True
        # kpa.go ReconcileKind: activator in path iff want == 0, EBC < 0, or unknown (want < 0) while inactive.
        if want > 0:
            self.want = want
            if not (self.state == "active" and 0 < min_ready <= ready):
                self._active_condition(now, want, ready, min_ready)    # (else it stays Active)
            proxy = self.ebc < 0
        else:
            self._active_condition(now, want, ready, min_ready)
            if want == 0:
                self.want = 0
                proxy = True
            else:
                proxy = self.ebc < 0 or self.state == "inactive"
        if proxy != sim.proxy:
            sim.set_proxy(proxy)
        if (not moving and not sim.activator.n and reached == self.reached_initial and ready == len(sim.endpoints)
                and not self.EAGER and settled(self, now, want, ready)):   # the next ticks read the same (quiet.py)
            self.quiet = signature(self)                # the next ticks are skipped while it holds (`quiet.py`)

    def _active_condition(self, now: float, want: int, ready: int, min_ready: int) -> None:
        """kpa.go: computeActiveCondition, with `min_ready` its activeThreshold."""
        new = self.state
        if want == 0 or min_ready == 0:
            new = "inactive"
        elif ready < min_ready:
            if want > 0 or self.state != "inactive":
                new = "activating"
        elif want > 0 or self.state != "inactive":
            new = "active"
        if new != self.state:
            self.state = new
            self.since = now

    def _scale_to_zero(self, now: float) -> tuple[int, bool]:
        """scaler.go: handleScaleToZero for desired 0 → (want, apply)."""
        cfg = self.cfg
        if not cfg.enable_scale_to_zero:
            return 1, True
        if self.state == "activating":
            if now - self.since >= cfg.activation_timeout_s:
                return 0, True                     # could not activate within progress deadline + 30 s
            return -1, False                       # scaleUnknown while activating
        if self.state == "active":
            if now - self.since >= cfg.stable_window_s:
                return 0, False                    # mark Inactive (activator in path), don't scale yet
            return 1, True                         # at most 1 for the rest of the idle period
        retention = cfg.scale_to_zero_pod_retention_s if self.reachable else 0.0   # lastPodRetention
        grace = max(cfg.scale_to_zero_grace_period_s, retention)
        inactive_for = now - self.since
        proxy_since = self.sim.proxy_since
        if inactive_for >= grace or (proxy_since is not None and now - proxy_since >= cfg.scale_to_zero_grace_period_s
                                     and inactive_for >= retention):
            return 0, True
        return 0, False

