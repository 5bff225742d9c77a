"""`python -m preflight calibrate` (called here as `python -m simulation calibrate`, the same command) on files and
flags a user can get wrong: every malformed `vllm bench serve` field, a vLLM log with no KV cache, figures out of
range, --tp/--gpu-memory-utilization with --stack — each an exit status 2 naming the file or flag, the value and
what is allowed; and nothing the stack loader would refuse is ever printed as an engineProfile or written with
--write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from simulation.__main__ import main

FIX = Path(__file__).parent / "fixtures" / "vllm"
BENCH = FIX / "bench-llama3.1-8b-l40s-c1.json"
LOG = FIX / "llama3.1-8b-l40s-v1.log"
MODEL = ["--model", "llama-3.1-8b", "--gpu", "L40S"]


def _exit_2(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "internal error" not in err and "Traceback" not in err
    return err


def _bench(edit) -> str:
    data = json.loads(BENCH.read_text())
    edit(data)
    return json.dumps(data)


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


def _each(key, value):
    return lambda d: d.__setitem__(key, [value] * len(d[key]))


BAD_BENCH = {  # name → (file text, what the message names)
    "itls of strings": (_bench(_each("itls", ["a", "b"])), "itls[0]: got ['a', 'b']"),
    "itls nested": (_bench(_each("itls", [[1]])), "itls[0]: got [[1]]"),
    "itls scalars": (_bench(_each("itls", 0.03)), "itls[0]: got 0.03; expected a list"),
    "itls infinite": (_bench(_each("itls", [float("inf")])), "itls[0]: got [inf]"),
    "itls negative": (_bench(_each("itls", [-5.0])), "itls[0]: got [-5.0]"),
    "itls all zero": (_bench(_each("itls", [0.0, 0.0])), "itls[0]: got [0.0, 0.0]; expected inter-token latencies "
                                                         "with a mean of at least"),
    "output_lens strings": (_bench(_each("output_lens", "x")), "output_lens[0]: got 'x'"),
    "output_lens negative": (_bench(_each("output_lens", -1000000)), "output_lens[0]: got -1000000"),
    "errors a number": (_bench(_set("errors", 5)), "errors: got 5; expected a list"),
    "errors not strings": (_bench(_each("errors", 5)), "errors[0]: got 5"),
    "duration a string": (_bench(lambda d: (d.pop("request_throughput"), d.__setitem__("duration", "x"))),
                          "duration: got 'x'"),
    "max_concurrency a string": (_bench(_set("max_concurrency", "x")), "max_concurrency: got 'x'"),
    "max_concurrency 0": (_bench(_set("max_concurrency", 0)), "max_concurrency: got 0"),
    "request_throughput a list": (_bench(_set("request_throughput", [1])), "request_throughput: got [1]"),
    "request_throughput infinite": (_bench(_set("request_throughput", float("inf"))),
                                    "request_throughput: got inf"),
    "request_throughput negative": (_bench(_set("request_throughput", -1.0)), "request_throughput: got -1.0"),
    "request_rate NaN": (_bench(_set("request_rate", float("nan"))), "request_rate: got nan"),
    "input_lens huge": (_bench(_each("input_lens", 10 ** 400)), "input_lens[0]: got 1000000"),
    "input_lens float": (_bench(_each("input_lens", 12.5)), "input_lens[0]: got 12.5"),
    "ttfts huge": (_bench(_each("ttfts", 1e308)), "ttfts[0]: got 1e+308"),
    "ttfts tiny": (_bench(_each("ttfts", 1e-300)), "ttfts[0]: got 1e-300"),
    "ttfts negative": (_bench(_each("ttfts", -0.1)), "ttfts[0]: got -0.1"),
    "lists of different lengths": (_bench(lambda d: d["itls"].pop()), "itls: got 39 entries; expected one per "
                                                                      "request, as ttfts has (40)"),
    "nested too deeply": ("[" * 100_000, "JSON nested too deeply"),
}


@pytest.mark.parametrize("name", sorted(BAD_BENCH))
def test_a_malformed_bench_result_exits_2_naming_the_field(name, tmp_path, capsys):
    text, expected = BAD_BENCH[name]
    path = tmp_path / "bench.json"
    path.write_text(text)
    err = _exit_2(["bench", str(path), *MODEL], capsys)
    assert f"FILE: got '{path}'" in err and expected in err


def test_failed_requests_are_left_out_not_refused(tmp_path, capsys):
    def fail_two(d):  # vLLM's failed requests: an error, TTFT 0, no tokens
        for i in (0, 1):
            d["errors"] = d.get("errors") or [""] * len(d["ttfts"])
            d["errors"][i], d["ttfts"][i], d["itls"][i], d["output_lens"][i] = "timeout", 0.0, [], 0

    path = tmp_path / "bench.json"
    path.write_text(_bench(fail_two))
    assert main(["calibrate", "bench", str(path), *MODEL]) == 0
    assert "38 requests" in capsys.readouterr().out


BAD_LOGS = {
    "GPU KV cache size: 0 tokens": "'GPU KV cache size: 0 tokens': got 0",
    "# GPU blocks: 0": "'# GPU blocks: 0': got 0",
    "Available KV cache memory: 0 GiB": "'Available KV cache memory: 0 GiB': got 0",
    "GPU KV cache size: 99999999999999999999999999999999999999 tokens": "got 1e+38",
    "GPU KV cache size: 10,000,000,000 tokens": "the log's KV cache, 10,000,000,000 tokens, is 1,220,703.1 GiB per GPU",
    "Available KV cache memory: 0.00001 GiB": "less than one block",
    "GPU KV cache size: 1000 tokens\ntensor_parallel_size=1000": "'tensor_parallel_size=1000': got 1000; "
                                                                 "expected 1..16",
    "GPU KV cache size: 1000 tokens\nmax_num_seqs=0": "'max_num_seqs=0': got 0; expected 1..1,000,000",
    "gpu_memory_utilization (1.5)\nGPU KV cache size: 1000 tokens": "'gpu_memory_utilization (1.5)': got 1.5",
}


@pytest.mark.parametrize("text", sorted(BAD_LOGS))
def test_a_log_with_no_usable_kv_cache_or_impossible_figures_exits_2(text, tmp_path, capsys):
    path = tmp_path / "vllm.log"
    path.write_text(f"INFO {text}\n")
    err = _exit_2(["vllm-log", str(path), *MODEL], capsys)
    assert f"FILE: got '{path}'" in err and BAD_LOGS[text] in err
    if ": 0 " in text or text.endswith(": 0"):
        assert "nothing to calibrate" in err


@pytest.mark.parametrize("flags, expected", [
    (["--tp", "-3"], "--tp: got -3; expected 1..16"),
    (["--tp", "0"], "--tp: got 0; expected 1..16"),
    (["--gpu-memory-utilization", "nan"], "--gpu-memory-utilization: got nan; expected 0.05..1.0"),
    (["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization: got 1.5; expected 0.05..1.0"),
])
@pytest.mark.parametrize("source", ["vllm-log", "bench"])
def test_tp_and_utilization_are_checked_with_stack_too(flags, expected, source, monkeypatch, capsys):
    import stackconfig.stackfile as stackfile

    monkeypatch.setattr(stackfile, "write_engine_profile", lambda *a, **k: pytest.fail("wrote the stack file"))
    path = LOG if source == "vllm-log" else BENCH
    err = _exit_2([source, str(path), "--stack", "dev", "--service", "chat", "--write", *flags], capsys)
    assert expected in err


def test_figures_the_stack_would_refuse_are_never_printed_or_written(tmp_path, monkeypatch, capsys):
    import stackconfig.stackfile as stackfile

    monkeypatch.setattr(stackfile, "write_engine_profile", lambda *a, **k: pytest.fail("wrote the stack file"))
    path = tmp_path / "slow.json"   # an ITL of 20 minutes: a memory efficiency below the loader's 0.001
    path.write_text(_bench(_each("itls", [1200.0, 1200.0])))
    err = _exit_2(["bench", str(path), "--stack", "dev", "--service", "chat", "--write"], capsys)
    assert "engineProfile.memoryEfficiency: got" in err and "expected a number between 0.001 and 1.0" in err
    assert "engineProfile:" not in capsys.readouterr().out
    # a triton service has no engineProfile keys a vLLM log gives; its vision model has no KV cache to calibrate
    err = _exit_2(["vllm-log", str(LOG), "--stack", "staging", "--service", "vision", "--write"], capsys)
    assert "vit-large-16 is a vision model" in err and "nothing is calibrated or written" in err


def test_good_flags_with_stack_still_calibrate(tmp_path, capsys):
    # dev's chat serves Llama-3-8B (8,192-token context) on an L40S: the L40S log of Llama-3.1-8B, the same shape,
    # at that context (the log itself, at 32,768, is refused for it: tests/simulation/test_calibrate_mismatch.py)
    log = tmp_path / "llama3-8b-l40s.log"
    log.write_text(LOG.read_text().replace("32,768 tokens per request", "8,192 tokens per request"))
    assert main(["calibrate", "vllm-log", str(log), "--stack", "dev", "--service", "chat", "--tp", "1",
                 "--gpu-memory-utilization", "0.9"]) == 0
    profile = yaml.safe_load(capsys.readouterr().out)["engineProfile"]
    assert set(profile) == {"activationGib", "nonTorchGib"} and all(v >= 0 for v in profile.values())
