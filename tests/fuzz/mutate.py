"""Hypothesis strategies that mutate a valid config or scenario the way users and copy-paste get it wrong.

A mutation picks a node of the nested mapping (any depth) and replaces its value, deletes it, misspells its key,
adds an unknown key, wraps it in a list or duplicates a list item. Values come from a pool of the boundary and
wrong-type values that found bugs before (issue 9) plus arbitrary integers, floats and text.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st

TRICKY = [None, True, False, 0, -1, 1, 2, 3, 0.5, -0.5, 0.999, 1.0000001, 1e308, float("nan"), float("inf"),
          10 ** 40, 10 ** 310, "", " ", "x", "0", "-1", "1.5", "nan", "inf", "2h", "0s", "5s", "61m", "1e9",
          "\U0001F680", "a b", "null", "latest", "s3://", "hf://a b", "subnet-1", "UPPER", "-lead", "a" * 300,
          [], {}, [1], [[]], {"a": 1}, {"": None}, "2024-01-01", "nvidia.com/gpu", "Standard", "Knative",
          "RawDeployment", "concurrency", "rps", "cpu", "vllm", "naive", "triton", "tgi"]

VALUES = st.one_of(st.sampled_from(TRICKY), st.integers(min_value=-10 ** 6, max_value=10 ** 12),
                   st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                   st.lists(st.sampled_from(TRICKY[:30]), max_size=3))


def _nodes(data: Any, path: tuple = ()) -> list[tuple]:
    """Every path into the nested data (the root included)."""
    out = [path]
    if isinstance(data, dict):
        for k, v in data.items():
            out += _nodes(v, path + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _nodes(v, path + (i,))
    return out


def _parent(data: Any, path: tuple) -> Any:
    for step in path[:-1]:
        data = data[step]
    return data


def _typo(key: str, i: int) -> str:
    if len(key) < 2:
        return key + "x"
    i %= len(key) - 1
    return key[:i] + key[i + 1] + key[i] + key[i + 2:] if i % 2 else key[:i] + key[i + 1:]


@st.composite
def mutated(draw: Any, base: Any, max_mutations: int = 3) -> tuple[Any, list[str]]:
    """(a mutated deep copy of `base`, a description of each mutation for the failure message)."""
    data = copy.deepcopy(base)
    done: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=max_mutations))):
        nodes = [p for p in _nodes(data) if p]
        if not nodes:
            break
        path = draw(st.sampled_from(nodes))
        parent, key = _parent(data, path), path[-1]
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "typo", "unknown", "wrap", "dup"]))
        if op == "replace":
            parent[key] = copy.deepcopy(draw(VALUES))  # never the pool's own list or dict: no shared state
        elif op == "delete":
            del parent[key]
        elif op == "typo" and isinstance(parent, dict) and isinstance(key, str):
            parent[_typo(key, draw(st.integers(0, 50)))] = parent.pop(key)
        elif op == "unknown" and isinstance(parent[key], dict):
            name = draw(st.sampled_from(["extra", "minReplica", "rate", "kind", "name"]))
            parent[key][name] = copy.deepcopy(draw(VALUES))
        elif op == "wrap":
            parent[key] = [parent[key]]
        elif op == "dup" and isinstance(parent[key], list) and parent[key]:
            parent[key].append(copy.deepcopy(parent[key][0]))
        else:
            parent[key] = copy.deepcopy(draw(VALUES))
            op = "replace"
        done.append(f"{op} {'.'.join(map(str, path))}")
    return data, done
