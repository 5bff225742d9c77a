"""The CI check of YOUR stacks under pytest: every `Pulumi.<stack>.yaml` in `stacks/` (or in the folder named by
`POLICY_STACK_DIR`) passes every mandatory policy rule, whatever the stacks are called.

    python -m pytest tests/policy/test_stacks.py                      # every stack in stacks/
    POLICY_STACK_DIR=ci/stacks python -m pytest tests/policy/test_stacks.py -k qa

A folder with no `Pulumi.<stack>.yaml` fails it (`test_the_stack_folder_has_stacks`), as `python -m policy.report
--stack-dir` exits 2 there: a CI job pointed at the wrong folder must not go green checking nothing. Advisory
findings never fail it (`python -m policy.report` prints them); a stack the program refuses fails with its
key-path problems, not a traceback. It is the pytest form of `python -m policy.report`, which docs/policy.md names as
the CI command. The project's own rule tests (the rest of tests/policy/) run on frozen fixtures and never read
`stacks/`.
"""

from __future__ import annotations

import os

import pytest

from policy.report import check_stack
from policy.rules import mandatory
from stackconfig.load import stack_file, stack_folder, stack_names
from validation.errors import InputError

STACK_DIR = os.environ.get("POLICY_STACK_DIR") or None


def mandatory_problems(stack: str, stack_dir: str | os.PathLike | None = STACK_DIR) -> list[str]:
    """One line per mandatory violation of `stack` (advisory findings left out), or the program's refusal."""
    try:
        found = check_stack(stack, stack_dir)
    except InputError as err:
        return [f"{stack_file(stack, stack_dir=stack_dir)} is refused: {err}"]
    return [f"[{v.rule}] {v.resource_type.rsplit(':', 1)[-1]} {v.resource_name}"
            + (f" ({v.stack_file}: {v.key})" if v.key else "") + f": {v.message}" for v in mandatory(found)]


def test_the_stack_folder_has_stacks():
    # pytest skips a test whose parameter list is empty (`empty_parameter_set_mark`): without this test an empty
    # folder would pass the check.
    assert stack_names(stack_dir=STACK_DIR), (
        f"no Pulumi.<stack>.yaml file in {stack_folder(stack_dir=STACK_DIR)}: nothing to check (set POLICY_STACK_DIR "
        "to the folder that holds your stack files)")


@pytest.mark.parametrize("stack", stack_names(stack_dir=STACK_DIR))
def test_stack_passes_every_mandatory_rule(stack):
    problems = mandatory_problems(stack)
    assert not problems, f"{len(problems)} mandatory problem(s) in stack {stack}:\n" + "\n".join(
        f"  - {p}" for p in problems)
