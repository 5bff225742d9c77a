"""`--dask`, `--ray`, `--workers`, `--cache-dir`/`--no-cache`, repeated `--set` and `tune --price` mistakes: each
an exit status 2 naming the flag, the value and what is allowed, before any work starts — never "internal error"
(exit 3) and never a wait without end (review rev9-cli findings 2, 6, 9)."""

from __future__ import annotations

import http.server
import sys
import threading
import time
from pathlib import Path

import pytest

from preflight import check as cli
from preflight import whatif
from preflight.overrides import stack_values
from simulation import cluster_executors, executors
from simulation.cluster_executors import dask_address_problem, ray_address_problem
from simulation.executors import make_executor
from validation.errors import InputError
from tests.gate.cli_refusal import exit_2, refuse_work
from validation.paths import check_output_dir

COMMANDS = [["check"], ["whatif"], ["tune", "--stack", "dev", "--service", "chat"]]


@pytest.fixture
def no_gate(monkeypatch):
    refuse_work(monkeypatch, "compare")  # duplicate --set is refused in whatif.sides


_exit_2 = exit_2


# --- --dask and --ray addresses ---------------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("address, why", [
    ("notaurl", "no port (HOST:PORT)"),
    ("http://scheduler:8786", "http:// is the dashboard's address"),
    ("tcp://scheduler", "no port"),
    ("tcp://scheduler:99999", "port '99999' is not an integer between 1 and 65535"),
    ("tcp://scheduler:٨٧٨٦", "is not an integer between 1 and 65535"),  # Arabic-Indic 8786: not a port
    ("inproc://10.0.0.1/1/1", "reaches a scheduler in the same process only"),
    ("", "no port"),  # given, so not the local pool in silence
])
def test_a_malformed_dask_address_is_refused_naming_the_flag(command, address, why, no_gate, capsys):
    err = _exit_2([*command, "--dask", address], capsys)
    assert f"--dask: got {address!r}; expected 'local' or the scheduler's address [SCHEME://]HOST:PORT" in err
    assert why in err


@pytest.mark.parametrize("address", ["local", "scheduler:8786", "tcp://10.1.2.3:8786", "tls://scheduler:8786",
                                     "ws://scheduler:8786", "tcp://[::1]:8786", "ucx://gpu-node:13337"])
def test_the_address_forms_distributed_connects_to_are_accepted(address):
    assert dask_address_problem(address) is None


@pytest.mark.parametrize("address", ["auto", "local", "10.0.0.1:6379", "ray://head:10001"])
def test_the_address_forms_ray_init_takes_are_accepted(address):
    assert ray_address_problem(address) is None


@pytest.mark.parametrize("address", ["http://head:8265", "head", "ray://head"])
def test_a_malformed_ray_address_is_refused_before_ray_is_imported(address, monkeypatch, no_gate, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # an import would fail: the form is checked first
    err = _exit_2(["check", "--ray", address], capsys)
    assert f"--ray: got {address!r}; expected 'auto' (the cluster this machine belongs to)" in err


def test_ray_not_installed_is_a_clean_refusal(monkeypatch, no_gate, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)
    err = _exit_2(["whatif", "--ray", "auto"], capsys)
    assert "--ray: got 'auto'; install ray (pip install -r requirements-extras.txt)" in err


def test_a_failing_ray_init_of_any_kind_names_the_flag(monkeypatch, no_gate, capsys):
    class FakeRay:
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kwargs):
            raise ValueError("Could not find any running Ray instance")

    monkeypatch.setitem(sys.modules, "ray", FakeRay)
    err = _exit_2(["check", "--ray", "ray://head:10001"], capsys)
    assert ("--ray: got 'ray://head:10001'; expected a reachable Ray cluster "
            "(Could not find any running Ray instance)") in err


@pytest.mark.parametrize("error", [ValueError("unknown address scheme 'gopher'"),
                                   MemoryError("Unable to allocate 3.07 EiB"), TypeError("odd")])
def test_whatever_the_dask_client_raises_is_an_input_error_naming_the_flag(error, monkeypatch, no_gate, capsys):
    """A stray address may answer anything (a MemoryError from a garbage frame length was seen)."""
    pytest.importorskip("dask.distributed")
    import dask.distributed

    def client(*args, **kwargs):
        raise error
    monkeypatch.setattr(dask.distributed, "Client", client)
    err = _exit_2(["check", "--dask", "tcp://10.9.9.9:8787"], capsys)
    assert f"--dask: got 'tcp://10.9.9.9:8787'; expected a reachable Dask scheduler ({type(error).__name__}" in err
    assert "The scheduler listens on 8786 by default" in err


class _Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def http_port():
    """A real HTTP server on a local port (what the Dask dashboard, 8787, is)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_dask_address_that_speaks_http_fails_fast_naming_the_scheduler_port(http_port, monkeypatch, no_gate,
                                                                               capsys):
    """Pointed at an HTTP port, distributed's client connects and then waits for a handshake that never comes:
    the command ends within DASK_CONNECT_S + 2 s with exit status 2 (it used to wait until killed)."""
    pytest.importorskip("dask.distributed")
    monkeypatch.setattr(cluster_executors, "DASK_CONNECT_S", 1.0)
    address = f"tcp://127.0.0.1:{http_port}"
    box: dict = {}

    def run() -> None:
        try:
            cli.main(["check", "--dask", address])
        except SystemExit as exc:
            box["code"] = exc.code
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc
    thread = threading.Thread(target=run, daemon=True)
    started = time.monotonic()
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "--dask at an HTTP port still waiting after 30 s"
    err = capsys.readouterr().err
    assert box.get("code") == 2, (box, err)
    assert time.monotonic() - started < 15
    assert f"--dask: got {address!r}; expected a Dask scheduler there; something accepted the connection" in err
    assert "The scheduler listens on 8786 by default, its dashboard (HTTP) on 8787" in err


# --- contradictory flags ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("cluster", [["--dask", "local"], ["--ray", "auto"]])
def test_workers_with_a_cluster_is_refused_not_ignored(command, cluster, monkeypatch, no_gate, capsys):
    monkeypatch.setattr(executors, "DaskExecutor", lambda address: pytest.fail("a cluster was started"))
    monkeypatch.setattr(executors, "RayExecutor", lambda address: pytest.fail("a cluster was started"))
    err = _exit_2([*command, *cluster, "--workers", "2"], capsys)
    assert f"--workers/{cluster[0]}: got '2 / {cluster[1]}'; one or the other: --workers sizes the local" in err


def test_make_executor_refuses_workers_beside_a_cluster():
    with pytest.raises(InputError, match="--workers/--dask"):
        make_executor(dask="local", workers=2)
    with pytest.raises(InputError, match="--workers/--ray"):
        make_executor(ray="auto", workers=1)


@pytest.mark.parametrize("sets, later, what", [
    (["services.chat.maxReplicas=3", "services.chat.maxReplicas=4"], "services.chat.maxReplicas=4",
     "sets the same key again"),
    (["services.chat.maxReplicas=3", "services.0.maxReplicas=3"], "services.0.maxReplicas=3",
     "sets the same key again"),
    (["services.chat.maxReplicas=3", "kserve-preflight:services.chat.maxReplicas=5"],
     "kserve-preflight:services.chat.maxReplicas=5", "sets the same key again"),
    (['services.chat.annotations["autoscaling.knative.dev/window"]=60s',
      "services.chat.annotations.autoscaling.knative.dev/window=90s"],
     "services.chat.annotations.autoscaling.knative.dev/window=90s", "sets the same key again"),
    (["services.chat.annotations.autoscaling.knative.dev/window=60s", "services.chat.annotations={}"],
     "services.chat.annotations={}", "replaces the whole of it"),
])
def test_two_sets_of_one_key_are_refused_not_last_wins(sets, later, what, no_gate, capsys):
    argv = ["whatif", "--stack", "dev", "--workers", "1"]
    for s in sets:
        argv += ["--set", s]
    err = _exit_2(argv, capsys)
    assert f"--set: got {sets[0]!r}; one value per key; the later --set {later!r} {what}" in err


def test_sets_of_different_keys_or_inside_a_new_value_are_accepted():
    _, values = stack_values("dev")
    whatif.check_distinct_sets(values, ["services.chat.maxReplicas=3", "services.chat.minReplicas=1",
                                        "services.chat.annotations={}", "services.chat.annotations.x=1"])
    before, after = whatif.sides("dev", ["services.chat.maxReplicas=3", "services.chat.minReplicas=1"])
    chat = next(s for s in after.services if s.name == "chat")
    assert (chat.min_replicas, chat.max_replicas) == (1, 3)


@pytest.mark.parametrize("prices, expected", [
    (["g6e.xlarge=1:5"], "--price: got 'g6e.xlarge=1:5'; expected a spot price at most the on-demand price (1)"),
    (["g6e.xlarge=2:0.5", "g6e.xlarge=1.8"], "--price: got 'g6e.xlarge=1.8'; one --price per instance type; "
                                            "g6e.xlarge is already priced by 'g6e.xlarge=2:0.5'"),
])
def test_contradictory_tune_prices_are_refused(prices, expected, no_gate, capsys):
    argv = ["tune", "--stack", "dev", "--service", "chat", "--workers", "1"]
    for p in prices:
        argv += ["--price", p]
    assert expected in _exit_2(argv, capsys)


def test_a_spot_price_equal_to_on_demand_is_accepted():
    from tuner.cli import _prices

    assert _prices(["g6e.xlarge=1.5:1.5"], {"g6e.xlarge"})["g6e.xlarge"].spot == 1.5


# --- --cache-dir ------------------------------------------------------------------------------------------------

def test_no_cache_with_a_cache_dir_is_refused(tmp_path, no_gate, capsys):
    for path in ("/etc/passwd", str(tmp_path)):
        err = _exit_2(["check", "--no-cache", "--cache-dir", path], capsys)
        assert f"--no-cache/--cache-dir: got '--no-cache / {path}'; one or the other" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="Linux /proc and /sys")
@pytest.mark.parametrize("path", ["/proc/x", "/proc/self/fd/cache", "/sys/kernel/kserve-preflight-cache",
                                  "/proc/self"])
def test_a_cache_dir_on_a_pseudo_filesystem_is_refused_even_for_root(path, no_gate, capsys):
    """access() says yes to root everywhere; creating the folder and a file in it is what fails."""
    err = _exit_2(["check", "--cache-dir", path], capsys)
    assert f"--cache-dir: got '{path}'; expected a folder" in err


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="Linux /proc")
def test_the_cache_env_variable_is_probed_as_the_flag_is(monkeypatch, no_gate, capsys):
    monkeypatch.setenv("KSERVE_PREFLIGHT_CACHE_DIR", "/proc/x")
    err = _exit_2(["check"], capsys)
    assert "KSERVE_PREFLIGHT_CACHE_DIR: got '/proc/x'; expected a folder this process can write into" in err


def test_the_write_probe_leaves_nothing_behind(tmp_path):
    assert check_output_dir("--cache-dir", tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "kept").mkdir()
    check_output_dir("--cache-dir", tmp_path / "kept")
    assert list((tmp_path / "kept").iterdir()) == []


def test_a_folder_removed_under_the_probe_by_another_command_is_tried_again(tmp_path, monkeypatch):
    """Two commands probing one new --cache-dir at once: one may remove the folder the other just made."""
    import errno
    import tempfile

    real, calls = tempfile.mkstemp, []

    def mkstemp(*args, **kwargs):
        calls.append(kwargs.get("dir"))
        if len(calls) == 1:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory")
        return real(*args, **kwargs)
    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    assert check_output_dir("--cache-dir", tmp_path / "shared" / "cache") == tmp_path / "shared" / "cache"
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_many_commands_probing_one_new_folder_at_once_are_all_accepted(tmp_path):
    errors: list = []

    def probe() -> None:
        for _ in range(40):
            try:
                check_output_dir("--cache-dir", tmp_path / "shared" / "cache")
            except InputError as err:
                errors.append(err)
    threads = [threading.Thread(target=probe) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
