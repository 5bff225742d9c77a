"""Each distinct setting is simulated once, and a space smaller than --trials is tried point by point
(rev12-journey F3: `tune --knobs minReplicas,nodeMax --trials 12` ran 6 distinct of 12 and missed the passing
point), and the output lists every trial (text and --json) with scenario names intact (F6)."""

from __future__ import annotations

import io
import types

from rich.console import Console

from catalog.prices import PRICES
from stackconfig.load import project_values, stack_config_values
from stackconfig.schema import parse_stack_config
from tuner import search
from tuner.cli import print_summary, summary
from tuner.search import Candidate, space_size, tune
from tuner.space import current, key, points

KNOBS = ("minReplicas", "nodeMax")


def _dev() -> tuple[str, dict]:
    project, raw = stack_config_values("dev")
    return project, project_values(raw, project)


def _fake(pass_at: tuple | None, calls: list):
    """A stand-in for `evaluate` (no simulation): passes only the setting `pass_at` (minReplicas, nodeMax)."""
    def judge(values, project, stack, service, settings, prices, executor=None, number=0, gate_seed=None):
        calls.append(dict(settings))
        ok = (settings["minReplicas"], settings["nodeMax"]) == pass_at
        return Candidate(number, settings, passed=ok, cost_per_hour=1.0 if ok else None,
                         failed=[] if ok else ["chat [spike]: p99 time to first token (s) 12 > SLO 1"])
    return judge


def test_the_space_is_every_setting_suggest_can_draw():
    project, values = _dev()
    cfg = parse_stack_config(values, project, "dev")
    got = points(cfg, "chat", PRICES, KNOBS, 100)
    chat = next(s for s in cfg.services if s.name == "chat")
    ng_max = cfg.node_group.max_size
    lo = 0 if chat.allow_scale_to_zero else 1
    # minReplicas 0|1 .. maxReplicas; nodeMax from the nodes maxReplicas needs to twice that
    need = -(-chat.max_replicas * chat.gpus // cfg.node_group.gpus_per_node)
    expected = {(m, n) for m in range(lo, chat.max_replicas + 1) for n in range(need, 2 * need + 1)}
    assert {(s["minReplicas"], s["nodeMax"]) for s in got} == expected and len(got) == len(expected)
    assert points(cfg, "chat", PRICES, KNOBS, len(expected) - 1) is None     # counted only up to the limit
    assert ng_max >= 1 and space_size(values, project, "dev", "chat", PRICES, KNOBS, 100) >= len(expected)


def test_a_space_smaller_than_trials_is_tried_exhaustively_each_point_once(monkeypatch):
    project, values = _dev()
    cfg = parse_stack_config(values, project, "dev")
    space = points(cfg, "chat", PRICES, KNOBS, 100)
    last = (space[-1]["minReplicas"], space[-1]["nodeMax"])
    calls: list = []
    monkeypatch.setattr(search, "evaluate", _fake(last, calls))
    import optuna

    samplers: list = []
    brute = optuna.samplers.BruteForceSampler
    monkeypatch.setattr(optuna.samplers, "BruteForceSampler",
                        lambda *a, **k: samplers.append("brute") or brute(*a, **k))   # review 12 mutant U4
    out = tune(values, project, "dev", "chat", trials=len(space) + 3, seed=0, knobs=KNOBS)
    assert samplers == ["brute"]                                       # point by point, not TPE's luck
    tried = [key(c.settings) for c in out]
    assert len(tried) == len(set(tried)) == len(calls)                 # nothing simulated twice
    assert {key(s) for s in space} <= set(tried)                       # every point of the space
    assert out[0].settings["minReplicas"] == current(cfg, "chat")["minReplicas"]   # trial 0 is today's
    assert [c.number for c in out] == list(range(len(out)))
    assert sum(c.passed for c in out) == 1


def test_a_large_space_runs_trials_distinct_settings(monkeypatch):
    project, values = _dev()
    calls: list = []
    monkeypatch.setattr(search, "evaluate", _fake(None, calls))
    knobs = ("minReplicas", "maxReplicas", "nodeMax", "nodeMin", "containerConcurrency")
    assert space_size(values, project, "dev", "chat", PRICES, knobs, limit=20) is None
    out = tune(values, project, "dev", "chat", trials=20, seed=0, knobs=knobs)
    assert len(out) == 20 and len({key(c.settings) for c in out}) == 20 == len(calls)


def test_the_output_lists_every_trial_with_scenario_names_kept(monkeypatch):
    project, values = _dev()
    calls: list = []
    monkeypatch.setattr(search, "evaluate", _fake(None, calls))
    out = tune(values, project, "dev", "chat", trials=20, seed=0, knobs=KNOBS)
    args = types.SimpleNamespace(stack="dev", service="chat", seed=0, trials=20)
    result = summary(args, project, out, None, space_size(values, project, "dev", "chat", PRICES, KNOBS, 20))
    assert [r["trial"] for r in result["candidates"]] == list(range(len(out)))
    assert result["exhaustive"] and result["space_size"] == len(out) and result["requested_trials"] == 20
    buf = io.StringIO()
    print_summary(Console(file=buf, width=200), result)
    text = buf.getvalue()
    assert f"{len(out)} distinct settings tried (every setting of the search space" in text
    assert "today's first miss: chat [spike]: p99" in text                       # rich kept "[spike]"
    assert text.count("misses: chat [spike]") == len(out)                      # one row per trial


def test_todays_setting_outside_the_space_counts_as_one_more_point():
    """Review 12 (mutation testing), U3: trial 0 is today's setting, which may lie outside the space's ranges (a
    node group larger than twice what maxReplicas needs): the count includes it, which decides exhaustive or TPE."""
    project, values = _dev()
    cfg = parse_stack_config(values, project, "dev")
    chat = next(s for s in cfg.services if s.name == "chat")
    need = -(-chat.max_replicas * chat.gpus // cfg.node_group.gpus_per_node)
    inside = space_size(values, project, "dev", "chat", PRICES, KNOBS, 1000)
    values = {**values, "gpuNodeGroup": {**values["gpuNodeGroup"], "maxSize": 2 * need + 1}}
    cfg = parse_stack_config(values, project, "dev")
    assert current(cfg, "chat")["nodeMax"] == 2 * need + 1
    assert space_size(values, project, "dev", "chat", PRICES, KNOBS, 1000) == len(
        points(cfg, "chat", PRICES, KNOBS, 1000)) + 1 and inside == len(points(cfg, "chat", PRICES, KNOBS, 1000))
