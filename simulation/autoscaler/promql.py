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
The query's shape is read from the ScaledObject's text (`query_kind`); it is not evaluated as PromQL.
"""

from __future__ import annotations

import re
from typing import Sequence

from validation.kubernetes import parse_duration

LOOKBACK_S = 300.0   # promql/engine.go defaultLookbackDelta
_RATE = re.compile(r"\brate\s*\(")
_RANGE = re.compile(r"\[([0-9a-z]+)\]")
_OTHER_RANGE_FUNCTIONS = re.compile(r"\b(irate|increase|delta|idelta|deriv|[a-z_]+_over_time)\s*\(")


def query_kind(query: str) -> tuple[str, float] | str:
    """("gauge", 0) for a query on instant vectors, ("rate", window_s) for `rate(counter[window])`; else the
    reason it cannot be simulated (a message)."""
    windows = [parse_duration(m.group(1)) for m in _RANGE.finditer(query)]
    other = _OTHER_RANGE_FUNCTIONS.search(query)
    if other:
        return f"{other.group(1)}() is not simulated"
    if not windows:
        return "gauge", 0.0
    if not _RATE.search(query) or len(set(windows)) != 1 or not windows[0] or windows[0] < 0:
        return "expected one range, in rate(counter[window]) with a window like '1m'"
    return "rate", float(windows[0])


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
