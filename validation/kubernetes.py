"""Offline manifest validation: kubernetes-validate (strict) for core kinds, our JSON schemas for the CRDs
(InferenceService, KEDA ScaledObject).

kubernetes-validate has no schema for CRDs (it raises SchemaNotFoundError) and cannot register one, so the
CRDs go through `jsonschema` with the CRD-subset schemas in `schemas/`
(../shared/reference/pulumi-offline-testing.md §6). Numbers that arrive as integral floats (Pulumi's wire
format) are normalised to ints first.
"""

from __future__ import annotations

import json
import math
import re
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

GPU_RESOURCE = "nvidia.com/gpu"  # the NVIDIA device plugin's extended resource
KNATIVE_MAX_TIMEOUT_S = 600  # knative/serving pkg/apis/config/defaults.go: max-revision-timeout-seconds
SCHEMAS = Path(__file__).resolve().parent / "schemas"
CRD_SCHEMAS = {("serving.kserve.io/v1beta1", "InferenceService"): "inferenceservice-v1beta1.json",
               ("keda.sh/v1alpha1", "ScaledObject"): "scaledobject-keda-v1alpha1.json"}


def normalise(value: Any) -> Any:
    """Integral floats → ints, recursively (mock inputs and CustomResource specs carry floats)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    return value


@lru_cache(maxsize=None)
def _crd_validator(filename: str):
    import jsonschema

    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / filename).read_text()))


@lru_cache(maxsize=None)
def _kubernetes_validate():
    """kubernetes_validate (imported here: the CrossGuard pack uses this module's helpers without it), its schema
    files parsed once per process. Its `validate` reads the kind's schema and the 1.4 MB `_definitions.json` of
    the version on every call (≈ 10 ms; a stack's check validates ~10 manifests, the tests thousands); it only
    reads the parsed schemas, so one copy per file serves every call."""
    import kubernetes_validate
    from kubernetes_validate import utils

    if not hasattr(utils.schema_contents, "cache_info"):   # ≈ 3 MB per parsed definitions file: a few versions
        utils.schema_contents = lru_cache(maxsize=16)(utils.schema_contents)
    return kubernetes_validate


def _crd_schema(manifest: dict) -> str | None:
    key = (manifest.get("apiVersion"), manifest.get("kind"))
    return CRD_SCHEMAS.get(key) if all(isinstance(k, str) for k in key) else None


def crd_errors(manifest: dict) -> list[tuple[str, str]]:
    """(dotted path, message) of every violation of our CRD schema (InferenceService, ScaledObject); [] for others."""
    manifest = normalise(manifest)
    crd = _crd_schema(manifest)
    if not crd:
        return []
    return [(".".join(map(str, e.absolute_path)) or "(root)", e.message)
            for e in sorted(_crd_validator(crd).iter_errors(manifest), key=lambda e: list(map(str, e.absolute_path)))]


def validation_errors(manifest: dict, kubernetes_version: str = "1.36") -> list[str]:
    """Every schema violation of one manifest, as readable lines (empty when valid)."""
    manifest = normalise(manifest)
    meta = manifest.get("metadata")
    where = f"{manifest.get('kind')}/{meta.get('name') if isinstance(meta, dict) else None}"
    if _crd_schema(manifest):
        return [f"{where}: {path}: {message}" for path, message in crd_errors(manifest)]
    kubernetes_validate = _kubernetes_validate()
    try:
        kubernetes_validate.validate(manifest, kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as err:
        return [f"{where}: {'.'.join(map(str, err.path)) or '(root)'}: {err.message}"]
    except kubernetes_validate.utils.SchemaNotFoundError:
        return [f"{where}: no schema for {manifest.get('apiVersion')} {manifest.get('kind')}"]
    return []


# One `[0-9]*(\.[0-9]*)?unit` part of Go's `time.ParseDuration` grammar (`[-+]?(...)+`): the unit is every
# character up to the next digit or '.', so a space makes an unknown unit. ASCII digits only, as Go reads them.
_DURATION_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_DURATION_NS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
                "h": 3600 * 10**9}
_GO_DURATION_MAX_NS = 2**63 - 1  # time.Duration is int64 nanoseconds; larger is "invalid duration"


def parse_duration(text: object) -> float | None:
    """Seconds in a Go `time.ParseDuration` string ("90s", "1m30s", "500ms", ".5h", "+2m", "1500us"), as Knative
    parses its duration annotations (`pkg/apis/autoscaling/register.go`); "0" is 0; None if malformed, not a
    string, or negative (every duration the stack and the simulation read must be >= 0, and their range checks
    name the allowed values). Whitespace is malformed, as in Go: Knative's webhook parses the annotation verbatim
    (serving `pkg/apis/serving/v1/revision_validation.go` validateProgressDeadlineAnnotation,
    `pkg/apis/autoscaling/annotation_validation.go`), so " 15m" is refused there."""
    if not isinstance(text, str):
        return None
    s = text[1:] if text[:1] in "+-" else text
    if text[:1] == "-" and s != "0":
        return None
    if s == "0":
        return 0.0
    pos, ns = 0, 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        whole, frac, unit = m.groups()
        if not (whole or frac) or unit not in _DURATION_NS:  # ".s", a missing or unknown unit
            return None
        whole = whole.lstrip("0")
        if len(whole) > 19:  # past int64 before the unit: Go's leadingInt overflows
            return None
        # Go truncates to whole ns; fraction digits past 20 cannot reach a nanosecond even in hours
        ns += int(Fraction(f"{whole or 0}.{(frac or '0')[:20]}") * _DURATION_NS[unit])
        pos = m.end()
    return ns / 1e9 if pos and ns <= _GO_DURATION_MAX_NS else None


def startup_budget(initial_delay_s: float, period_s: float, failure_threshold: float) -> float:
    """Seconds a container is sure to get to pass its startup probe: d + p·(f − 1). The kubelet's probe worker
    ticks every period from the pod's admission, not from the container's start (pkg/kubelet/prober/worker.go),
    so the f-th failed probe, which kills the container, lands between d + p·(f − 1) and d + p·f after the start
    (simulation.isvc.Probe.kill_after_s). The loader, the policy and the simulation's tests all size by this."""
    return initial_delay_s + period_s * (failure_threshold - 1)


def startup_failures_needed(initial_delay_s: float, period_s: float, load_s: float) -> int:
    """The smallest failureThreshold whose `startup_budget` covers `load_s` (period > 0)."""
    return max(1, math.ceil((load_s - initial_delay_s) / period_s) + 1)


def image_pinned(image: str) -> bool:
    """A tag other than `latest`, or a digest: the same build on every node and every cold start."""
    if "@sha256:" in image:
        return True
    last = image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return bool(tag) and tag != "latest"


def expandable_segments(conf: str | None) -> bool:
    """PYTORCH_CUDA_ALLOC_CONF is `key:value` pairs separated by ','; the last setting of a key wins."""
    on = False
    for item in (conf or "").split(","):
        key, _, value = item.strip().partition(":")
        if key.strip() == "expandable_segments":
            on = value.strip() == "True"
    return on


def tolerates(toleration: dict, taint: dict) -> bool:
    """k8s.io/api/core/v1 `Toleration.ToleratesTaint`: effect and key must match when set; `Exists` matches any
    value, `Equal` (the default) compares values."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.get("effect"):
        return False
    key = toleration.get("key") or ""
    if key and key != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    return operator == "Equal" and str(toleration.get("value") or "") == str(taint.get("value") or "")
