"""The source-reading tests see the project's files, not a virtualenv the policy pack creates inside it."""

from __future__ import annotations

from tests.project_sources import project_sources


def test_a_virtualenv_dot_folders_and_caches_inside_the_tree_are_not_project_code(tmp_path):
    for rel in ("policy/rules.py", "policy/venv/lib/python3.11/site-packages/pkg/server.py",
                "policy/.venv/x.py", ".git/hooks/h.py", "simulation/__pycache__/m.py", "tests/t.py", "main.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("DEFAULT_PORT = 8080\n")
    found = [p.relative_to(tmp_path).as_posix() for p in project_sources(tmp_path, {"tests"})]
    assert found == ["main.py", "policy/rules.py"]
