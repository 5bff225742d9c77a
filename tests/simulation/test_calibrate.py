"""`python -m preflight calibrate` (also `python -m simulation calibrate`): vLLM start-up logs of three formats
reproduced within 1 %, the bench fit recovering known efficiency factors, `--write` into a stack file, and clear errors
(exit 2)."""

import shutil
from pathlib import Path

import pytest
import yaml

from catalog import DEFAULT
from simulation.__main__ import main
from simulation.calibrate.bench import fit_bench, read_bench
from simulation.calibrate.vllm_log import calibrate, parse_vllm_log
from stackconfig.load import ROOT, load_stack
from stackconfig.stackfile import write_engine_profile

FIX = Path(__file__).parent / "fixtures" / "vllm"
LOGS = {  # fixture → (model, GPU, logged KV tokens)
    "llama3-8b-h100-v0.6.5.log": ("llama-3-8b", "H100-80GB", 436_544),  # 53.29 GiB / 128 KiB per token
    "llama2-7b-h100-v0.8.1-lora.log": ("llama-2-7b", "H100-80GB", 7191 * 16),
    "llama3.1-8b-l40s-v1.log": ("llama-3.1-8b", "L40S", 158_656),
}


@pytest.mark.parametrize("name", sorted(LOGS))
def test_each_log_format_is_read_and_its_kv_tokens_reproduced_within_1_percent(name):
    model, gpu, tokens = LOGS[name]
    facts = parse_vllm_log((FIX / name).read_text())
    cal = calibrate(facts, DEFAULT.models[model], DEFAULT.gpus[gpu])
    assert cal.logged_kv_tokens == tokens
    assert abs(cal.calibrated_error) < 0.01
    assert set(cal.engine_profile()) == {"activationGib", "nonTorchGib"}


def test_the_formats_state_what_they_state():
    a = parse_vllm_log((FIX / "llama3-8b-h100-v0.6.5.log").read_text())
    assert (a.total_gib, a.utilization, a.weights_gib, a.non_torch_gib, a.activation_gib, a.kv_gib) == \
        (79.22, 0.90, 14.96, 1.79, 1.26, 53.29)
    b = parse_vllm_log((FIX / "llama2-7b-h100-v0.8.1-lora.log").read_text())
    assert (b.total_gib, b.activation_gib, b.gpu_blocks, b.scheduler) == (79.19, 2.38, 7191, "v0")
    c = parse_vllm_log((FIX / "llama3.1-8b-l40s-v1.log").read_text())
    assert (c.weights_gib, c.kv_tokens, c.concurrency_len, c.scheduler) == (14.9889, 158_656, 32_768, "v1")
    with pytest.raises(ValueError, match="no KV cache size"):
        parse_vllm_log("INFO model weights take 12.55GiB\n")


def test_the_measured_figures_are_the_logged_ones_when_stated():
    facts = parse_vllm_log((FIX / "llama2-7b-h100-v0.8.1-lora.log").read_text())
    cal = calibrate(facts, DEFAULT.models["llama-2-7b"], DEFAULT.gpus["H100-80GB"])
    assert cal.activation_gib == 2.38
    # non-torch 0.16 GiB, plus the logged weights (12.55) over the catalog's (13.48e9 B = 12.554 GiB): rounding
    assert cal.non_torch_gib == pytest.approx(0.16, abs=0.01)
    assert abs(cal.prior_error) < 0.10


def test_bench_fit_recovers_the_factors_the_fixture_was_made_with():
    run = read_bench((FIX / "bench-llama3.1-8b-l40s-c1.json").read_text())
    fit = fit_bench(run, DEFAULT.models["llama-3.1-8b"], DEFAULT.gpus["L40S"])
    assert fit.efficiency.memory == pytest.approx(0.55, rel=0.02)
    assert fit.efficiency.compute == pytest.approx(0.45, rel=0.05)
    assert fit.efficiency.prefill_overhead_s == pytest.approx(0.02, abs=0.005)
    assert fit.mean_batch == 1.0 and fit.tpot_residual < 0.02 and fit.ttft_residual < 0.05
    with pytest.raises(ValueError, match="missing per-request lists"):
        read_bench('{"ttfts": [0.1]}')


def test_cli_prints_a_pastable_engine_profile(capsys):
    assert main(["calibrate", "vllm-log", str(FIX / "llama3-8b-h100-v0.6.5.log"), "--model", "llama-3-8b",
                 "--gpu", "H100-80GB"]) == 0
    out = capsys.readouterr().out
    profile = yaml.safe_load(out)["engineProfile"]
    # the logged 1.79 GiB, plus what the simulation on the catalog's H100 (79.2 GiB, 14.957 GiB of weights) must
    # absorb for its budget to equal the logged one: the log's 14.96 GiB of weights, its 79.22 GiB × 0.90
    folded = (14.96 - DEFAULT.models["llama-3-8b"].weights_gib) + (DEFAULT.gpus["H100-80GB"].cuda_total_bytes / 2**30
                                                                   - 79.22) * 0.90
    assert profile == {"activationGib": 1.26, "nonTorchGib": pytest.approx(1.79 + folded, abs=0.001)}
    assert "priors reproduce" in out and "+2.8%" in out and "folded into non-torch" in out


def test_preflight_and_simulation_run_the_same_calibrate_command(capsys):
    from preflight.check import main as preflight_main

    argv = ["calibrate", "bench", str(FIX / "bench-llama3.1-8b-l40s-c1.json"), "--stack", "dev", "--service", "chat"]
    assert preflight_main(argv) == 0
    out = capsys.readouterr().out
    assert "engineProfile:" in out
    assert main(argv) == 0 and capsys.readouterr().out == out


@pytest.mark.parametrize("argv, key", [
    (["vllm-log", "missing.log", "--model", "llama-3-8b", "--gpu", "H100-80GB"], "FILE"),
    (["vllm-log", str(FIX / "README.md"), "--model", "llama-3-8b", "--gpu", "H100-80GB"], "FILE"),
    (["vllm-log", str(FIX / "llama3-8b-h100-v0.6.5.log"), "--model", "gpt-5", "--gpu", "H100-80GB"], "--model"),
    (["vllm-log", str(FIX / "llama3-8b-h100-v0.6.5.log"), "--model", "llama-3-8b", "--gpu", "H100-80GB",
      "--write"], "--write"),
    (["bench", str(FIX / "llama3-8b-h100-v0.6.5.log"), "--model", "llama-3-8b", "--gpu", "H100-80GB"], "FILE"),
    (["bench", str(FIX / "llama3-8b-h100-v0.6.5.log"), "--stack", "prod", "--service", "nope"], "--service"),
])
def test_bad_input_exits_2_naming_the_argument(argv, key, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", *argv])
    assert exc.value.code == 2
    assert key in capsys.readouterr().err


def test_write_merges_the_profile_into_the_stack_file_keeping_comments(tmp_path):
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    before = (tmp_path / "stacks" / "Pulumi.prod.yaml").read_text()
    path = write_engine_profile("prod", "chat", {"activationGib": 1.26, "nonTorchGib": 1.79}, root=tmp_path)
    after = path.read_text()
    assert after.count("#") == before.count("#")  # comments kept
    cfg = load_stack("prod", root=tmp_path)
    chat = next(s for s in cfg.services if s.name == "chat")
    assert chat.engine_profile == {"activation_gib": 1.26, "overhead_gib": 1.79}


def test_engine_profile_keys_are_checked_at_load(tmp_path):
    from validation.errors import InputError
    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    write_engine_profile("prod", "chat", {"activationGib": -1, "maxNumSeqs": 4}, root=tmp_path)
    with pytest.raises(InputError) as exc:
        load_stack("prod", root=tmp_path)
    text = str(exc.value)
    assert "engineProfile" in text and "activationGib" in text and "maxNumSeqs" in text


def test_the_gate_simulates_the_measured_engine():
    import gate
    cfg = load_stack("prod")
    chat = next(s for s in cfg.services if s.name == "chat")
    measured = type(chat)(**{**chat.__dict__, "engine_profile": {"activation_gib": 9.0, "overhead_gib": 2.0}})
    assert gate.scenario_for(cfg, measured)["server"]["activation_gib"] == 9.0
    assert ("server" not in gate.scenario_for(cfg, chat)
            or "activation_gib" not in gate.scenario_for(cfg, chat)["server"])



@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_write_touches_only_the_engine_profile_lines(stack, tmp_path):
    """`calibrate --write` once re-wrapped and re-indented the whole file (a 91-line diff for a 3-line change):
    it dumps in the stack files' own style (stackconfig/roundtrip.py, shared with the tuner's diff)."""
    import difflib

    shutil.copy(ROOT / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(ROOT / "stacks", tmp_path / "stacks")
    before = (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").read_text()
    service = load_stack(stack, root=tmp_path).services[0].name
    after = write_engine_profile(stack, service, {"activationGib": 1.26, "nonTorchGib": 1.79},
                                 root=tmp_path).read_text()
    changed = [line for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
               if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    assert changed and all(line.startswith("+") for line in changed), changed
    assert [line.strip() for line in changed] == ["+engineProfile:", "+activationGib: 1.26", "+nonTorchGib: 1.79"] \
        or all("engineProfile" in line or "Gib" in line for line in changed), changed
