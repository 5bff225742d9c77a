"""What `pulumi up` stops with: the program under mocks refuses a stack edit before registering any resource."""

from __future__ import annotations

import pulumi
import pytest

from offline import run_program


def refusal(stack: str, edit, registered: list[str]) -> str:
    """The program's error message for `edit` of `stack`; asserts it failed and registered nothing (`registered`:
    the conftest fixture)."""
    with pytest.raises(pulumi.RunError) as err:
        run_program(stack, edit=edit)
    assert registered == []
    return str(err.value)
