"""`preflight whatif` edits a stack's values (--set, --workload, --rate-scale) before the stack schema reads them:
the edits must survive any malformed value and leave it for the schema to name (session 8 fuzz review items 6,
10). Each used to exit 3 ("internal error") on a TypeError, ValueError or RecursionError."""

from __future__ import annotations

import copy

import pytest

import preflight.whatif as whatif
from preflight import check as cli
from preflight.overrides import apply_sets, stack_values
from validation.errors import InputError

PROJECT, DEV = stack_values("dev")


def _sides_with(monkeypatch, edit, **kwargs):
    values = copy.deepcopy(DEV)
    edit(values)
    monkeypatch.setattr(whatif, "stack_values", lambda stack, rev=None: (PROJECT, copy.deepcopy(values)))
    return whatif.sides("dev", kwargs.pop("sets", []), **kwargs)


def _trace(rate_scale):
    def edit(values):
        values["services"][0]["workload"] = {"kind": "trace", "rate_scale": rate_scale,
                                             "path": "examples/traces/azure-conv-sample.csv"}
    return edit


def test_a_malformed_trace_rate_scale_is_named_not_multiplied(monkeypatch):
    with pytest.raises(InputError) as err:
        _sides_with(monkeypatch, _trace("0.5x"), rate_scale=2.0)
    assert "kserve-preflight:services[0].workload.rate_scale: got '0.5x'; expected a number" in str(err.value)


@pytest.mark.parametrize("sets, service, expected", [
    (["services=5"], None, "kserve-preflight:services: got 5; expected a list"),
    (["services.chat.name={}"], ["nope"], "kserve-preflight:services[0].name: got {}; expected a non-empty string"),
    (["services.chat.name=[1]"], ["chat"], "kserve-preflight:services[0].name: got [1]"),
])
def test_set_edits_that_break_the_services_list_are_named(sets, service, expected, monkeypatch):
    with pytest.raises(InputError) as err:
        _sides_with(monkeypatch, lambda v: None, sets=sets, rate_scale=2.0, services=service)
    assert expected in str(err.value)


def test_a_set_path_deeper_than_a_stack_file_may_nest_is_refused(capsys):
    deep = ".".join(["a"] * 500)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["whatif", "--stack", "dev", "--set", f"{deep}=1"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "internal error" not in err
    assert "(500 levels)'; expected a PATH at most 64 levels deep" in err
    assert apply_sets(DEV, [".".join(["a"] * 64) + "=1"])["a"]["a"]  # the control: 64 levels are an edit


def test_whatif_on_a_malformed_stack_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(whatif, "stack_values", lambda stack, rev=None: (PROJECT, _edited(_trace("0.5x"))))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["whatif", "--stack", "dev", "--rate-scale", "2"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "internal error" not in err and "rate_scale: got '0.5x'" in err


def _edited(edit):
    values = copy.deepcopy(DEV)
    edit(values)
    return values
