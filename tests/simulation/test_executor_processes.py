"""How the local pool starts its workers: forked, beside live gRPC channels as under `pulumi up`, and the
program's `__main__.py` never re-run by a worker.

`pulumi up` runs the program after `pulumi.runtime.configure` has opened gRPC channels to the engine and the
resource monitor (sdk/python/cmd/pulumi-language-python-exec), so `program.run_gate` forks its worker processes
from a process with gRPC's threads running. gRPC's fork handlers (fork_posix.cc) pause them around fork(), or are
skipped while another thread is inside a call; the workers never touch gRPC. This runs the fork in the harder
case (two threads calling an in-process echo server throughout) in a child interpreter with a deadline, so a hang
fails the test instead of the suite, and checks the results equal the serial ones.
"""

from __future__ import annotations

import multiprocessing
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from simulation.executors import LocalExecutor

ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import json, sys, threading
    from concurrent import futures
    import grpc
    sys.path.insert(0, sys.argv[1])
    from simulation.executor_protocol import SerialExecutor
    from simulation.executors import LocalExecutor
    from simulation.replicate import clear_cache, run_replications
    from tests.simulation.test_replicate import SCENARIO

    handler = grpc.method_handlers_generic_handler(
        "t.Echo", {"Echo": grpc.unary_unary_rpc_method_handler(lambda req, ctx: req)})
    server = grpc.server(futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    echo = grpc.insecure_channel(f"127.0.0.1:{port}").unary_unary("/t.Echo/Echo")
    stop = threading.Event()
    calls = [0, 0]

    def ping(i):
        while not stop.is_set():
            echo(b"x")
            calls[i] += 1

    pingers = [threading.Thread(target=ping, args=(i,), daemon=True) for i in range(2)]
    for t in pingers:
        t.start()
    try:
        while min(calls) < 10:          # both threads are inside gRPC calls before the first fork
            pass
        seeds = [11, 12, 13, 14]
        pool = LocalExecutor(2)
        forked = run_replications([SCENARIO], seeds, pool)
        pool.close()
        clear_cache()
        serial = run_replications([SCENARIO], seeds, SerialExecutor())
    finally:
        stop.set()
    for t in pingers:
        t.join()
    server.stop(0)
    print(json.dumps({"same": forked == serial, "replications": len(forked[0]), "calls": sum(calls)}))
""")


def test_forked_workers_beside_live_grpc_threads_finish_with_the_serial_results():
    pytest.importorskip("grpc", reason="grpcio (a pulumi dependency) not installed")
    out = subprocess.run([sys.executable, "-c", CHILD, str(ROOT)], cwd=ROOT, capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    result = __import__("json").loads(out.stdout.strip().splitlines()[-1])
    assert result["same"] is True and result["replications"] == 4
    assert result["calls"] > 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="workers are forked on Linux only")
def test_the_pool_forks_whatever_the_default_start_method(monkeypatch):
    real = multiprocessing.get_context
    monkeypatch.setattr(multiprocessing, "get_context", lambda method=None: real(method or "forkserver"))
    assert multiprocessing.get_context().get_start_method() == "forkserver"   # Python 3.14's default
    pool = LocalExecutor(2)
    try:
        assert pool.map(abs, [-1, -2, -3]) == [1, 2, 3]
        assert pool._pool._mp_context.get_start_method() == "fork"
    finally:
        pool.close()


def test_a_worker_importing_the_main_file_does_not_run_the_program(monkeypatch):
    import program

    calls = []
    monkeypatch.setattr(program, "main", lambda: calls.append("ran"))
    runpy.run_path(str(ROOT / "__main__.py"), run_name="__mp_main__")   # what spawn/forkserver workers do
    assert calls == []
    runpy.run_path(str(ROOT / "__main__.py"), run_name="__main__")      # what Pulumi's language host does
    assert calls == ["ran"]
