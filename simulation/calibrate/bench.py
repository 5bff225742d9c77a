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

The residual is the relative RMS error of each model over the requests — how far one pair of factors is
from explaining the run; large residuals mean the load was too high for the TTFT fit or the batch varies
too much for one mean.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from catalog import Gpu, Model
from simulation.gpu.memory import kv_bytes_per_token
from simulation.gpu.roofline import DEFAULT_EFFICIENCY, Efficiency, prefill_flops


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


def read_bench(text: str) -> BenchRun:
    """The per-request fields of a `vllm bench serve` result; ValueError naming what is missing."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err}") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object (vllm bench serve --save-result)")
    missing = [k for k in ("input_lens", "output_lens", "ttfts", "itls") if not isinstance(data.get(k), list)]
    if missing:
        raise ValueError(f"missing per-request lists {missing}: run `vllm bench serve --save-result "
                         "--save-detailed`")
    errors = data.get("errors") or [""] * len(data["ttfts"])
    rows = [(i, o, t, itl) for i, o, t, itl, e in zip(data["input_lens"], data["output_lens"], data["ttfts"],
                                                   data["itls"], errors)
            if not e and isinstance(t, (int, float)) and t > 0 and isinstance(i, int) and i > 0]
    if len(rows) < 3:
        raise ValueError(f"expected at least 3 successful requests, found {len(rows)}")
    tp_rows = [(i, o, sum(itl) / len(itl)) for i, o, _, itl in rows if isinstance(itl, list) and len(itl) >= 1]
    duration = data.get("duration") or 0
    throughput = data.get("request_throughput") or (len(rows) / duration if duration else 0.0)
    return BenchRun([r[0] for r in rows], [r[1] for r in rows], [float(r[2]) for r in rows],
                    [r[2] for r in tp_rows], [r[0] for r in tp_rows], [r[1] for r in tp_rows],
                    float(throughput), data.get("max_concurrency"), data.get("request_rate"))


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
    ys = run.ttfts
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
    ttft_pred = [slope * x + overhead for x in xs]
    # TPOT = step overhead + (weights + KV × batch context) / (bandwidth × memory)
    decode_s = [t * max(o - 1, 0) for t, o in zip(run.tpots, run.tpot_outputs)]
    batch = run.request_throughput * (sum(decode_s) / len(decode_s)) if decode_s else 1.0
    if run.max_concurrency:
        batch = min(batch, float(run.max_concurrency))
    batch = max(1.0, batch)
    kv = kv_bytes_per_token(model)
    bytes_read = [model.weights_bytes + kv * batch * (i + o / 2) for i, o in zip(run.tpot_inputs, run.tpot_outputs)]
    step = prior.step_overhead_s
    transfer = [max(t - step, 1e-9) for t in run.tpots]
    bw = gpu.bandwidth_gbps * 1e9 * tp
    memory = min(1.0, sum(bytes_read) / (bw * sum(transfer)))
    tpot_pred = [b / (bw * memory) + step for b in bytes_read]
    eff = Efficiency(memory=memory, compute=compute, step_overhead_s=step, prefill_overhead_s=overhead)
    return BenchFit(eff, batch, _rel_rms(ttft_pred, ys), _rel_rms(tpot_pred, run.tpots) if run.tpots else 0.0)
