"""Offline manifest validation: kubernetes-validate (strict) for core kinds, our JSON schema for InferenceService.

kubernetes-validate has no schema for CRDs (it raises SchemaNotFoundError) and cannot register one, so the
InferenceService goes through `jsonschema` with the CRD-subset schema in `schemas/`
(../shared/reference/pulumi-offline-testing.md §6). Numbers that arrive as integral floats (Pulumi's wire
format) are normalised to ints first.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate

SCHEMAS = Path(__file__).resolve().parent / "schemas"
CRD_SCHEMAS = {("serving.kserve.io/v1beta1", "InferenceService"): "inferenceservice-v1beta1.json"}


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
def _crd_validator(filename: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((SCHEMAS / filename).read_text()))


def validation_errors(manifest: dict, kubernetes_version: str = "1.31") -> list[str]:
    """Every schema violation of one manifest, as readable lines (empty when valid)."""
    manifest = normalise(manifest)
    where = f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}"
    crd = CRD_SCHEMAS.get((manifest.get("apiVersion"), manifest.get("kind")))
    if crd:
        return [f"{where}: {'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
                for e in sorted(_crd_validator(crd).iter_errors(manifest), key=lambda e: list(e.absolute_path))]
    try:
        kubernetes_validate.validate(manifest, kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as err:
        return [f"{where}: {'.'.join(map(str, err.path)) or '(root)'}: {err.message}"]
    except kubernetes_validate.utils.SchemaNotFoundError:
        return [f"{where}: no schema for {manifest.get('apiVersion')} {manifest.get('kind')}"]
    return []
