"""Fit the roofline's efficiency factors to a `vllm bench serve --save-result` JSON (observe → calibrate).

The result file (vLLM `vllm/benchmarks/serve.py`, `benchmark_serving.py` before it) holds per-request
`input_lens`, `output_lens`, `ttfts` (s) and `itls` (s, one list per request), with `request_throughput`,
`request_rate`, `max_concurrency`, `duration` and the `*_ms` summaries. Fitted here:

* **compute efficiency and prefill overhead** from TTFT: a least-squares line TTFT = FLOPs(prompt) /
  (peak × compute) + overhead (`roofline.prefill_flops`); at the low rates a calibration run should use,
  TTFT is the prompt's prefill (queueing and co-scheduled prefills inflate it: run the benchmark at a low
  `--request-rate` or `--max-concurrency 1` for this part);
* **memory efficiency** from each request's TPOT (mean ITL), the step overhead kept at its prior: a decode
  step reads the weights and the KV of the batch, whose size is the mean number of requests decoding
  (Little's law: request throughput × mean decode time, at most `max_concurrency`) at the request's mean
  context (prompt + half its output).

With `--tp` > 1 the modelled tensor-parallel all-reduces (`roofline.tp_comm_time` at the prior's link
efficiency and latency) are taken off each TTFT and TPOT before fitting and added back to the predictions, so
the factors describe the GPUs alone and the simulation does not count the communication twice.

The residual is the relative RMS error of each model over the requests — how far one pair of factors is
from explaining the run; large residuals mean the load was too high for the TTFT fit or the batch varies
too much for one mean.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from typing import Any

from catalog import Gpu, Model
from simulation.gpu.memory import kv_bytes_per_token
from simulation.gpu.roofline import DEFAULT_EFFICIENCY, Efficiency, prefill_flops, tp_comm_time
from validation.errors import shown
from validation.fields import _is_int, _is_number


@dataclass(frozen=True)
class BenchRun:
    input_lens: list[int]
    output_lens: list[int]
    ttfts: list[float]
    tpots: list[float]  # mean inter-token latency per request (requests with ≥ 2 output tokens)
    tpot_inputs: list[int]
    tpot_outputs: list[int]
    request_throughput: float
    max_concurrency: int | None
    request_rate: Any


MAX_TOKENS = 10_000_000   # a prompt or an output longer than any model's context is not a measurement
MAX_S = 3600.0            # a TTFT or an inter-token latency above an hour is not one either
MIN_S = 1e-6              # nor one below a microsecond (and the fit divides by them)
MAX_RUN_S = 7 * 86400.0   # a benchmark run of more than a week is not one run


def read_bench(text: str) -> BenchRun:
    """The per-request fields of a `vllm bench serve` result; ValueError naming the field, its index, the value
    and what is allowed. Failed requests (a non-empty `errors[i]`, or vLLM's failure marker TTFT 0) are left
    out; every other value must be a measurement (finite, in range, of the right type)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err}") from None
    except RecursionError:
        raise ValueError("not a vllm bench serve result: JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object (vllm bench serve --save-result)")
    missing = [k for k in ("input_lens", "output_lens", "ttfts", "itls") if not isinstance(data.get(k), list)]
    if missing:
        raise ValueError(f"missing per-request lists {missing}: run `vllm bench serve --save-result "
                         "--save-detailed`")
    n = len(data["ttfts"])
    errors = data.get("errors")
    errors = [None] * n if errors is None else errors
    lists = {k: data[k] for k in ("input_lens", "output_lens", "ttfts", "itls")} | {"errors": errors}
    for k, v in lists.items():
        if not isinstance(v, list):
            raise ValueError(_bad(k, None, v, "a list with one entry per request (or null)"))
        if len(v) != n:
            raise ValueError(f"{k}: got {len(v)} entries; expected one per request, as ttfts has ({n})")
    rows, tp_rows = [], []
    for idx, (i, o, t, itl, e) in enumerate(zip(*lists.values())):
        if e not in (None, ""):
            if not isinstance(e, str):
                raise ValueError(_bad("errors", idx, e, "a string (the request's error) or null"))
            continue
        if _is_number(t) and t == 0:  # vLLM's failed request: no first token
            continue
        if not _is_int(i) or not 1 <= i <= MAX_TOKENS:
            raise ValueError(_bad("input_lens", idx, i, f"an integer number of tokens in 1..{MAX_TOKENS:,}"))
        if not _is_int(o) or not 0 <= o <= MAX_TOKENS:
            raise ValueError(_bad("output_lens", idx, o, f"an integer number of tokens in 0..{MAX_TOKENS:,}"))
        if not _is_number(t) or not MIN_S <= t <= MAX_S:
            raise ValueError(_bad("ttfts", idx, t, f"a time to first token in seconds, {MIN_S:g}..{MAX_S:g}"))
        if not isinstance(itl, list) or not all(_is_number(x) and 0 <= x <= MAX_S for x in itl):
            raise ValueError(_bad("itls", idx, itl, f"a list of inter-token latencies in seconds, 0..{MAX_S:g}"))
        rows.append((int(i), int(o), float(t)))
        if itl:
            mean = math.fsum(itl) / len(itl)
            if mean < MIN_S:
                raise ValueError(_bad("itls", idx, itl, f"inter-token latencies with a mean of at least {MIN_S:g} s"))
            tp_rows.append((int(i), int(o), mean))
    if len(rows) < 3:
        raise ValueError(f"expected at least 3 successful requests, found {len(rows)}")
    if len(tp_rows) < 3:
        raise ValueError(f"expected at least 3 successful requests with two or more output tokens (a non-empty "
                         f"itls list) to fit the decode step, found {len(tp_rows)}: a prefill-only benchmark "
                         "measures no decoding; run `vllm bench serve` with an output length of at least 2")
    # Every request's first token came within the run, so it lasted at least the slowest TTFT: a shorter
    # duration (or a higher throughput than the requests over that time) is not a measurement.
    slowest = max(r[2] for r in rows)
    duration = _optional(data, "duration", f"a run time in seconds of at least the slowest TTFT ({slowest:g} s) "
                         f"and at most {MAX_RUN_S:g}", slowest, MAX_RUN_S)
    throughput = _optional(data, "request_throughput", f"requests per second > 0 and at most the requests over the "
                           f"slowest TTFT ({len(rows)} / {slowest:g} s)", 0.0, len(rows) / slowest)
    if throughput is None:
        throughput = len(rows) / duration if duration else 0.0
    concurrency = data.get("max_concurrency")
    if concurrency is not None and (not _is_int(concurrency) or not 1 <= concurrency <= MAX_TOKENS):
        raise ValueError(_bad("max_concurrency", None, concurrency, "null or an integer >= 1"))
    rate = data.get("request_rate")
    if not (rate is None or (isinstance(rate, str) and len(rate) <= 32)
            or (isinstance(rate, (int, float)) and not isinstance(rate, bool) and rate == rate and rate > 0)):
        raise ValueError(_bad("request_rate", None, rate, "a number of requests per second > 0, \"inf\" or null"))
    return BenchRun([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows],
                    [r[2] for r in tp_rows], [r[0] for r in tp_rows], [r[1] for r in tp_rows],
                    float(throughput), int(concurrency) if concurrency is not None else None, rate)


def _bad(field: str, index: int | None, value: Any, allowed: str) -> str:
    return f"{field}{'' if index is None else f'[{index}]'}: got {shown(value)}; expected {allowed}"


def _optional(data: dict, key: str, allowed: str, low: float, high: float) -> float | None:
    """`data[key]` when present: a finite number > 0 in [low, high] (ValueError otherwise); None when absent or
    null."""
    value = data.get(key)
    if value is None:
        return None
    if not _is_number(value) or value <= 0 or not low <= value <= high:
        raise ValueError(_bad(key, None, value, allowed))
    return float(value)


@dataclass(frozen=True)
class BenchFit:
    efficiency: Efficiency
    mean_batch: float
    ttft_residual: float  # relative RMS error of the TTFT line
    tpot_residual: float  # relative RMS error of the decode-step model

    def engine_profile(self) -> dict[str, float]:
        e = self.efficiency
        return {"memoryEfficiency": round(e.memory, 4), "computeEfficiency": round(e.compute, 4),
                "prefillOverheadS": round(e.prefill_overhead_s, 5), "stepOverheadS": round(e.step_overhead_s, 5)}


def _rel_rms(pred: list[float], obs: list[float]) -> float:
    return math.sqrt(sum(((p - o) / o) ** 2 for p, o in zip(pred, obs)) / len(obs))


def fit_bench(run: BenchRun, model: Model, gpu: Gpu, tp: int = 1,
              prior: Efficiency = DEFAULT_EFFICIENCY) -> BenchFit:
    """Least-squares efficiency factors for this run (see the module docstring)."""
    # TTFT = slope × FLOPs + overhead
    xs = [prefill_flops(model, n) for n in run.input_lens]
    comm = [tp_comm_time(model, gpu, n, eff=prior, tp=tp) for n in run.input_lens]  # all 0.0 at tp 1
    ys = [t - c for t, c in zip(run.ttfts, comm)]
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    overhead = my - slope * mx
    if slope <= 0 or overhead < 0:  # one prompt length, or noise: keep the prior overhead
        overhead = min(prior.prefill_overhead_s, min(ys) * 0.5)
        slope = sum(max(y - overhead, 1e-9) for y in ys) / sum(xs)
    peak = gpu.bf16_tflops * 1e12 * tp
    compute = min(1.0, 1.0 / (slope * peak))
    ttft_pred = [slope * x + overhead + c for x, c in zip(xs, comm)]
    # TPOT = step overhead + (weights + KV × batch context) / (bandwidth × memory)
    decode_s = [t * max(o - 1, 0) for t, o in zip(run.tpots, run.tpot_outputs)]
    batch = run.request_throughput * (sum(decode_s) / len(decode_s)) if decode_s else 1.0
    if run.max_concurrency:
        batch = min(batch, float(run.max_concurrency))
    batch = min(batch, float(len(run.ttfts)))  # never more decoding at once than the run had requests
    batch = max(1.0, batch)
    kv = kv_bytes_per_token(model)
    bytes_read = [model.weights_bytes + kv * batch * (i + o / 2) for i, o in zip(run.tpot_inputs, run.tpot_outputs)]
    step = prior.step_overhead_s + tp_comm_time(model, gpu, batch, eff=prior, tp=tp)
    transfer = [max(t - step, 1e-9) for t in run.tpots]
    bw = gpu.bandwidth_gbps * 1e9 * tp
    memory = min(1.0, sum(bytes_read) / (bw * sum(transfer)))
    tpot_pred = [b / (bw * memory) + step for b in bytes_read]
    eff = replace(prior, memory=memory, compute=compute, step_overhead_s=prior.step_overhead_s,
                  prefill_overhead_s=overhead)
    return BenchFit(eff, batch, _rel_rms(ttft_pred, run.ttfts), _rel_rms(tpot_pred, run.tpots) if run.tpots else 0.0)
