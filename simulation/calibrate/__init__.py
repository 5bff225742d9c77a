"""Measured engine figures from the user's own engine, as the `engineProfile:` mapping a stack service takes:
a vLLM start-up log (vllm_log.py: memory profile, KV cache size) or a `vllm bench serve --save-result` JSON
(bench.py: TTFT, TPOT/ITL fitted to the roofline). Each figure comes with the lines that explain it.

The command is `python -m preflight calibrate` (preflight/calibrate.py): it resolves the model and GPU (from a
stack's service or --model/--gpu), checks the figures as the stack loader would and writes them with --write. A
log of another model or GPU than that is refused (vllm_log.check_log_fits), never calibrated.
See docs/gpu-model.md, "Calibrate".
"""

from __future__ import annotations

from catalog import Catalog, Gpu, Model
from simulation.calibrate.bench import fit_bench, read_bench
from simulation.calibrate.vllm_log import LogMismatch, calibrate, parse_vllm_log
from validation.errors import InputError, Problem


def from_log(text: str, model: Model, gpu: Gpu, tp: int, utilization: float | None, name: str, *,
             catalog: Catalog | None = None, target: str = "") -> tuple[dict, list[str]]:
    """The `engineProfile` a vLLM start-up log measures (tp 0: the log's), and what it reproduces; a log it
    cannot read, or one of another model, GPU or tensor parallelism (`target` says whose: the service), is an
    InputError naming the file, each contradiction a problem."""
    try:
        facts = parse_vllm_log(text)
        cal = calibrate(facts, model, gpu, tp=tp or None, utilization=utilization, catalog=catalog)
    except LogMismatch as err:
        whose = f"{model.name} on {gpu.name}" + (f" at tensor parallel {tp}" if tp else "") \
            + (f", {target}" if target else "")
        raise InputError([Problem("FILE", name, c) for c in err.contradictions],
                         f"a vLLM log checked against {whose} (nothing is calibrated or written)") from None
    except ValueError as err:
        raise InputError([Problem("FILE", name, str(err))]) from None
    lines = [f"vLLM start-up log {name}" + (f" (vLLM {facts.version})" if facts.version else "")
             + f": {model.name} on {gpu.name}, engine {facts.scheduler.upper()}",
             f"logged KV cache: {cal.logged_kv_tokens:,} tokens",
             f"priors reproduce {cal.prior_kv_tokens:,} tokens ({cal.prior_error:+.1%})",
             f"calibrated reproduce {cal.calibrated_kv_tokens:,} tokens ({cal.calibrated_error:+.2%})",
             *cal.notes]
    return cal.engine_profile(), lines


def from_bench(text: str, model: Model, gpu: Gpu, tp: int, name: str) -> tuple[dict, list[str]]:
    """The `engineProfile` a `vllm bench serve` result fits (tp 0: 1), and how well; a result it cannot read is
    an InputError naming the file."""
    try:
        bench = read_bench(text)
        fit = fit_bench(bench, model, gpu, tp or 1)
    except ValueError as err:
        raise InputError([Problem("FILE", name, str(err))]) from None
    lines = [f"vllm bench serve result {name}: {len(bench.ttfts)} requests at rate {bench.request_rate}, "
             f"{model.name} on {gpu.name}",
             f"mean decoding batch (Little's law): {fit.mean_batch:.1f}",
             f"residual (relative RMS): TTFT {fit.ttft_residual:.1%}, TPOT {fit.tpot_residual:.1%}"]
    return fit.engine_profile(), lines
