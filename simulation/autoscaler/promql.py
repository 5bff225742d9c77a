"""What a Prometheus instant query returns from scraped samples, pure: the latest sample of a gauge, and `rate()`.

Sources (prometheus/prometheus):
- instant vector selector: the latest sample with a timestamp in (t − lookback, t], 5 min by default
  (`promql/engine.go: defaultLookbackDelta`); a staleness marker (written when a scrape fails or the target
  goes, `scrape/scrape.go`) ends the series at once;
- `rate(v[w])`: the samples in (t − w, t] — staleness markers skipped (`engine.go: matrixIterSlice`), so a
  series that has just gone still contributes — through `promql/functions.go: extrapolatedRate`: the increase
  between the first and last sample (a drop is a counter reset), extrapolated to the window's edges when a
  sample lies within 1.1 average sample gaps of them (else by half a gap), never below a counter's zero,
  divided by w; fewer than two samples give nothing.
The query is matched against the forms the stack renders (`query_kind`); it is not evaluated as PromQL.
"""

from __future__ import annotations

import re
from typing import Sequence

from validation.kubernetes import parse_duration

LOOKBACK_S = 300.0   # promql/engine.go defaultLookbackDelta

# The metrics manifests/keda.in_flight_query sums, by engine: the runtime's gauges of requests running and queued,
# and for Triton the cumulative request time, whose rate is the mean number in flight (manifests/keda.py).
IN_FLIGHT_GAUGES = {"vllm": ("vllm:num_requests_running", "vllm:num_requests_waiting"),
                    "tgi": ("tgi_queue_size", "tgi_batch_current_size")}
TRITON_RATE_METRIC = "nv_inference_request_duration_us"
_SHOWN = {"vllm": "vLLM", "tgi": "TGI"}

# The in-flight queries manifests/keda.in_flight_query renders, per engine; the label selectors and the Triton
# rate window may vary, nothing else: any other query (avg(), vector(5), a request rate, a subquery, the request
# time without `/ 1e6`) would be simulated as something it is not.
_MATCHER = r'[A-Za-z_]\w*\s*(?:=~|!~|!=|=)\s*"(?:[^"\\]|\\.)*"'
_LABELS = rf"(?:\{{\s*(?:{_MATCHER}(?:\s*,\s*{_MATCHER})*\s*,?\s*)?\}})?"


def _sum(metric: str) -> str:
    return rf"sum\s*\(\s*{re.escape(metric)}\s*{_LABELS}\s*\)"


_GAUGE_QUERIES = [re.compile(rf"^\s*{_sum(a)}\s*\+\s*{_sum(b)}\s*$", re.ASCII)  # Go's \w and \s: ASCII
                  for first, second in IN_FLIGHT_GAUGES.values() for a, b in ((first, second), (second, first))]
_RATE_QUERY = re.compile(rf"^\s*sum\s*\(\s*rate\s*\(\s*{TRITON_RATE_METRIC}\s*{_LABELS}"
                         rf"\s*\[\s*([0-9a-z]+)\s*\]\s*\)\s*\)\s*/\s*(?:1e6|1000000)\s*$", re.ASCII)
ALLOWED = ("; ".join(f"sum({a}{{…}}) + sum({b}{{…}}) ({_SHOWN[engine]})"
                     for engine, (a, b) in IN_FLIGHT_GAUGES.items())
           + f"; sum(rate({TRITON_RATE_METRIC}{{…}}[window])) / 1e6 (Triton); label selectors and the window may "
           "vary (manifests/keda.in_flight_query)")


def query_kind(query: str) -> tuple[str, float] | str:
    """("gauge", 0) for the sum of a runtime's in-flight gauges, ("rate", window_s) for Triton's request time
    per second; else the reason it cannot be simulated (a message naming what is allowed)."""
    if any(q.match(query) for q in _GAUGE_QUERIES):
        return "gauge", 0.0
    m = _RATE_QUERY.match(query)
    if m is None:
        return f"expected one of the in-flight queries: {ALLOWED}"
    window = parse_duration(m.group(1))
    if not window or window <= 0:
        return f"expected a rate window like '1m', not {m.group(1)!r}"
    return "rate", float(window)


def instant(series: Sequence[tuple[float, float]], stale_at: float | None, t: float,
            lookback: float = LOOKBACK_S) -> float | None:
    """The value an instant selector returns at t: the latest sample in (t − lookback, t], unless a staleness
    marker at or before t follows it (`stale_at`); None when there is none."""
    for ts, value in reversed(series):
        if ts <= t:
            if ts <= t - lookback or (stale_at is not None and ts < stale_at <= t):
                return None
            return value
    return None


def extrapolated_rate(series: Sequence[tuple[float, float]], t: float, window: float) -> float | None:
    """`rate(counter[window])` at t from (time, value) samples in time order (`extrapolatedRate`, isRate)."""
    start = t - window
    pts = [(ts, v) for ts, v in series if start < ts <= t]
    if len(pts) < 2:
        return None
    (t0, v0), (t1, v1) = pts[0], pts[-1]
    increase = v1 - v0
    for (_, a), (_, b) in zip(pts, pts[1:]):
        if b < a:                       # a counter reset: the counter restarted from 0
            increase += a
    sampled = t1 - t0
    gap = sampled / (len(pts) - 1)
    to_start, to_end = t0 - start, t - t1
    if to_start >= gap * 1.1:
        to_start = gap / 2
    if increase > 0 and v0 >= 0:        # a counter is never negative: start no earlier than its zero
        to_start = min(to_start, sampled * (v0 / increase))
    if to_end >= gap * 1.1:
        to_end = gap / 2
    factor = (sampled + to_start + to_end) / sampled if sampled else 1.0
    return increase * factor / window
