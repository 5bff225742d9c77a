"""`calibrate vllm-log` refuses a log of another model, GPU or tensor parallelism than the target's, and a profile
that does not reproduce the log (exit status 2, nothing printed as an engineProfile, nothing written): the CLI
reviewer's cases (coord rev9-cli finding 1) and small synthetic logs in vLLM's own line formats.

Before, the log's total replaced the service GPU's before the "KV cache larger than the GPU" check, the derived
figures were printed and written however far they were from the log (+284 %), and --model/--gpu next to
--stack/--service were ignored without a word."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from catalog import DEFAULT, GIB
from simulation.__main__ import main
from simulation.calibrate.vllm_log import (GPU_TOTAL_TOLERANCE_GIB, REPRODUCE_TOLERANCE, LogMismatch, calibrate,
                                           parse_vllm_log)
from simulation.gpu.memory import kv_bytes_per_token, vllm_budget

FIX = Path(__file__).parent / "fixtures" / "vllm"
LLAMA2_H100 = FIX / "llama2-7b-h100-v0.8.1-lora.log"   # Llama-2-7B on an H100, total 79.19 GiB
LLAMA3_H100 = FIX / "llama3-8b-h100-v0.6.5.log"        # Llama-3-8B on an H100, total 79.22 GiB
LLAMA31_L40S = FIX / "llama3.1-8b-l40s-v1.log"         # Llama-3.1-8B on an L40S, max_model_len 32,768
DEV_CHAT = ["--stack", "dev", "--service", "chat"]     # Llama-3-8B (8,192-token context) on an L40S, 1 GPU
L40S_TOTAL = DEFAULT.gpus["L40S"].cuda_total_bytes / GIB


def _v0_log(total: float, weights: float, non_torch: float, act: float, per_token: int, *, util: float = 0.90,
            kv_gib: float | None = None, blocks: bool = True, extra: str = "") -> str:
    """vLLM 0.8's one-line memory profile as it prints it: GiB to two decimals, the blocks floored (16 tokens)."""
    kv = total * util - weights - non_torch - act if kv_gib is None else kv_gib
    lines = [f"INFO 03-21 20:15:45 [worker.py:267] the current vLLM instance can use total_gpu_memory ({total:.2f}GiB)"
             f" x gpu_memory_utilization ({util:.2f}) = {total * util:.2f}GiB",
             f"INFO 03-21 20:15:45 [worker.py:267] model weights take {weights:.2f}GiB; non_torch_memory takes "
             f"{non_torch:.2f}GiB; PyTorch activation peak memory takes {act:.2f}GiB; the rest of the memory "
             f"reserved for KV Cache is {kv:.2f}GiB."]
    if blocks:
        lines.append(f"INFO 03-21 20:15:46 [executor_base.py:111] # cuda blocks: {int(kv * GIB // (16 * per_token))}, "
                     "# CPU blocks: 2048")
    return "\n".join(lines + ([extra] if extra else [])) + "\n"


LLAMA3 = DEFAULT.models["llama-3-8b"]
LLAMA3_WEIGHTS = LLAMA3.weights_bytes / GIB
LLAMA3_KV = kv_bytes_per_token(LLAMA3)


def _refused(argv, capsys, monkeypatch) -> str:
    """Exit status 2, no engineProfile on stdout, the stack file never written."""
    import stackconfig.stackfile as stackfile

    monkeypatch.setattr(stackfile, "write_engine_profile", lambda *a, **k: pytest.fail("wrote the stack file"))
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", "vllm-log", *argv])
    out, err = capsys.readouterr()
    assert exc.value.code == 2, err
    assert "engineProfile" not in out and "Traceback" not in err and "internal error" not in err
    return err


# -- the reviewer's cases ------------------------------------------------------------------------------------

def test_llama2_h100_log_against_the_l40s_llama3_service_is_refused_and_not_written(capsys, monkeypatch):
    """It printed 'calibrated reproduce 441,824 tokens (+284.01%)', exited 0 and --write wrote nonTorchGib 0.0."""
    err = _refused([str(LLAMA2_H100), *DEV_CHAT, "--write"], capsys, monkeypatch)
    assert "against llama-3-8b on L40S at tensor parallel 1, service chat of stack dev" in err
    assert "nothing is calibrated or written" in err
    # each contradiction: what the log states, what the service runs, and what fits
    assert f"total_gpu_memory 79.19 GiB; expected L40S's CUDA total, {L40S_TOTAL:.2f} GiB" in err
    assert "H100-80GB" in err and "catalog.gpus.L40S.cudaTotalGib" in err
    assert f"weights take 12.55 GiB per GPU; expected llama-3-8b's {LLAMA3_WEIGHTS:.2f} GiB" in err
    assert "it fits the catalog's llama-2-7b" in err
    assert f"115,056 tokens in 56.18 GiB, 512 KiB per token; expected llama-3-8b's {LLAMA3_KV // 1024} KiB" in err


def test_llama3_h100_log_against_the_l40s_service_is_refused_for_its_gpu(capsys, monkeypatch):
    """79.22 GiB: 436k KV tokens, 53 GiB, more than an L40S has, were 'calibrated' because the log's total
    replaced the L40S's before the check that was to refuse it."""
    err = _refused([str(LLAMA3_H100), *DEV_CHAT], capsys, monkeypatch)
    assert f"total_gpu_memory 79.22 GiB; expected L40S's CUDA total, {L40S_TOTAL:.2f} GiB" in err
    assert "a log of another GPU (it fits the catalog's A100-80GB, H100-80GB)" in err
    assert "1 problem" in err  # the same model: nothing else contradicts


def test_the_same_log_still_calibrates_for_its_own_model_and_gpu(capsys):
    assert main(["calibrate", "vllm-log", str(LLAMA3_H100), "--model", "llama-3-8b", "--gpu", "H100-80GB"]) == 0
    assert set(yaml.safe_load(capsys.readouterr().out)["engineProfile"]) == {"activationGib", "nonTorchGib"}


@pytest.mark.parametrize("flags, named", [
    (["--model", "llama-2-7b", "--gpu", "H100-80GB"], ["--model: got 'llama-2-7b'", "--gpu: got 'H100-80GB'"]),
    (["--model", "llama-3-8b"], ["--model: got 'llama-3-8b'; expected no --model with --stack/--service"]),
    (["--gpu", "l40s"], ["--gpu: got 'l40s'; expected no --gpu with --stack/--service"]),
    (["--tp", "2"], ["--tp: got 2; expected 1, the tensor parallelism of service chat"]),
])
@pytest.mark.parametrize("source", ["vllm-log", "bench"])
def test_model_gpu_or_another_tp_with_stack_and_service_are_refused(flags, named, source, capsys, monkeypatch):
    """They were ignored without a word: the file was calibrated for the service's model and GPU."""
    import stackconfig.stackfile as stackfile

    monkeypatch.setattr(stackfile, "write_engine_profile", lambda *a, **k: pytest.fail("wrote the stack file"))
    path = FIX / ("bench-llama3.1-8b-l40s-c1.json" if source == "bench" else "llama3.1-8b-l40s-v1.log")
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", source, str(path), *DEV_CHAT, "--write", *flags])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and all(n in err for n in named), err


# -- the log's GPU ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("total", [44.31, 44.39, L40S_TOTAL + 0.1, L40S_TOTAL - 0.9 * GPU_TOTAL_TOLERANCE_GIB])
def test_an_l40s_total_as_cuda_reports_it_is_accepted_and_reproduced_on_the_catalog_l40s(total):
    """A real L40S reports ~44.3-44.4 GiB (nvidia-smi 44.99 less the driver's reservation), not the catalog's
    CUDA total to the MiB: within the tolerance it is the same board, and the difference is folded into non-torch
    so that the simulation on the catalog's L40S gets the logged KV cache (before, the figures were the log's and
    the simulation got the catalog's total: 0.2 GiB, ~1,700 tokens more than logged at 44.31)."""
    facts = parse_vllm_log(_v0_log(total, 14.96, 0.16, 1.26, LLAMA3_KV))
    cal = calibrate(facts, LLAMA3, DEFAULT.gpus["L40S"])
    simulated = vllm_budget(DEFAULT.gpus["L40S"], LLAMA3, gpu_memory_utilization=0.90, max_model_len=8192,
                            activation_gib=cal.activation_gib, overhead_gib=cal.non_torch_gib)
    assert abs(simulated.kv_tokens - cal.logged_kv_tokens) <= 2 * 16  # the log's rounding to 0.01 GiB: a block
    assert abs(cal.calibrated_error) < 0.001


@pytest.mark.parametrize("total, why", [
    (47.4, "ECC off: an L40S's 48 GiB without the 1/16 ECC takes"),
    (DEFAULT.gpus["L40S"].memory_gib + 0.1, "more than the board has (nvidia-smi's total)"),
    (L40S_TOTAL - 1.1 * GPU_TOTAL_TOLERANCE_GIB, "just past the tolerance"),
    (39.4, "an A100-40GB"),
])
def test_a_total_beyond_the_tolerance_is_another_gpu(total, why):
    facts = parse_vllm_log(_v0_log(total, 14.96, 0.16, 1.26, LLAMA3_KV))
    with pytest.raises(LogMismatch) as exc:
        calibrate(facts, LLAMA3, DEFAULT.gpus["L40S"])
    assert len(exc.value.contradictions) == 1, why
    assert f"total_gpu_memory {float(f'{total:.2f}'):g} GiB; expected L40S's CUDA total" in str(exc.value), why
    assert "catalog.gpus.L40S.cudaTotalGib" in str(exc.value)


def test_a_total_above_the_catalogs_that_no_profile_reproduces_names_the_catalog_entry():
    """nvidia-smi's full 22.49 GiB of an L4 as CUDA's total: the board, but 0.45 GiB above the catalog's CUDA
    total, more than the log's 0.16 GiB of non-torch memory can absorb (6 % of a 3.9 GiB KV cache): refused,
    naming the entry that describes the board."""
    total = DEFAULT.gpus["L4"].memory_gib
    facts = parse_vllm_log(_v0_log(total, 14.96, 0.16, 1.26, LLAMA3_KV))
    with pytest.raises(LogMismatch, match=f"set catalog.gpus.L4.cudaTotalGib: {total:g}"):
        calibrate(facts, LLAMA3, DEFAULT.gpus["L4"])


def test_a_stack_that_declares_its_gpus_total_takes_that_log():
    """The remedy the messages name: the stack's catalog entry for the board as it reports itself."""
    from dataclasses import replace

    l40s_ecc_off = replace(DEFAULT.gpus["L40S"], memory_gib=47.99, cuda_total_gib=47.4)
    facts = parse_vllm_log(_v0_log(47.4, 14.96, 0.16, 1.26, LLAMA3_KV))
    assert abs(calibrate(facts, LLAMA3, l40s_ecc_off).calibrated_error) < 0.001


# -- the log's model -------------------------------------------------------------------------------------

def test_a_max_model_len_above_the_models_context_is_another_model(capsys, monkeypatch):
    """vllm#17122's Llama-3.1-8B log (max_model_len 32,768) against dev's Llama-3-8B (8,192): vLLM refuses a
    max_model_len above max_position_embeddings, so it cannot be this model's log."""
    err = _refused([str(LLAMA31_L40S), *DEV_CHAT], capsys, monkeypatch)
    assert "max_model_len is 32,768 tokens; expected at most llama-3-8b's context, 8,192 tokens" in err
    assert "it fits the catalog's llama-3.1-8b" in err and "catalog.models.llama-3-8b.maxContext" in err
    # the same log for its own model
    assert main(["calibrate", "vllm-log", str(LLAMA31_L40S), "--model", "llama-3.1-8b", "--gpu", "L40S"]) == 0


@pytest.mark.parametrize("line, expected", [
    ("INFO 12-13 19:54:10 llm_engine.py:249] Initializing an LLM engine (v0.6.5) with config: "
     "model='meta-llama/Meta-Llama-3-8B', max_seq_len=32768, download_dir=None, tensor_parallel_size=1", 32768),
    ("INFO 05-01 10:00:00 [cli_args.py:300] non-default args: {'model': '/mnt/models', 'max_model_len': 16384}",
     16384),
])
def test_max_model_len_is_read_from_the_config_line_too(line, expected):
    text = line + "\n" + (LLAMA3_H100.read_text())
    facts = parse_vllm_log(text)
    assert facts.model_len == expected
    with pytest.raises(LogMismatch, match=f"max_model_len is {expected:,} tokens; expected at most llama-3-8b's"):
        calibrate(facts, LLAMA3, DEFAULT.gpus["H100-80GB"])
    assert calibrate(facts, DEFAULT.models["llama-3.1-8b"], DEFAULT.gpus["H100-80GB"]).calibrated_error == \
        pytest.approx(0, abs=0.001)


def test_weights_of_another_model_are_refused():
    """Mistral-7B's 13.49 GiB logged for Llama-3-8B (14.96): the same KV shape, a different checkpoint."""
    mistral = DEFAULT.models["mistral-7b-v0.1"].weights_bytes / GIB
    facts = parse_vllm_log(_v0_log(L40S_TOTAL, mistral, 0.16, 1.26, LLAMA3_KV))
    with pytest.raises(LogMismatch) as exc:
        calibrate(facts, LLAMA3, DEFAULT.gpus["L40S"])
    (message,) = exc.value.contradictions
    assert f"weights take {mistral:.2f} GiB per GPU; expected llama-3-8b's {LLAMA3_WEIGHTS:.2f} GiB" in message
    assert "mistral-7b-v0.1" in message and "weightsGib" in message
    assert calibrate(facts, DEFAULT.models["mistral-7b-v0.1"], DEFAULT.gpus["L40S"]).calibrated_error == \
        pytest.approx(0, abs=0.001)


def test_kv_bytes_per_token_of_another_model_are_refused():
    """A V1 log stating its KV memory and tokens: Llama-3.1-8B's 128 KiB per token is not Qwen3-8B's 144 KiB
    (36 layers), though the weights (15.0 against 15.3 GiB) and context would pass."""
    text = LLAMA31_L40S.read_text() + "INFO 04-24 16:33:13 [gpu_worker.py:217] Available KV cache memory: 19.37 GiB\n"
    facts = parse_vllm_log(text)
    qwen3 = DEFAULT.models["qwen3-8b"]
    with pytest.raises(LogMismatch) as exc:
        calibrate(facts, qwen3, DEFAULT.gpus["L40S"])
    (message,) = exc.value.contradictions
    assert f"158,656 tokens in 19.37 GiB, 128 KiB per token; expected qwen3-8b's {kv_bytes_per_token(qwen3) // 1024} " \
           "KiB" in message
    assert "it fits the catalog's" in message and "llama-3.1-8b" in message
    assert abs(calibrate(facts, DEFAULT.models["llama-3.1-8b"], DEFAULT.gpus["L40S"]).calibrated_error) < 0.001


def test_a_log_at_another_tensor_parallelism_is_refused(tmp_path, capsys):
    text = LLAMA3_H100.read_text() + "INFO llm_engine.py:249] ... tensor_parallel_size=2, pipeline_parallel_size=1\n"
    argv = ["vllm-log", _tmp_log(tmp_path, text), "--model", "llama-3-8b", "--gpu", "H100-80GB", "--tp", "1"]
    err = _exit_2_plain(argv, capsys)
    assert "tensor_parallel_size=2; expected the target's tensor parallelism, 1" in err


def test_a_vision_model_has_no_kv_cache_to_calibrate(capsys):
    """Before: resnet-50 'calibrated' to nonTorchGib 39.99 from an LLM's log."""
    err = _exit_2_plain(["vllm-log", str(LLAMA31_L40S), "--model", "resnet-50", "--gpu", "L40S"], capsys)
    assert "resnet-50 is a vision model" in err


# -- the profile must reproduce the log -----------------------------------------------------------------------

def test_a_log_whose_figures_do_not_add_up_is_refused_not_written(tmp_path, capsys, monkeypatch):
    """A KV cache 6 GiB above what total × utilization − weights − activation − non-torch leaves: no profile of
    non-negative figures reproduces it on this GPU (before: printed 20 % off and written)."""
    consistent = L40S_TOTAL * 0.90 - 14.96 - 0.16 - 1.26
    text = _v0_log(L40S_TOTAL, 14.96, 0.16, 1.26, LLAMA3_KV, kv_gib=consistent + 6, blocks=False)
    err = _refused([_tmp_log(tmp_path, text), *DEV_CHAT, "--write"], capsys, monkeypatch)
    logged = int((round(consistent + 6, 2)) * GIB // (16 * LLAMA3_KV)) * 16
    assert f"off the log's {logged:,}; expected within ±{REPRODUCE_TOLERANCE:.0%}" in err
    assert "the log's figures do not add up for llama-3-8b on L40S" in err


def test_a_v1_log_too_big_for_the_gpu_at_the_assumed_utilization_is_refused(capsys):
    """vllm#17122's L40S log read as an L4's: 19.4 GiB of KV and 15 GiB of weights exceed 0.9 × 22 GiB; the
    activation prior was lowered to 0 and a profile 40 % off printed. The message says to pass the utilization."""
    err = _exit_2_plain(["vllm-log", str(LLAMA31_L40S), "--model", "llama-3.1-8b", "--gpu", "L4"], capsys)
    assert "reproduces" in err and "leaves -" in err and "--gpu-memory-utilization" in err


def test_every_fixture_still_reproduces_for_its_own_model_and_gpu():
    for name, model, gpu in (("llama3-8b-h100-v0.6.5.log", "llama-3-8b", "H100-80GB"),
                             ("llama2-7b-h100-v0.8.1-lora.log", "llama-2-7b", "H100-80GB"),
                             ("llama3.1-8b-l40s-v1.log", "llama-3.1-8b", "L40S")):
        cal = calibrate(parse_vllm_log((FIX / name).read_text()), DEFAULT.models[model], DEFAULT.gpus[gpu])
        assert abs(cal.calibrated_error) < 0.001, name
        assert math.isfinite(cal.non_torch_gib) and cal.non_torch_gib >= 0


# -- helpers -------------------------------------------------------------------------------------------------

def _tmp_log(tmp_path: Path, text: str) -> str:
    path = tmp_path / "vllm.log"
    path.write_text(text)
    return str(path)


def _exit_2_plain(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        main(["calibrate", *argv])
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    return err
