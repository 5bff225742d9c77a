"""What the CLI-argument tests share: a stand-in that fails a test when a command starts its work before
checking its arguments, and the exit-2 assertion (no traceback, no internal error)."""

from __future__ import annotations

import pytest

from preflight import check as cli
from preflight import whatif


def refuse_work(monkeypatch, whatif_step: str) -> None:
    """Make `preflight check`, `whatif` (from `whatif_step`, the first step that counts as work) and `tune` fail
    the test if reached."""
    def refuse(*args, **kwargs):
        raise AssertionError("the command started its work before checking its arguments")

    import tuner.cli

    monkeypatch.setattr(cli, "check", refuse)
    monkeypatch.setattr(whatif, whatif_step, refuse)
    monkeypatch.setattr(tuner.cli, "tune", refuse)


def exit_2(argv, capsys) -> str:
    """Run the CLI on `argv`; assert it exits 2 without a traceback; its stderr."""
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2, err
    assert "Traceback" not in err and "internal error" not in err
    return err
