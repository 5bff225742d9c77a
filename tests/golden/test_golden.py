"""Golden outputs: every example scenario and every shipped stack's gate gives byte-identical JSON.

Speed work must not change a single result. If a change alters results on purpose, regenerate with
`python3 tests/golden/regenerate.py` in a separate commit that says why.
"""

from __future__ import annotations

import json

import pytest

from golden.cases import TRACE, cases, golden_path

CASES = cases()


@pytest.mark.parametrize("name", sorted(CASES))
def test_output_is_byte_identical_to_the_golden_file(name):
    produce, needs_trace = CASES[name]
    if needs_trace and not TRACE.is_dir():
        pytest.skip(f"needs the Azure trace at {TRACE}")
    expected = golden_path(name).read_text(encoding="utf-8").rstrip("\n")
    got = produce()
    if got != expected:  # show which values moved, then fail
        assert json.loads(got) == json.loads(expected), "regenerate only for an intended change (see module doc)"
        pytest.fail("same values but different bytes (key order or float formatting changed)")


def test_every_case_has_a_golden_file():
    missing = [n for n in CASES if not golden_path(n).is_file()]
    assert not missing, f"run python3 tests/golden/regenerate.py for {missing}"
