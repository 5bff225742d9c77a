"""Trace files: reading a request trace CSV (the Azure LLM inference traces 2023, or a user's own with
`columns:`) into arrival times and token counts, checked row by row and cached per file (the CSVs are read-only
shared data). `simulation/workload.py` replays them (`kind: trace`)."""

from __future__ import annotations

import csv
import io
import math
import os
from datetime import datetime, timezone

from validation.paths import open_regular

MAX_TOKENS = 10_000_000  # far past any context window; bounds a typo's cost (a trace row's or a workload's)


# The Azure LLM inference trace's columns; a user's own CSV maps its column names with `columns:`.
TRACE_COLUMNS = {"timestamp": "TIMESTAMP", "input_tokens": "ContextTokens", "output_tokens": "GeneratedTokens"}
_TRACE_CACHE: dict[tuple, tuple[list[float], list[int], list[int]]] = {}
# A trace is read whole and sorted before a run (~160 B of memory a row): bounded so a replay stays in seconds and
# hundreds of MiB. The Azure LLM inference traces 2023 are 0.3–0.7 MiB, 9–19 k rows.
MAX_TRACE_BYTES = 64 * 2**20
MAX_TRACE_ROWS = 2_000_000


class TraceError(ValueError):
    """A trace file that cannot be replayed; the message says which column or row and why."""


_FORMS = {"seconds": "number of seconds", "zoned": "date-time with a UTC offset",
          "unzoned": "date-time without a UTC offset (read as UTC)"}


def _seconds(text: str) -> tuple[float, str]:
    """A timestamp cell → (seconds, form): seconds as a number ("seconds"), or an ISO 8601 date-time
    ("2023-11-16 18:15:46.6805900") with a zone ("zoned") or without one ("unzoned", read as UTC so that a run is
    the same on every machine: the machine's zone would move a DST night by an hour)."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(value):
            raise ValueError(text)
        return value, "seconds"
    if "." in text:  # seven fractional digits in the Azure CSVs: keep six for %f
        head, frac = text.split(".", 1)
        digits = len(frac) - len(frac.lstrip("0123456789"))
        text = f"{head}.{frac[:min(digits, 6)]}{frac[digits:]}"
    when = datetime.fromisoformat(text)
    if when.tzinfo is None:
        return when.replace(tzinfo=timezone.utc).timestamp(), "unzoned"
    return when.timestamp(), "zoned"


def read_trace(path: str, columns: tuple[tuple[str, str], ...] = ()) -> tuple[list[float], list[int], list[int]]:
    """(seconds since the first row, input tokens, output tokens), sorted by time; TraceError when the file
    lacks a column or holds a row that is not a timestamp and two token counts."""
    hit = _TRACE_CACHE.get((path, columns))
    if hit is not None:
        return hit
    names = {**TRACE_COLUMNS, **dict(columns)}
    rows = []
    try:
        with open_regular(path) as raw:
            size = os.fstat(raw.fileno()).st_size
            if size > MAX_TRACE_BYTES:
                raise TraceError(f"expected a CSV of at most {MAX_TRACE_BYTES / 2**20:g} MiB; this one is "
                                 f"{size / 2**20:.1f} MiB (cut it to the hours you replay: `start_s`/`limit` still "
                                 "read every row)")
            fh = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
            reader = csv.DictReader(fh)
            header = reader.fieldnames or []
            missing = [f"{field} ({names[field]!r})" for field in TRACE_COLUMNS if names[field] not in header]
            if missing:
                raise TraceError(f"the CSV has no column for {', '.join(missing)}; its columns are {header}; map "
                                 "yours with columns: {timestamp: ..., input_tokens: ..., output_tokens: ...}")
            first: tuple[str, int] | None = None  # the first row's timestamp form and line
            for n, row in enumerate(reader, start=2):
                if n - 1 > MAX_TRACE_ROWS:
                    raise TraceError(f"expected at most {MAX_TRACE_ROWS:,} rows (the default request budget of one "
                                     "run); cut the trace to the hours you replay")
                try:
                    when, form = _seconds(row[names["timestamp"]] or "")
                    rows.append((when, int(row[names["input_tokens"]] or ""), int(row[names["output_tokens"]] or "")))
                except (TypeError, ValueError, OverflowError):
                    raise TraceError(f"line {n}: expected a timestamp (seconds or a date-time) and two integer token "
                                     f"counts in {names['timestamp']!r}, {names['input_tokens']!r}, "
                                     f"{names['output_tokens']!r}") from None
                if rows[-1][1] < 0 or rows[-1][2] < 0:
                    raise TraceError(f"line {n}: got {rows[-1][1]} input and {rows[-1][2]} output tokens in "
                                     f"{names['input_tokens']!r}, {names['output_tokens']!r}; expected token "
                                     "counts >= 0 (0 is replayed as 1)")
                if rows[-1][1] > MAX_TOKENS or rows[-1][2] > MAX_TOKENS:
                    raise TraceError(f"line {n}: got {rows[-1][1]} input and {rows[-1][2]} output tokens in "
                                     f"{names['input_tokens']!r}, {names['output_tokens']!r}; expected token "
                                     f"counts of at most {MAX_TOKENS:,}, as input_tokens/output_tokens (far past "
                                     "any context window)")
                first = first or (form, n)
                if form != first[0]:
                    raise TraceError(f"line {n}: a {_FORMS[form]} in {names['timestamp']!r} after a {_FORMS[first[0]]} "
                                     f"on line {first[1]}; expected one form in every row (their differences are "
                                     "the arrival times)")
    except UnicodeDecodeError:
        raise TraceError("expected a UTF-8 CSV file") from None
    except OSError as exc:
        raise TraceError(f"cannot read the file ({exc.strerror or exc})") from None
    except csv.Error as exc:
        raise TraceError(f"not a CSV file ({exc})") from None
    rows.sort()
    t0 = rows[0][0] if rows else 0.0
    out = ([r[0] - t0 for r in rows], [max(1, r[1]) for r in rows], [max(1, r[2]) for r in rows])
    _TRACE_CACHE[(path, columns)] = out
    return out
