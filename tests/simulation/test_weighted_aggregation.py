"""`autoscaling.knative.dev/metric-aggregation-algorithm: weighted-exponential`: Knative's `WeightedFloat64Buckets`
(pkg/autoscaler/aggregation/bucketing.go, knative-v1.23.0), its own test cases, the KPA loop reading both windows
that way, and the loop's shortcuts (lazy scrapes, skipped settled ticks) against every scrape and tick in full."""

from __future__ import annotations

import math

import pytest

from simulation.autoscaler.aggregation import (WeightedWindowBuckets, WindowBuckets, go_int_pow, make_window,
                                               smoothing_coeff)
from tests.simulation.test_kpa_quiet import _bursts, bursty_runs
from tests.simulation.test_kpa_scrape import _logged_run, _same, _skipped, _trace, _whole_second_scenario
from tests.simulation.test_window_exact import PlainBuckets, _drive

A = "autoscaling.knative.dev/"
WEIGHTED = {A + "metric-aggregation-algorithm": "weighted-exponential"}


# -- Knative's bucketing_test.go ----------------------------------------------------------------------------------

@pytest.mark.parametrize("nb,want", [(100, 0.2), (60, 0.2), (42, 0.2), (40, 0.20567), (6, 0.78456), (1, 0.9999)])
def test_compute_decay_multiplier(nb, want):
    """TestComputeDecayMultiplier's rows (and 42, the first clamped, and 1), to their 5 digits: upstream compares
    within weightPrecision (0.9999), which no value in [0.2, 1) can miss."""
    assert smoothing_coeff(nb) == pytest.approx(want, abs=5e-6)


def test_weighted_average():
    """TestTimedFloat64BucketsWeightedAverage, step by step, with its exact (==) comparisons; `now` off a whole
    second as upstream's time.Now() is."""
    now = 1_700_000_123.37
    b = WeightedWindowBuckets(5.0)
    m = b.coeff
    b.record(now, 2)
    want = 2 * m
    assert b.window_average(now) == want
    want *= (1 - m)                                     # a second later, no write
    assert b.window_average(now + 1) == want
    b.record(now + 1, 2)
    want += 2 * m
    assert b.window_average(now + 1) == want
    for i in range(5):                                  # fill the whole window with [2, 3, 4, 5, 6]
        b.record(now + 2 + i, float(i + 2))
    want = 6 * m + 5 * m * (1 - m) + 4 * m * (1 - m) * (1 - m) + 3 * m * (1 - m) * (1 - m) * (1 - m) + \
        2 * m * (1 - m) * (1 - m) * (1 - m) * (1 - m)
    assert b.window_average(now + 6) == want
    assert b.window_average(now + 16) == 0.0            # an empty window


def test_weighted_resize_window_initial_average():
    """TestWeightedFloat64BucketsResizeWindow's data set before the resize (1..6 over a 5 s window, rolled over):
    5.812 to 3 digits, "computed a mano". (The simulation never resizes a window: it keeps its revision's.)"""
    start = 1_700_000_000.0
    b = WeightedWindowBuckets(5.0)
    for i in range(6):
        b.record(start + i, float(i + 1))
    assert sum(b.buckets) == 2 + 3 + 4 + 5 + 6
    assert round(b.window_average(start + 5), 3) == 5.812


def test_weighted_average_leaves_old_data_out():
    """bucketing.go: d seconds after the last write the newest bucket weighs m·(1 − m)^d and only n − d buckets
    count; at d = n nothing does; past the window the average is 0 (isEmpty)."""
    b = WeightedWindowBuckets(6.0)
    m = b.coeff
    for k in range(10, 16):
        b.add(k, 1.0)
    full = sum(m * (1 - m) ** i for i in range(6))
    assert b.average_at(15) == pytest.approx(full, rel=1e-15)
    assert b.average_at(17) == pytest.approx(sum(m * (1 - m) ** (2 + i) for i in range(4)), rel=1e-14)
    assert b.average_at(21) == 0.0 and b.average_at(22) == 0.0
    lin = WindowBuckets(6.0)
    for k in range(10, 16):
        lin.add(k, 1.0)
    assert lin.average_at(17) == 1.0                   # linear: stale seconds left out, the rest averaged


# -- floats as Go's: integer powers and the coefficient ------------------------------------------------------------

# Printed by Go 1.19 on amd64: math.Pow(x, k) for x = 0.8 (1 − m for any window of 42 s or more) and for 1 − m of
# the default 6 s panic window, where Python's correctly rounded x ** k differs in the last bits.
_X8, _X6 = "0x1.999999999999ap-1", "0x1.b93a6cec0b3b4p-3"
GO_POW = [(_X8, 4, "0x1.a36e2eb1c4330p-2"), (_X8, 5, "0x1.4f8b588e368f4p-2"), (_X8, 52, "0x1.327fc58da0f8fp-17"),
          (_X8, 3001, "0x1.dba8fd33868ddp-967"), (_X8, 3600, "0x0.0p+0"), (_X6, 6, "0x1.a36e2eb1c433dp-14"),
          (_X6, 52, "0x1.ca3294eb1598ap-116"), (_X6, 1, _X6)]
# ... and computeSmoothingCoeff(nb) (1 and 2: Go's Pow special cases; 24: its assembly Exp/Log a unit in the last
# place away from the C library's).
GO_COEFF = {1: "0x1.fff2e48e8a71ep-1", 2: "0x1.fae147ae147aep-1", 3: "0x1.e83c2d3b29c00p-1",
            5: "0x1.aeda7cea25322p-1", 6: "0x1.91b164c4fd313p-1", 10: "0x1.342b4c0456da6p-1",
            40: "0x1.a5373d0c8ef30p-3", 41: "0x1.9c0dcfdbc3fbcp-3", 42: "0x1.999999999999ap-3",
            60: "0x1.999999999999ap-3", 24: "0x1.465b5f317cceep-2"}


@pytest.mark.parametrize("x,k,go", GO_POW)
def test_integer_powers_round_as_gos_math_pow(x, k, go):
    assert go_int_pow(float.fromhex(x), k).hex() == go
    assert (1 - smoothing_coeff(6)).hex() == _X6 and (1 - smoothing_coeff(60)).hex() == _X8


def test_python_power_would_not_match_go():
    """Why `go_int_pow`: Python's ** misses most of the table above."""
    assert sum((float.fromhex(x) ** k).hex() != go for x, k, go in GO_POW) >= 5


@pytest.mark.parametrize("nb", sorted(GO_COEFF))
def test_smoothing_coefficient_as_go_computes_it(nb):
    got, go = smoothing_coeff(nb), float.fromhex(GO_COEFF[nb])
    if nb == 24:                                        # documented: a unit in the last place
        assert got != go and abs(got - go) <= 2 * math.ulp(go)
    else:
        assert got == go


# -- the windows' shortcuts against the plain algorithm ----------------------------------------------------------

class PlainWeighted(PlainBuckets):
    """WeightedFloat64Buckets.WindowAverage read off the plain buckets (the reference)."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.m = smoothing_coeff(n)

    def window_average(self, now: float) -> float:
        if self.last is None:
            return 0.0
        n, now_idx = self.n, math.floor(now + 1e-9)
        if now_idx - self.last > n:
            return 0.0
        mult, num = self.m, n
        if now_idx > self.last:
            mult *= go_int_pow(1 - self.m, now_idx - self.last)
            num -= now_idx - self.last
        ret = 0.0
        for i in range(num):
            ret += self.buckets[(self.last - i) % n] * mult
            mult *= 1 - self.m
        return ret


@pytest.mark.parametrize("n", (1, 2, 6, 60, 150))
def test_weighted_windows_equal_the_plain_algorithm_bit_for_bit(n):
    """Random writes, runs of zeros (`add_zeros`), gaps past the window, averages at every second after: the
    same buckets and the same float as the plain algorithm."""
    for seed in range(6):
        _drive(WeightedWindowBuckets(float(n)), PlainWeighted(n), seed)


def test_make_window_picks_the_buckets_newcollection_picks():
    assert type(make_window(60.0, 1.0, "weighted-exponential")) is WeightedWindowBuckets
    assert type(make_window(60.0, 1.0, "linear")) is WindowBuckets


# -- the KPA loop ---------------------------------------------------------------------------------------------------

def _decider_inputs(mapping: dict, monkeypatch) -> tuple[list, list, object]:
    """Every scrape recorded (second, value) and every decider call (now, stable, panic, writes before it), with a
    scrape event per second that records through `KpaLoop._record` (the reference mode of test_kpa_scrape)."""
    from simulation import load_scenario, run_simulation
    from simulation.autoscaler.kpa import KpaDecider
    from simulation.autoscaler.loop import KpaLoop
    from tests.simulation.test_kpa_scrape import _reference_scrape

    writes, calls, loops = [], [], []
    record, scale, init = KpaLoop._record, KpaDecider.scale, KpaLoop.__init__

    def log_record(self, t, value):
        writes.append((math.floor(t + 1e-9), value))
        record(self, t, value)

    def log_scale(self, now, ready, stable, panic):
        calls.append((now, stable, panic, len(writes)))
        return scale(self, now, ready, stable, panic)

    def log_init(self, *a, **k):
        init(self, *a, **k)
        loops.append(self)

    monkeypatch.setattr(KpaLoop, "EAGER", True)
    monkeypatch.setattr(KpaLoop, "_scrape", _reference_scrape)
    monkeypatch.setattr(KpaLoop, "_record", log_record)
    monkeypatch.setattr(KpaDecider, "scale", log_scale)
    monkeypatch.setattr(KpaLoop, "__init__", log_init)
    run_simulation(load_scenario(mapping), seed=5)
    monkeypatch.undo()
    assert len(loops) == 1
    return writes, calls, loops[0].cfg


def _weighted_reference(writes: list, upto: int, n: int) -> float:
    """bucketing.go's weighted average at second `upto` from the (second, value) writes so far, with no ring
    buffer: per-second sums, seconds without a write 0."""
    sums: dict[int, float] = {}
    last = None
    for k, v in writes:
        sums[k] = sums.get(k, 0.0) + v
        last = k if last is None or k > last else last
    if last is None or upto - last > n:
        return 0.0
    m = smoothing_coeff(n)
    mult, num = m, n
    if upto > last:
        mult *= go_int_pow(1 - m, upto - last)
        num -= upto - last
    ret = 0.0
    for i in range(num):
        ret += sums.get(last - i, 0.0) * mult
        mult *= 1 - m
    return ret


@pytest.mark.parametrize("window,pct", [("60s", None), ("10s", None), ("30s", "80")])
def test_the_kpa_decides_on_weighted_averages_of_both_windows(scn, tmp_path, monkeypatch, window, pct):
    """An annotated revision: at every tick the decider gets Knative's weighted average of the scrapes so far over
    the stable window and over the panic window (each with its own coefficient), bit for bit; a linear revision
    gets something else from the same kind of run."""
    ann = {**WEIGHTED, A + "window": window}
    if pct:
        ann[A + "panic-window-percentage"] = pct
    mapping = _whole_second_scenario(scn, _trace(tmp_path / "t.csv", 3), "mixed", 3)
    mapping["inferenceService"]["metadata"]["annotations"].update(ann)
    writes, calls, cfg = _decider_inputs(mapping, monkeypatch)
    assert cfg.aggregation == "weighted-exponential"
    n_stable, n_panic = int(cfg.stable_window_s), int(cfg.panic_window_s)
    assert len(calls) > 100
    checked = 0
    for now, stable, panic, before in calls:
        done = writes[:before]
        upto = math.floor(now + 1e-9)
        assert stable == _weighted_reference(done, upto, n_stable), now
        assert panic == _weighted_reference(done, upto, n_panic), now
        checked += stable != 0.0
    assert checked > 50
    # the same run, linear: the decider reads other numbers
    mapping["inferenceService"]["metadata"]["annotations"][A + "metric-aggregation-algorithm"] = "linear"
    _, lin_calls, lin_cfg = _decider_inputs(mapping, monkeypatch)
    assert lin_cfg.aggregation == "linear" and lin_calls != calls


def test_the_alternate_casing_and_legacy_key_reach_the_loop(scn):
    from simulation import load_scenario
    for ann in ({A + "metric-aggregation-algorithm": "weightedExponential"},
                {A + "metricAggregationAlgorithm": "weighted-exponential"}):
        s = load_scenario({"inferenceService": scn.isvc(cc=1, annotations=ann), "workload": {"kind": "poisson",
                           "rate": 1.0}, "server": {"kind": "simple", "base_s": 1.0}, "duration_s": 60})
        assert s.serving.kpa.aggregation == "weighted-exponential"


# -- the loop's shortcuts hold for weighted windows ----------------------------------------------------------------

@pytest.mark.parametrize("seed", (0, 1, 2, 5))
def test_weighted_lazy_scrapes_read_and_decide_exactly_what_a_scrape_event_per_second_would(scn, tmp_path,
                                                                                            monkeypatch, seed):
    """test_kpa_scrape's comparison with weighted windows: every tick's decision and window state and the report."""
    mode = ("proxy", "serve", "mixed")[seed % 3]
    mapping = _whole_second_scenario(scn, _trace(tmp_path / "t.csv", seed), mode, seed)
    mapping["inferenceService"]["metadata"]["annotations"].update(WEIGHTED)
    lazy = _logged_run(mapping, False, monkeypatch)
    ref = _logged_run(mapping, True, monkeypatch)
    assert len(ref[0]) > 100 and _same(lazy, ref)


@pytest.mark.parametrize("seed", range(6))
def test_weighted_idle_stretches_match_every_tick_in_full(scn, tmp_path, monkeypatch, seed):
    """test_kpa_quiet's bursts between long idle stretches, weighted: settled ticks are still skipped (a weighted
    window whose buckets are all 0.0 reads 0.0 as zeros come in) and every decision equals every tick in full."""
    mode = ("proxy", "serve", "mixed")[seed % 3]
    mapping = _whole_second_scenario(scn, _bursts(tmp_path / "b.csv", seed), mode, seed)
    mapping["duration_s"] = 2400
    mapping["inferenceService"]["metadata"]["annotations"].update(WEIGHTED)
    if seed >= 3:
        mapping["inferenceService"]["spec"]["predictor"]["minReplicas"] = {3: 5, 4: 4, 5: 6}[seed]
    ref = _logged_run(mapping, True, monkeypatch)
    lazy = _logged_run(mapping, False, monkeypatch)
    assert _skipped(lazy) > 600 and _skipped(ref) == 0
    assert _same(lazy, ref)


def test_a_settled_check_that_ignores_weighted_buckets_is_caught(scn, tmp_path, monkeypatch):
    """Ticks skipped while a weighted window still holds load (its average falls as the load ages): the comparison
    above fails."""
    from simulation.autoscaler import loop as kpa_loop, quiet

    def settled(loop, now, want, ready):
        monkeypatch.setattr(quiet, "_still", lambda w, now: w.last == math.ceil(now - 1e-9) - 1)
        return quiet.settled(loop, now, want, ready)

    mapping = _whole_second_scenario(scn, _bursts(tmp_path / "b.csv", 0), "proxy", 0)
    mapping["duration_s"] = 2400
    mapping["inferenceService"]["metadata"]["annotations"].update(WEIGHTED)
    monkeypatch.setattr(kpa_loop, "settled", settled)
    lazy = _logged_run(mapping, False, monkeypatch)
    assert _skipped(lazy) > 50
    assert not _same(lazy, _logged_run(mapping, True, monkeypatch))


@pytest.mark.parametrize("seed", range(4))
def test_weighted_bursty_random_scenarios_report_the_same_as_every_tick_in_full(scn, monkeypatch, seed):
    lazy, eager = bursty_runs(scn, monkeypatch, 100 + seed, WEIGHTED)
    assert lazy == eager


@pytest.mark.parametrize("value", ["weighted-exponential", "weightedExponential", "linear"])
def test_the_stacks_annotation_reaches_the_simulated_kpa(value):
    """A stack service annotated so: the gate's scenario (the manifest the component deploys) gives the simulated
    KPA weighted windows, as Knative's collector would build them for that revision."""
    import gate
    from simulation import load_scenario
    from simulation.autoscaler.loop import KpaLoop
    from stackconfig.load import ROOT
    from stackconfig.schema import parse_stack_config
    from tests.runtime_stack import chat_stack

    cfg = parse_stack_config(chat_stack(minReplicas=1, annotations={A + "metric-aggregation-algorithm": value}),
                             "p", "dev")
    sc = gate.scenario_for(cfg, cfg.services[0])
    assert sc["inferenceService"]["metadata"]["annotations"][A + "metric-aggregation-algorithm"] == value
    s = load_scenario(sc, base_dir=ROOT)
    want = "linear" if value == "linear" else "weighted-exponential"
    assert s.serving.kpa.aggregation == want
    from simulation.engine import Sim
    sim = Sim(s, seed=1)
    sim.start()
    loop = sim.autoscaler
    assert isinstance(loop, KpaLoop)
    kind = WindowBuckets if want == "linear" else WeightedWindowBuckets
    assert type(loop.stable) is kind and type(loop.panic) is kind
