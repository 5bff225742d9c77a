"""Knative's cluster-wide `knative-serving/config-autoscaler` ConfigMap, read and checked as Knative reads it.

Keys, types and defaults follow knative/serving `pkg/autoscaler/config/config.go` (`defaultConfig`,
`NewConfigFromMap`: knative.dev/pkg `configmap/parser` — `strconv.ParseFloat`, `ParseInt(v, 10, 32)`,
`ParseBool`, `time.ParseDuration`); every range is `validate()`'s, in its order of keys. Knative's config
webhook (`config.webhook.serving.knative.dev`, cmd/webhook/main.go) refuses a ConfigMap that fails them, so a
value refused here is one the cluster would refuse too.

These settings apply to every revision without the matching per-revision annotation
(`pkg/reconciler/autoscaling/kpa/resources/decider.go: MakeDecider`); the scale-rate limits, the
scale-to-zero switches and grace period, the default targets and `max-scale-limit` have no annotation at all.
Deviations: NaN and ±Inf (which `ParseFloat` accepts) are refused, the simulation cannot run on them; only the
KPA and HPA classes are accepted for `pod-autoscaler-class`. Not simulated: `activator-capacity` (how many
activators share a revision's load; one activator path is modelled) and `min-scale` (KServe always writes the
revision's min-scale annotation from `minReplicas`, which overrides it).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from validation.errors import Problem
from validation.kubernetes import parse_duration

KPA_CLASS = "kpa.autoscaling.knative.dev"
HPA_CLASS = "hpa.autoscaling.knative.dev"
CONFIG_AUTOSCALER = "config-autoscaler"
TARGET_MIN = 0.01               # pkg/apis/autoscaling/register.go TargetMin
WINDOW_MIN_S, WINDOW_MAX_S = 6.0, 3600.0                      # register.go WindowMin, WindowMax
PANIC_WINDOW_PCT_MIN, PANIC_WINDOW_PCT_MAX = 1.0, 100.0       # register.go PanicWindowPercentage{Min,Max}
INT32_MAX = 2**31 - 1


@dataclass(frozen=True)
class ClusterAutoscaler:
    """The config-autoscaler values (defaults = `defaultConfig()`), in the simulation's units."""

    pod_autoscaler_class: str = KPA_CLASS
    enable_scale_to_zero: bool = True
    allow_zero_initial_scale: bool = False
    max_scale_up_rate: float = 1000.0
    max_scale_down_rate: float = 2.0
    container_concurrency_target_fraction: float = 0.70   # container-concurrency-target-percentage 70
    container_concurrency_target_default: float = 100.0
    rps_target_default: float = 200.0
    target_burst_capacity: float = 211.0   # 211, not 200 (commit b6e6baa6, knative#12774)
    panic_window_percentage: float = 10.0
    activator_capacity: float = 100.0
    panic_threshold_percentage: float = 200.0
    initial_scale: int = 1
    min_scale: int = 0
    max_scale: int = 0
    max_scale_limit: int = 0
    stable_window_s: float = 60.0
    scale_down_delay_s: float = 0.0
    scale_to_zero_grace_period_s: float = 30.0
    scale_to_zero_pod_retention_s: float = 0.0
    # The given keys as ConfigMap data strings (what a patch writes); not part of the settings' identity.
    given: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    def data(self) -> dict[str, str]:
        """Every given key as given, a default value too: the ConfigMap data a patch must own (a cluster whose
        admin changed a key keeps that value unless the patch writes the one the simulation assumed)."""
        return dict(self.given)


# ConfigMap key → (attribute, parser kind), in NewConfigFromMap's order.
KEYS: dict[str, tuple[str, str]] = {
    "pod-autoscaler-class": ("pod_autoscaler_class", "class"),
    "enable-scale-to-zero": ("enable_scale_to_zero", "bool"),
    "allow-zero-initial-scale": ("allow_zero_initial_scale", "bool"),
    "max-scale-up-rate": ("max_scale_up_rate", "float"),
    "max-scale-down-rate": ("max_scale_down_rate", "float"),
    "container-concurrency-target-percentage": ("container_concurrency_target_fraction", "float"),
    "container-concurrency-target-default": ("container_concurrency_target_default", "float"),
    "requests-per-second-target-default": ("rps_target_default", "float"),
    "target-burst-capacity": ("target_burst_capacity", "float"),
    "panic-window-percentage": ("panic_window_percentage", "float"),
    "activator-capacity": ("activator_capacity", "float"),
    "panic-threshold-percentage": ("panic_threshold_percentage", "float"),
    "initial-scale": ("initial_scale", "int32"),
    "min-scale": ("min_scale", "int32"),
    "max-scale": ("max_scale", "int32"),
    "max-scale-limit": ("max_scale_limit", "int32"),
    "stable-window": ("stable_window_s", "duration"),
    "scale-down-delay": ("scale_down_delay_s", "duration"),
    "scale-to-zero-grace-period": ("scale_to_zero_grace_period_s", "duration"),
    "scale-to-zero-pod-retention-period": ("scale_to_zero_pod_retention_s", "duration"),
}
DEFAULT = ClusterAutoscaler()
_GO_BOOL = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
            "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}
_KIND_TEXT = {"bool": "true or false", "float": "a number", "int32": "a 32-bit integer",
              "duration": "a Go duration such as '60s' or '1m30s'",
              "class": f"{KPA_CLASS!r} or {HPA_CLASS!r} (only these are simulated)"}


def _read(kind: str, value: Any) -> tuple[Any, str] | None:
    """(parsed value, ConfigMap string) as NewConfigFromMap parses `value`; None when it cannot. YAML numbers
    and booleans are taken for the keys of their type (ConfigMap data are strings; the patch writes strings)."""
    if kind == "bool":
        if isinstance(value, bool):
            return value, "true" if value else "false"
        return (_GO_BOOL[value], value) if isinstance(value, str) and value in _GO_BOOL else None
    if kind == "class":
        text = value.strip() if isinstance(value, str) else None  # configmap AsString trims
        return (text, value) if text in (KPA_CLASS, HPA_CLASS) else None
    if kind == "duration":
        seconds = parse_duration(value) if isinstance(value, str) and value == value.strip() else None
        return None if seconds is None else (seconds, value)
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    if kind == "int32" and isinstance(value, float) and value.is_integer():
        value = int(value)  # a JSON number handed over as a float
    text = value if isinstance(value, str) else repr(value)
    if kind == "int32":
        try:  # strconv.ParseInt(v, 10, 32): an optional sign and digits, nothing else
            n = int(text, 10) if text.lstrip("+-").isdigit() and text.isascii() else None
        except ValueError:
            n = None
        return (n, text) if n is not None and -INT32_MAX - 1 <= n <= INT32_MAX else None
    if text != text.strip() or "_" in text or not text.isascii():  # strconv.ParseFloat: ASCII, no spaces or _
        return None
    try:
        f = float(text)
    except (ValueError, OverflowError):
        return None
    return (f, text) if math.isfinite(f) else None


def parse_config_autoscaler(raw: Any, path: str, problems: list[Problem]) -> ClusterAutoscaler:
    """The ConfigMap data `raw` (a mapping of config-autoscaler keys) over Knative's defaults; each mistake is a
    Problem at `path[key]` (unknown key, unparsable value, or `validate()`'s range). Returns the defaults for any
    refused value, so parsing goes on and every mistake is reported."""
    if raw is None:
        return DEFAULT
    if not isinstance(raw, Mapping):
        problems.append(Problem(path, raw, "expected a mapping of knative-serving/config-autoscaler keys to "
                                "values, e.g. {max-scale-up-rate: \"10\"}"))
        return DEFAULT
    start = len(problems)
    upd: dict[str, Any] = {}
    given: list[tuple[str, str]] = []
    for key, value in raw.items():
        if key not in KEYS:
            import difflib
            close = difflib.get_close_matches(str(key), list(KEYS), n=1)
            problems.append(Problem(f"{path}[{key}]", value, "unknown knative-serving/config-autoscaler key"
                                    + (f"; did you mean {close[0]!r}?" if close else "; expected one of "
                                       + ", ".join(KEYS))))
            continue
        attr, kind = KEYS[key]
        parsed = _read(kind, value)
        if parsed is None:
            cite = "" if kind == "class" else " (config.go NewConfigFromMap)"
            problems.append(Problem(f"{path}[{key}]", value, f"expected {_KIND_TEXT[kind]}{cite}"))
            continue
        upd[attr] = parsed[0]
        given.append((key, parsed[1]))
    fraction = upd.get("container_concurrency_target_fraction")
    if fraction is not None and fraction > 1.0:  # NewConfigFromMap: a percentage; (0, 1] is a legacy fraction
        upd["container_concurrency_target_fraction"] = fraction / 100.0
    out = replace(DEFAULT, **upd, given=tuple(given))
    for key, allowed in _violations(out, set(raw)):
        if key in raw:
            problems.append(Problem(f"{path}[{key}]", raw[key], allowed + " (config.go validate)"))
        else:  # a default that a given key makes invalid (max-scale 0 beside a max-scale-limit)
            problems.append(Problem(f"{path}[{key}]", None, allowed + "; its default does not satisfy this, "
                                    "set it (config.go validate)"))
    if len(problems) > start:
        return DEFAULT
    return out


def _violations(c: ClusterAutoscaler, given: set):
    """(key, what is allowed) for each rule of config.go `validate()` that `c` breaks, in its order (a rule on
    two keys is reported on the one given)."""
    if c.scale_to_zero_grace_period_s <= 0:
        yield "scale-to-zero-grace-period", "expected a positive duration"
    if c.scale_down_delay_s < 0 or not float(c.scale_down_delay_s).is_integer():
        yield "scale-down-delay", "expected a duration >= 0s in whole seconds"
    if c.scale_to_zero_pod_retention_s < 0:
        yield "scale-to-zero-pod-retention-period", "expected a duration >= 0s"
    if c.target_burst_capacity < 0 and c.target_burst_capacity != -1:
        yield "target-burst-capacity", "expected a number >= 0, or -1 for unlimited"
    if not 0 < c.container_concurrency_target_fraction <= 1:
        yield "container-concurrency-target-percentage", "expected a percentage in (0, 100] (values up to 1 " \
                                                         "are read as a fraction)"
    elif c.container_concurrency_target_fraction * c.container_concurrency_target_default < TARGET_MIN:
        key = "container-concurrency-target-" + ("default" if "container-concurrency-target-default" in given
                                                 else "percentage")
        yield key, (f"expected container-concurrency-target-percentage × container-concurrency-target-default "
                    f">= {TARGET_MIN} (the default target concurrency)")
    if c.rps_target_default < TARGET_MIN:
        yield "requests-per-second-target-default", f"expected a number >= {TARGET_MIN}"
    if c.activator_capacity < 1:
        yield "activator-capacity", "expected a number >= 1"
    if c.max_scale_up_rate <= 1:
        yield "max-scale-up-rate", "expected a number greater than 1.0"
    if c.max_scale_down_rate <= 1:
        yield "max-scale-down-rate", "expected a number greater than 1.0"
    if not WINDOW_MIN_S <= c.stable_window_s <= WINDOW_MAX_S or not float(c.stable_window_s).is_integer():
        yield "stable-window", "expected a duration between 6s and 1h in whole seconds"
    if not PANIC_WINDOW_PCT_MIN <= c.panic_window_percentage <= PANIC_WINDOW_PCT_MAX:
        yield "panic-window-percentage", "expected a number between 1 and 100"
    if c.initial_scale < 0 or (c.initial_scale == 0 and not c.allow_zero_initial_scale):
        yield "initial-scale", "expected an integer >= 1 (or 0 with allow-zero-initial-scale: true)"
    if c.min_scale < 0:
        yield "min-scale", "expected an integer >= 0"
    lowest = 1 if c.max_scale_limit > 0 else 0  # a max-scale-limit needs a finite default max-scale
    if c.max_scale < lowest or (c.max_scale_limit > 0 and c.max_scale > c.max_scale_limit):
        yield "max-scale", (f"expected an integer between {lowest} and max-scale-limit ({c.max_scale_limit})"
                            if c.max_scale_limit > 0 else "expected an integer >= 0 (0 = unlimited)")
    if c.max_scale_limit < 0:
        yield "max-scale-limit", "expected an integer >= 0 (0 = no limit)"
    if c.max_scale > 0 and c.min_scale > c.max_scale:
        yield "min-scale", f"expected at most max-scale ({c.max_scale})"

