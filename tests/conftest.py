"""Shared test set-up: the repository root on sys.path (as under the Pulumi CLI) and the shared data folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

SHARED_DATA = ROOT.parent / "shared" / "data" / "azure-llm-inference-2023"


@pytest.fixture(autouse=True)
def _own_result_cache(tmp_path, monkeypatch):
    """`preflight check` caches replications on disk: each test gets an empty cache of its own."""
    monkeypatch.setenv("KSERVE_PREFLIGHT_CACHE_DIR", str(tmp_path / "replication-cache"))


@pytest.fixture
def azure_conv_trace() -> Path:
    path = SHARED_DATA / "AzureLLMInferenceTrace_conv.csv"
    if not path.is_file():
        pytest.skip(f"Azure trace not available at {path}")
    return path


@pytest.fixture
def registered(monkeypatch):
    """Names of every resource the mocks are asked to create, even when the program then fails (tests that a
    failure stops the program before any resource use it, with a control that sees a good config's resources)."""
    import offline

    seen: list[str] = []
    original = offline.Mocks.new_resource
    monkeypatch.setattr(offline.Mocks, "new_resource", lambda self, args: (seen.append(args.name),
                                                                           original(self, args))[1])
    return seen
