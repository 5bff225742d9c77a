"""Workers on another simulator version: each result comes back with the worker's simulator fingerprint, and the
caller refuses one that is not its own before it uses or caches it (a Dask or Ray cluster that runs another
checkout gives another verdict, and its reports would be cached under the caller's fingerprint)."""

from __future__ import annotations

import json
from contextlib import contextmanager
from unittest import mock

import pytest

from simulation import replicate, result_cache
from simulation.executor_protocol import Later, SerialExecutor
from simulation.replicate import SimulatorMismatch, clear_cache, replication_seeds, run_replications
from simulation.result_cache import ResultCache, simulator_fingerprint
from small_scenario import simple_service

SCENARIO = simple_service("worker-version-mm1", "mm1", 1, 1.0, 0.5, 120)
OTHER = "0123456789abcdef" * 4


@contextmanager
def _another_version():
    """This process as a worker of another simulator version: another fingerprint, and other results (other
    random streams, as after the edit to the simulator's stream ids that the review reproduced)."""
    real = replicate._load

    def load(mapping, base_dir):
        run = real(mapping, base_dir)
        return lambda seed: run(seed + 1)

    with mock.patch.object(result_cache, "simulator_fingerprint", lambda root=None: OTHER), \
            mock.patch.object(replicate, "_load", load), mock.patch.dict(replicate._CACHE, clear=True):
        yield


class OtherVersionCluster(SerialExecutor):
    """A fake `--dask` cluster whose workers run another simulator version (the jobs run when asked for)."""

    name = "dask"

    def __init__(self, mixed: bool = False) -> None:
        self.mixed = mixed   # only every other worker on the other version

    def submit(self, fn, items):
        items = list(items)

        def run():
            out = []
            for i, item in enumerate(items):
                if self.mixed and i % 2:
                    out.append(fn(item))
                else:
                    with _another_version():
                        out.append(fn(item))
            return out
        return Later(run)


def _local(cache=None):
    clear_cache()
    return run_replications([SCENARIO], replication_seeds(1, 4), SerialExecutor(), cache=cache)[0]


@pytest.mark.parametrize("mixed", [False, True], ids=["all-workers", "one-worker-of-two"])
def test_reports_from_another_simulator_are_refused_and_never_cached(tmp_path, mixed):
    cache = ResultCache(tmp_path)
    clear_cache()
    with pytest.raises(SimulatorMismatch) as err:
        run_replications([SCENARIO], replication_seeds(1, 4), OtherVersionCluster(mixed), cache=cache)
    message = str(err.value)
    assert f"--dask: got '{OTHER}'" in message and f"fingerprint {simulator_fingerprint()}" in message
    assert "Install the same version of this project and the same Python, SimPy and NumPy on the workers" in message
    assert ("2 of 4" if mixed else "4 of 4") + " replications came back from a simulator with another" in message
    assert list(tmp_path.glob("*/*.json")) == []   # nothing stored under this process's fingerprint
    # A later local run with the same cache simulates (nothing foreign served) and gets this code's results.
    later = ResultCache(tmp_path)
    assert json.dumps(_local(later), sort_keys=True) == json.dumps(_local(), sort_keys=True)
    assert later.hits == 0


def test_the_fake_cluster_does_give_other_results():
    """Control: what the refusal keeps out differs from this simulator's results."""
    clear_cache()
    with _another_version():
        foreign = run_replications([SCENARIO], replication_seeds(1, 4))[0]
    assert foreign != _local()


def test_same_version_workers_are_accepted_and_reports_carry_no_fingerprint(tmp_path):
    cache = ResultCache(tmp_path)
    reports = _local(cache)
    assert all(simulator_fingerprint() not in json.dumps(r) and "fingerprint" not in r for r in reports)
    entries = [json.loads(p.read_text()) for p in tmp_path.glob("*/*.json")]
    assert len(entries) == 4 and all(set(e) == {"key", "fingerprint", "digest", "report"} for e in entries)
    assert sorted(json.dumps(e["report"], sort_keys=True) for e in entries) == \
        sorted(json.dumps(r, sort_keys=True) for r in reports)


def test_preflight_check_on_such_a_cluster_exits_2_naming_both_fingerprints(monkeypatch, capsys, tmp_path):
    from preflight import check as cli

    monkeypatch.setattr(cli, "make_executor", lambda dask, ray, workers: OtherVersionCluster())
    clear_cache()
    with pytest.raises(SystemExit) as exit_:
        cli.main(["check", "--stack", "dev", "--cache-dir", str(tmp_path), "--dask", "tcp://elsewhere:8786"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"--dask: got '{OTHER}'" in err and simulator_fingerprint() in err and "Traceback" not in err
    assert list(tmp_path.glob("*/*.json")) == []
