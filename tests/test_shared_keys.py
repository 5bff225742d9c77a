"""Annotation keys and the KEDA in-flight metric names have one spelling each (review rev13-health F1, F11): the
writer (manifests/) and every reader (simulation/, validation/, policy/, stackconfig/) import them from their home,
so renaming one there cannot leave a reader silently looking for the old key."""

from __future__ import annotations

import ast
from pathlib import Path

import validation.annotations as keys
from simulation.autoscaler.promql import IN_FLIGHT_GAUGES, TRITON_RATE_METRIC
from tests.project_sources import ROOT, project_sources

HOMES = {"validation/annotations.py", "simulation/autoscaler/promql.py"}
# Literals that stay, with why: KServe's serviceAnnotationDisallowedList as shipped; the keys a service may set,
# a table being rewritten by the dead-code fix of the same review (F5).
ALLOWED = {("manifests/kserve_config.py", keys.MAX_SCALE_KEYS[0]),
           ("stackconfig/autoscaling.py", keys.INITIAL_SCALE),
           ("stackconfig/autoscaling.py", keys.ACTIVATION_SCALE),
           ("stackconfig/autoscaling.py", keys.PROGRESS_DEADLINE_KEY)}


def _spellings() -> set[str]:
    out = {v for k, v in vars(keys).items() if k.isupper() and isinstance(v, str)}
    out |= set(keys.MAX_SCALE_KEYS) | set(keys.TRITON_CAP_ANNOTATIONS.values())
    return out | {m for gauges in IN_FLIGHT_GAUGES.values() for m in gauges} | {TRITON_RATE_METRIC}


def _literals(path: Path, wanted: set[str]) -> set[str]:
    return {n.value for n in ast.walk(ast.parse(path.read_text(), str(path)))
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in wanted}


def test_each_key_and_metric_name_is_spelled_only_at_its_home():
    wanted = _spellings()
    found = {(rel, value) for path in project_sources(ROOT, {"tests", "docs"})
             if (rel := path.relative_to(ROOT).as_posix()) not in HOMES for value in _literals(path, wanted)}
    assert found - ALLOWED == set()


def test_the_check_sees_a_second_spelling(tmp_path):
    path = tmp_path / "m.py"
    path.write_text('MODE = "serving.kserve.io/deploymentMode"\nQ = "sum(x)"\n')
    assert _literals(path, _spellings()) == {"serving.kserve.io/deploymentMode"}


def test_the_triton_caps_the_stack_writes_are_the_ones_the_simulation_and_policies_read():
    from policy.resources import BATCH_CAP_ANNOTATIONS, INPUT_CAP_ANNOTATIONS
    from simulation.isvc import _ANNOTATED
    assert {v: k for k, v in _ANNOTATED["triton"].items()} == keys.TRITON_CAP_ANNOTATIONS
    assert set(INPUT_CAP_ANNOTATIONS + BATCH_CAP_ANNOTATIONS) <= set(keys.TRITON_CAP_ANNOTATIONS.values())


def test_the_serving_port_and_model_mount_are_stated_once():
    """validation/defaults.py is their home (review rev13-health F4); the flag tables import them too."""
    from validation.defaults import MODEL_MOUNT, SERVING_PORT

    found = {path.relative_to(ROOT).as_posix() for path in project_sources(ROOT, {"tests", "docs"})
             for n in ast.walk(ast.parse(path.read_text(), str(path)))
             if isinstance(n, ast.Constant) and type(n.value) in (int, str) and n.value in (SERVING_PORT, MODEL_MOUNT)}
    assert found == {"validation/defaults.py"}
