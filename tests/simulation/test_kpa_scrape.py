"""The KPA's 1 s scrapes (simulation/autoscaler/loop.py, the pods' lazy `catch_up`, the activator's stat)."""

from __future__ import annotations

import copy

import pytest

from simulation.autoscaler.quiet import skip_bookkeeping
from simulation.fleet import load_fleet, run_fleet
from tests.simulation.test_fleet import CLUSTER, _svc


@pytest.mark.parametrize("eager", [False, True])
def test_a_revision_started_late_scrapes_its_pods_on_the_clock_it_runs_on(monkeypatch, eager):
    """A rollout's new revision (created at t = 60 or 61.5) scrapes on whole seconds of the shared clock: its
    first scrape is the first whole second after its creation, scrape k runs at t = k (with an event per scrape)
    or later but never before (lazily), every per-second stat is non-negative and no pod is busy longer than it
    has lived (scrape k used to run at t0 + k and split at t = k counted from 0: negative seconds, then a jump)."""
    from simulation.autoscaler.loop import KpaLoop
    from simulation.pod import Pod

    monkeypatch.setattr(KpaLoop, "EAGER", eager)
    stats, pods, scrapes = [], set(), []
    orig_stat, orig_scrape, orig_quiet = Pod.kpa_stat, KpaLoop._scrape, KpaLoop._quiet_scrapes

    def spy_stat(self, k):
        out = orig_stat(self, k)
        stats.append(out[0])
        pods.add(self)
        return out

    def spy_scrape(self, k):
        if self.sim.silent:
            scrapes.append((k, self.env.now))
        return orig_scrape(self, k)

    def spy_quiet(self, k, end):   # scrapes k..end at once, nothing having moved
        if self.sim.silent:
            scrapes.extend((j, self.env.now) for j in range(k, end + 1))
        return orig_quiet(self, k, end)

    monkeypatch.setattr(Pod, "kpa_stat", spy_stat)
    monkeypatch.setattr(KpaLoop, "_scrape", spy_scrape)
    monkeypatch.setattr(KpaLoop, "_quiet_scrapes", spy_quiet)
    for at in (60, 61.5):
        stats.clear(), pods.clear(), scrapes.clear()
        fleet = {"name": "t", "duration_s": 500, "cluster": {**CLUSTER, "warm_nodes": 2},
                 "services": [{"scenario": _svc("a", 1.0, min_r=1, max_r=2), "rollout": {"at_s": at}}]}
        out = run_fleet(load_fleet(fleet), 1)["services"]["a"]
        assert out["rollout"]["ready_s"] is not None
        ks = [k for k, _ in scrapes]
        assert ks == list(range(int(at) + 1, int(at) + 1 + len(ks))) and len(ks) > 100
        if eager:
            assert all(now == k for k, now in scrapes)
        else:
            assert all(now >= k for k, now in scrapes)
        new = [p for p in pods if p.sim.silent]
        assert new and stats and min(stats) >= 0.0
        for pod in pods:
            assert 0.0 <= pod.area_busy <= pod.env.now - pod.created + 1e-6


# -- lazy scrapes (no event per scrape) against one SimPy event per scrape -------------------------------------

def _trace(path, seed: int, n: int = 400) -> str:
    """Arrivals on whole and half seconds, some together: requests land exactly on scrape times."""
    import random

    rng = random.Random(seed)
    t, rows = 0.0, ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for _ in range(n):
        t += rng.choice((0.0, 0.0, 0.5, 0.5, 1.0, 1.0, 2.0, 6.0))
        rows.append(f"{t},{rng.randint(10, 100)},{rng.randint(10, 100)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


def _whole_second_scenario(scn, trace: str, mode: str, seed: int) -> dict:
    """proxy: the activator always in the path (CC 1, TBC 211); serve: never (TBC 0, rps metric); mixed: it
    enters and leaves as the excess burst capacity crosses 0 (TBC 1–3, CC 2), so pods see direct and proxied load."""
    import random

    rng = random.Random(seed)
    ann = {"autoscaling.knative.dev/window": f"{rng.choice((6, 10, 20))}s",
           "autoscaling.knative.dev/scale-down-delay": rng.choice(("0s", "4s"))}
    if mode == "serve":
        ann.update({"autoscaling.knative.dev/target-burst-capacity": "0", "autoscaling.knative.dev/metric": "rps",
                    "autoscaling.knative.dev/target": "1"})
    elif mode == "mixed":
        ann.update({"autoscaling.knative.dev/target-burst-capacity": str(rng.choice((1, 2, 3)))})
    return {"inferenceService": scn.isvc(cc=1 if mode == "proxy" else 2, min_replicas=0, max_replicas=8,
                                         annotations=ann),
            "workload": {"kind": "trace", "path": trace},
            "server": {"kind": "simple", "base_s": rng.choice((0.5, 1.0, 2.0)), "distribution": "deterministic"},
            "cluster": {"gpus_per_node": 8, "max_nodes": 2, "warm_nodes": 1, "image_gib": 0,
                        "warmup_s": rng.choice((1, 2, 3)), "activator_probe_s": 0},
            "duration_s": 300}


def _reference_scrape(self, k: int) -> None:
    """Scrape k read the straightforward way: every sampled pod, then the activator, each recorded."""
    from simulation.autoscaler.sampling import sample_size

    sim = self.sim
    sim.scrape_ticks = k
    pods = sim.kpa_ready
    n_all = len(pods)
    if n_all:
        n = sample_size(n_all)
        idx = range(n_all) if n >= n_all else sorted(self.rng.sample(range(n_all), n))
        self._record(k, sum(pods[i].kpa_stat(k)[self.rps] for i in idx) / n * n_all)
    a_conc, a_count, active = sim.activator.scrape(1.0, k)
    if active:
        self._record(k, float(a_count) if self.rps else a_conc)


def _logged_run(mapping: dict, reference: bool, monkeypatch) -> tuple[list, str, list]:
    """Every tick's decision and window state, the report and the scrape generators' final states;
    `reference`: a scrape event per second that
    reads every sampled pod, and every tick run in full. A tick skipped as changing nothing (`KpaLoop.quiet`) logs
    its decision and None for the windows (its scrapes run later, before anything they read changes)."""
    from simulation import load_scenario, run_simulation
    from simulation.autoscaler.loop import KpaLoop

    ticks = []
    tick, timer, past_idle = KpaLoop.tick, KpaLoop._tick, KpaLoop._past_idle

    def log(self, full: bool, now: float | None = None) -> None:
        sim, st, pa = self.sim, self.stable, self.panic
        dw = self.decider.delay_window
        ticks.append(((self.env.now if now is None else now, self.want, self.ebc, self.state, sim.replicas,
                       len(sim.endpoints), sim.proxy, self.decider.panic_time, self.reached_initial,
                       dw and tuple(map(tuple, dw.values))),
                      (st.total, st.first, st.last, tuple(st.buckets), pa.total, pa.first, pa.last,
                       tuple(pa.buckets)) if full else None))

    loops = {}
    timer_tick = {"full": False, "logged": False}   # within the current timer event

    def log_tick(self):
        tick(self)
        log(self, True)
        loops[id(self)] = self
        timer_tick["full"] = True

    def log_timer(self, event=None):
        timer_tick.update(full=False, logged=False)
        timer(self, event)
        if not (timer_tick["full"] or timer_tick["logged"]):
            log(self, False)

    def log_past_idle(self, now, interval):
        """The ticks a settled loop jumps over, logged as the skipped ticks they would have been (their one
        effect, the scale-down-delay record, applied to a copy of the window at each)."""
        if not (timer_tick["full"] or timer_tick["logged"]):
            log(self, False)               # this tick, skipped, before the jump records anything
            timer_tick["logged"] = True
        decider = self.decider
        before = copy.deepcopy(decider.delay_window)
        at = past_idle(self, now, interval)
        after, t = decider.delay_window, now + interval
        while t < at:
            decider.delay_window = copy.deepcopy(before)
            skip_bookkeeping(self, t)
            log(self, False, t)
            t += interval
        decider.delay_window = after
        return at

    monkeypatch.setattr(KpaLoop, "EAGER", reference)
    if reference:
        monkeypatch.setattr(KpaLoop, "_scrape", _reference_scrape)
    monkeypatch.setattr(KpaLoop, "tick", log_tick)
    monkeypatch.setattr(KpaLoop, "_tick", log_timer)
    monkeypatch.setattr(KpaLoop, "_past_idle", log_past_idle)
    out = run_simulation(load_scenario(mapping), seed=3).to_json()
    monkeypatch.undo()
    states = []
    for loop in loops.values():   # the scrape generator's state once the scrapes up to the end have drawn
        loop.catch_scrapes(loop.env.now)
        loop._pay()
        states.append(loop.rng.getstate())
    return ticks, out, states


def _same(lazy: tuple, ref: tuple) -> bool:
    """The same report and draws, the same decision at every tick, the same windows at every tick not skipped."""
    return lazy[1:] == ref[1:] and len(lazy[0]) == len(ref[0]) and all(
        a[0] == b[0] and (a[1] is None or a[1] == b[1]) for a, b in zip(lazy[0], ref[0]))


def _skipped(run: tuple) -> int:
    return sum(1 for _, windows in run[0] if windows is None)


@pytest.mark.parametrize("seed", (0, 1, 2, 3, 4, 5, 6, 7, 9, 17, 20, 26))   # mixed: 2, 5, 17, 20, 26 switch
def test_lazy_scrapes_read_and_decide_exactly_what_a_scrape_event_per_second_would(scn, tmp_path, monkeypatch, seed):
    """Requests arriving, finishing and pods turning Ready exactly on whole seconds (a trace on whole and half
    seconds, deterministic service and start-up), with the activator in the path, out of it, and switching: every
    tick's decision and window state (bucket by bucket, bit for bit) and the whole report equal those of a
    scrape event per second reading every sampled pod."""
    mode = ("proxy", "serve", "mixed")[seed % 3]
    mapping = _whole_second_scenario(scn, _trace(tmp_path / "t.csv", seed), mode, seed)
    ref = _logged_run(mapping, True, monkeypatch)
    lazy = _logged_run(mapping, False, monkeypatch)
    assert len(ref[0]) > 100 and len({t[0][1] for t in ref[0]}) > 2       # it scaled, more than once
    if mode == "mixed":
        assert len({t[0][6] for t in ref[0]}) == 2                         # in and out of proxy mode
    assert _skipped(ref) == 0
    assert _same(lazy, ref)


def test_the_inlined_sample_draws_exactly_what_random_sample_draws():
    """`sorted_sample` = sorted(rng.sample(range(N), n)) with the generator left in the same state, across the pool
    and the set algorithm and bit-length edges (so seeded results do not move)."""
    import random

    from simulation.autoscaler.sampling import sample_size, sorted_sample

    for n_all in [*range(4, 130), 255, 256, 257, 1000, 1023, 1024, 1025, 4096]:
        n = sample_size(n_all)
        if n >= n_all:
            continue
        ours, ref = random.Random(n_all), random.Random(n_all)
        for _ in range(20):
            assert sorted_sample(ours, n_all, n) == sorted(ref.sample(range(n_all), n))
        assert ours.getstate() == ref.getstate()


def test_samples_nobody_reads_are_drawn_later_in_order(scn, tmp_path, monkeypatch):
    """Six to twelve pods, the activator entering the path in bursts (TBC 10) and quiet spells: the samples of
    seconds without direct load are owed and drawn before the next one read; every tick's windows and the report
    equal those of drawing every second."""
    import random

    from simulation.autoscaler.loop import KpaLoop

    rng = random.Random(7)
    t, rows = 0.0, ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for _ in range(900):
        t += rng.choice((0.0, 0.0, 0.5, 0.5, 1.0, 1.0, 2.0, 6.0, 15.0))
        rows.append(f"{t},10,10")
    (tmp_path / "b.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    mapping = {"inferenceService": scn.isvc(cc=2, min_replicas=6, max_replicas=12, annotations={
        "autoscaling.knative.dev/window": "10s", "autoscaling.knative.dev/target-burst-capacity": "10"}),
        "workload": {"kind": "trace", "path": str(tmp_path / "b.csv")},
        "server": {"kind": "simple", "base_s": 2.0, "distribution": "deterministic"},
        "cluster": {"gpus_per_node": 8, "max_nodes": 2, "warm_nodes": 1, "image_gib": 0, "warmup_s": 2,
                    "activator_probe_s": 0},
        "duration_s": 300}
    paid = []   # draws owed at each payment
    pay = KpaLoop._pay

    def counting_pay(self):
        paid.append(sum(times for _, _, times in self.owed))
        pay(self)

    monkeypatch.setattr(KpaLoop, "_pay", counting_pay)
    lazy = _logged_run(mapping, False, monkeypatch)
    assert len(paid) > 5 and sum(paid) > 50
    assert _same(lazy, _logged_run(mapping, True, monkeypatch))


def test_lazy_scrapes_on_a_shared_clock_match_events_per_scrape(scn, tmp_path, monkeypatch):
    """Two services on one clock and node group (each KPA orders its own scrapes against events on whole
    seconds), one rolled out at t = 60 (a loop starting mid-run), a node lost at t = 100: the fleet's result is
    the same as with a scrape event per second reading every sampled pod."""
    fleet = _fleet(240, 100, [_member(scn, tmp_path, _trace, "a", 1, "serve", rollout={"at_s": 60}),
                              _member(scn, tmp_path, _trace, "b", 2, "mixed")])
    lazy = _fleet_json(fleet, False, monkeypatch)
    assert '"ready_s": null' not in lazy                # the rollout completed
    assert lazy == _fleet_json(fleet, True, monkeypatch)


def _member(scn, tmp_path, trace, name: str, seed: int, mode: str, min_r: int | None = None, **extra) -> dict:
    sc = _whole_second_scenario(scn, trace(tmp_path / f"{name}.csv", seed), mode, seed)
    sc["inferenceService"]["metadata"]["name"] = name
    if min_r is not None:
        sc["inferenceService"]["spec"]["predictor"]["minReplicas"] = min_r
    return {"scenario": {"name": name, **{k: v for k, v in sc.items() if k not in ("cluster", "duration_s")}},
            **extra}


def _fleet(duration_s: float, loss_at_s: float, services: list) -> dict:
    return {"name": "t", "duration_s": duration_s, "node_loss": {"at_s": loss_at_s, "not_ready_s": 20, "replace_s": 45},
            "cluster": {"gpus_per_node": 4, "max_nodes": 4, "warm_nodes": 2, "image_gib": 0, "warmup_s": 2,
                        "activator_probe_s": 0, "node_provision_s": 30},
            "services": services}


def _fleet_json(fleet: dict, reference: bool, monkeypatch, patch=None) -> str:
    """The fleet's result; `reference`: a scrape event per second reading every sampled pod, every tick in full;
    `patch(monkeypatch)` applied for the run."""
    import json

    from simulation.autoscaler.loop import KpaLoop

    monkeypatch.setattr(KpaLoop, "EAGER", reference)
    if reference:
        monkeypatch.setattr(KpaLoop, "_scrape", _reference_scrape)
    if patch is not None:
        patch(monkeypatch)
    out = json.dumps(run_fleet(load_fleet(fleet), 5), sort_keys=True)
    monkeypatch.undo()
    return out
