"""Idle stretches in the KPA loop: quiet seconds scraped in one step (`KpaLoop._quiet_scrapes`) and settled ticks
skipped (simulation/autoscaler/quiet.py), against a scrape event per second and every tick run in full."""

from __future__ import annotations

import pytest

from tests.simulation.test_kpa_scrape import (_fleet, _fleet_json, _logged_run, _member, _same, _skipped,
                                              _whole_second_scenario)


def _bursts(path, seed: int) -> str:
    """Bursts of requests (on whole and half seconds) between idle stretches of 20 s to 7 minutes."""
    import random

    rng = random.Random(seed)
    t, rows = 0.0, ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    for _ in range(12):
        for _ in range(rng.randint(1, 40)):
            t += rng.choice((0.0, 0.5, 0.5, 1.0, 2.0))
            rows.append(f"{t},10,10")
        t += rng.choice((20.0, 61.0, 150.5, 420.0))
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("seed", range(6))
def test_idle_stretches_read_and_decide_exactly_what_a_scrape_event_per_second_would(scn, tmp_path, monkeypatch,
                                                                                       seed):
    """Bursts between long idle stretches (scale to zero and back, or pods pinned by min-scale with nothing to
    do, samples owed, windows emptied by runs of zeros, most ticks skipped): every tick's decision, the window
    state at every tick run (bit for bit), the draws and the report equal those of a scrape event per second
    reading every sampled pod with every tick run in full."""
    mode = ("proxy", "serve", "mixed")[seed % 3]
    mapping = _whole_second_scenario(scn, _bursts(tmp_path / "b.csv", seed), mode, seed)
    mapping["duration_s"] = 2400
    if seed >= 3:                                       # pinned: 4–6 Ready pods, the sample a subset
        mapping["inferenceService"]["spec"]["predictor"]["minReplicas"] = {3: 5, 4: 4, 5: 6}[seed]   # 4: no sample
    ref = _logged_run(mapping, True, monkeypatch)
    lazy = _logged_run(mapping, False, monkeypatch)
    assert len(ref[0]) > 1000
    if seed < 3:
        assert sum(1 for t in ref[0] if t[0][5] == 0) > 300 and len({t[0][1] for t in ref[0]}) > 2   # to 0 and back
    else:
        assert min(t[0][5] for t in ref[0][100:]) >= 4
    assert _skipped(lazy) > 600 and _skipped(ref) == 0
    assert _same(lazy, ref)


@pytest.mark.parametrize("mutant", ("no_owed_draws", "no_zeros"))
def test_a_broken_quiet_scrape_is_caught(scn, tmp_path, monkeypatch, mutant):
    """Quiet seconds done in one step that forget the owed sample draws or the windows' zeros: the comparison
    above fails."""
    from simulation.autoscaler.aggregation import WindowBuckets
    from simulation.autoscaler.loop import KpaLoop

    quiet = KpaLoop._quiet_scrapes

    def no_owed_draws(self, k, end):
        owed = [list(o) for o in self.owed]
        quiet(self, k, end)
        self.owed[:] = owed

    seed = 4
    mapping = _whole_second_scenario(scn, _bursts(tmp_path / "b.csv", seed), "serve", seed)
    mapping["duration_s"] = 1200
    mapping["inferenceService"]["spec"]["predictor"]["minReplicas"] = 5
    if mutant == "no_owed_draws":
        monkeypatch.setattr(KpaLoop, "_quiet_scrapes", no_owed_draws)
    else:
        monkeypatch.setattr(WindowBuckets, "add_zeros", lambda self, a, b: None)
    lazy = _logged_run(mapping, False, monkeypatch)
    assert not _same(lazy, _logged_run(mapping, True, monkeypatch))


@pytest.mark.parametrize("mutant", ("windows_draining", "scale_to_zero_timers", "no_delay_record", "blind"))
def test_a_broken_quiet_tick_is_caught(scn, tmp_path, monkeypatch, mutant):
    """Ticks skipped while the windows still drain, while scale-to-zero timers run, without the scale-down-delay
    window's record, or blind to new requests: the comparison with every tick run in full fails."""
    from simulation.autoscaler import loop as kpa_loop, quiet

    def settled(loop, now, want, ready):
        if mutant == "windows_draining":
            monkeypatch.setattr(quiet, "_still", lambda w, last: True)
        return quiet.settled(loop, now, want, ready)

    seed = 3 if mutant in ("no_delay_record", "blind") else 0
    mapping = _whole_second_scenario(scn, _bursts(tmp_path / "b.csv", seed), "proxy", seed)
    mapping["duration_s"] = 2400
    ann = mapping["inferenceService"]["metadata"]["annotations"]
    if seed >= 3:
        mapping["inferenceService"]["spec"]["predictor"]["minReplicas"] = 5
        ann["autoscaling.knative.dev/scale-down-delay"] = "10s"
    if mutant == "windows_draining":
        monkeypatch.setattr(kpa_loop, "settled", settled)
    elif mutant == "scale_to_zero_timers":   # settled with want 1 held by handleScaleToZero (a timer)
        import inspect
        import textwrap

        src = textwrap.dedent(inspect.getsource(kpa_loop.KpaLoop.tick))
        line = "moving = True                          # timers"
        assert line in src
        ns: dict = {}
        exec(compile(src.replace(line, "pass"), "mutant", "exec"), vars(kpa_loop), ns)
        monkeypatch.setattr(kpa_loop.KpaLoop, "tick", ns["tick"])
    elif mutant == "no_delay_record":
        monkeypatch.setattr(kpa_loop, "skip_bookkeeping", lambda loop, now: None)
    else:
        monkeypatch.setattr(kpa_loop, "signature", lambda loop: (loop.sim.replicas, loop.cfg))
    lazy = _logged_run(mapping, False, monkeypatch)
    assert _skipped(lazy) > 50
    assert not _same(lazy, _logged_run(mapping, True, monkeypatch))


@pytest.mark.parametrize("rollout_s", [300, 300.25])
def test_idle_stretches_on_a_shared_clock_match_every_tick_in_full(scn, tmp_path, monkeypatch, rollout_s):
    """Two services with bursts and long idle stretches on one clock and node group, one scaled to zero between
    bursts and one pinned at 2 pods, one rolled out while idle (its old revision loses min-scale), a node lost
    while idle: the fleet's result is the same as with a scrape event per second and every tick run in full.
    A revision created off a whole second ticks off them, and skips its settled ticks too."""
    from simulation.autoscaler.loop import KpaLoop
    from simulation.autoscaler.quiet import signature

    fleet = _fleet(1500, 700, [_member(scn, tmp_path, _bursts, "a", 1, "proxy", 0),
                               _member(scn, tmp_path, _bursts, "b", 2, "mixed", 2, rollout={"at_s": rollout_s})])
    skipped, off_grid = [], []
    timer = KpaLoop._tick

    def counting(self, event=None):
        skip = self.quiet is not None and self.quiet == signature(self)
        skipped.append(skip)
        if self.env.now % 1.0:
            off_grid.append(skip)
        timer(self, event)

    lazy = _fleet_json(fleet, False, monkeypatch, lambda mp: mp.setattr(KpaLoop, "_tick", counting))
    assert sum(skipped) > 500
    assert (sum(off_grid) > 100) if rollout_s % 1 else not off_grid
    assert '"ready_s": null' not in lazy
    assert lazy == _fleet_json(fleet, True, monkeypatch)


def bursty_runs(scn, monkeypatch, seed: int, annotations: dict | None = None) -> list[str]:
    """A random bursty scenario (gamma arrivals with a CV of 3–15: bursts and long silences; random CC, TBC, metric,
    windows, scale-down delay, min-scale and start-up; `annotations` on top), run lazily and with a scrape event per
    second and every tick in full (`KpaLoop.EAGER`): the two reports, as JSON."""
    import random

    from simulation import load_scenario, run_simulation
    from simulation.autoscaler.loop import KpaLoop

    rng = random.Random(seed)
    ann = {"autoscaling.knative.dev/window": f"{rng.choice((6, 10, 30, 60, 120))}s",
           "autoscaling.knative.dev/scale-down-delay": rng.choice(("0s", "0s", "4s", "30s")),
           "autoscaling.knative.dev/target-burst-capacity": rng.choice(("211", "0", "2", "-1"))}
    if rng.random() < 0.3:
        ann.update({"autoscaling.knative.dev/metric": "rps", "autoscaling.knative.dev/target": str(rng.choice((1, 5)))})
    ann.update(annotations or {})
    mapping = {"inferenceService": scn.isvc(cc=rng.choice((0, 1, 2, 4)), min_replicas=rng.choice((0, 0, 1, 3)),
                                            max_replicas=rng.choice((3, 8)), annotations=ann),
               "workload": {"kind": "gamma", "rate": rng.choice((0.05, 0.2, 1.0)), "cv": rng.choice((3.0, 8.0, 15.0))},
               "server": {"kind": "simple", "base_s": rng.choice((0.3, 1.0, 3.0)),
                          "distribution": rng.choice(("exponential", "deterministic"))},
               "cluster": {"gpus_per_node": 8, "max_nodes": 2, "warm_nodes": 1, "image_gib": 0,
                           "warmup_s": rng.choice((1, 5, 20)), "activator_probe_s": 0},
               "duration_s": 2000}
    out = []
    for reference in (False, True):
        monkeypatch.setattr(KpaLoop, "EAGER", reference)
        out.append(run_simulation(load_scenario(mapping), seed=seed).to_json())
    return out


@pytest.mark.parametrize("seed", range(10))
def test_bursty_random_scenarios_report_the_same_as_every_tick_in_full(scn, monkeypatch, seed):
    lazy, eager = bursty_runs(scn, monkeypatch, seed)
    assert lazy == eager
