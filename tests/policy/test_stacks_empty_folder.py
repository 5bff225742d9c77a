"""The pytest form of the CI check (tests/policy/test_stacks.py) fails over a folder with no stack file, as
`python -m policy.report --stack-dir` does; pytest alone would skip the empty parameter list and exit 0
(review rev13-diff F1)."""

from __future__ import annotations

import os
import subprocess
import sys

from stackconfig.load import ROOT


def _run_stack_check(stack_dir) -> subprocess.CompletedProcess:
    env = dict(os.environ, POLICY_STACK_DIR=str(stack_dir))
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           str(ROOT / "tests" / "policy" / "test_stacks.py"), "-k", "has_stacks or passes"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_the_check_fails_over_a_folder_with_no_stacks(tmp_path):
    (tmp_path / "README.md").write_text("not a stack\n")
    run = _run_stack_check(tmp_path)
    assert run.returncode != 0, run.stdout[-2000:]
    assert f"no Pulumi.<stack>.yaml file in {tmp_path}" in run.stdout
