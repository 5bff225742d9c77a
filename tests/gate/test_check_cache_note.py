"""`preflight check` says when replications came from the on-disk cache (review 11, finding 3): one line in the
normal output whenever the cache answered any, and a `cache` object in --json, neither needing --timings; and when
the simulator's files changed during the run, that the cache was not used."""

from __future__ import annotations

import json

from preflight import check as cli
from simulation import result_cache
from simulation.replicate import clear_cache


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if "on-disk cache" in line]


def test_a_warm_check_says_its_replications_came_from_the_cache(tmp_path, capsys):
    args = ["check", "--workers", "1", "--cache-dir", str(tmp_path)]
    clear_cache()
    assert cli.main(args + ["--json"]) == 0
    cold = json.loads(capsys.readouterr().out)
    n = cold["cache"]["misses"]
    assert n > 0 and cold["cache"] == {"dir": str(tmp_path), "hits": 0, "misses": n, "off": None}
    clear_cache()
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert _lines(out) == [f"{n} of {n} replications from the on-disk cache ({tmp_path}); --no-cache to re-simulate"]
    clear_cache()
    assert cli.main(args + ["--json"]) == 0
    warm = json.loads(capsys.readouterr().out)
    assert warm["cache"] == {"dir": str(tmp_path), "hits": n, "misses": 0, "off": None}
    assert warm["stacks"] == cold["stacks"]
    clear_cache()
    assert cli.main(["check", "--workers", "1", "--no-cache"]) == 0      # nothing from a cache: no line
    assert _lines(capsys.readouterr().out) == []
    clear_cache()
    assert cli.main(["check", "--workers", "1", "--no-cache", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cache"] is None


def test_a_check_during_which_the_simulator_changed_says_the_cache_was_not_used(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(result_cache, "_CHANGED", "simulation/engine.py")   # as sources_changed() leaves it
    clear_cache()
    assert cli.main(["check", "--workers", "1", "--cache-dir", str(tmp_path)]) == 0
    [line] = _lines(capsys.readouterr().out)
    assert "(simulation/engine.py)" in line and "neither read nor written" in line
    assert not list(tmp_path.glob("*/*.json"))
    clear_cache()
    assert cli.main(["check", "--workers", "1", "--cache-dir", str(tmp_path), "--json"]) == 0
    off = json.loads(capsys.readouterr().out)["cache"]["off"]
    assert "simulation/engine.py" in off
    clear_cache()


def test_the_cache_note_is_taken_once_per_check(tmp_path, capsys, monkeypatch):
    """Review 11 (diff), F9: `main` called `cache.note()` twice, two snapshots of the sources (a file saved between
    them could print a line the test for it did not see). Once, and its answer is what is printed."""
    calls = []
    real = result_cache.ResultCache.note

    def counted(self):
        calls.append(1)
        return real(self)

    monkeypatch.setattr(result_cache.ResultCache, "note", counted)
    monkeypatch.setattr(result_cache, "_CHANGED", "simulation/engine.py")   # a note to print
    clear_cache()
    assert cli.main(["check", "--workers", "1", "--cache-dir", str(tmp_path)]) == 0
    [line] = _lines(capsys.readouterr().out)
    assert "(simulation/engine.py)" in line
    assert len(calls) == 1
    clear_cache()
