"""Every `preflight check` / `whatif` / `tune` command quoted in README.md and docs/ goes through the real CLI
parser and the stack config loader (not the simulation), so a documented command cannot go stale: the README's
`whatif --stack prod --set services.chat.containerConcurrency=8` exited 2 (prod's scaleTarget 12 > 8)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

import preflight.check as check_cli
import preflight.whatif as whatif
import simulation.executors
import tuner.cli
from stackconfig.load import load_stack

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
START = re.compile(r"(?:python3? -m preflight|kserve-preflight) +(?:check|whatif|tune)\b")
OPTIONAL = re.compile(r"(?:(?<=\s)|^)\[([^\[\]]*)\]")            # a synopsis's `[--json]`, `[--seed N]`
PLACEHOLDER = re.compile(r"(?<![\w.-])[A-Z][A-Z,]*(?![\w.-])|[<>|…]|\.\.\.")   # N, DIR, A,B, <stack>, a|b


def _fill(command: str) -> str:
    """A synopsis as the command it stands for: optional parts with a placeholder dropped, the others kept."""
    return OPTIONAL.sub(lambda m: "" if PLACEHOLDER.search(m.group(1)) else m.group(1), command)


def _candidates(text: str) -> list[str]:
    """Inline code spans (may wrap a line) and fenced-block lines (continuations joined) that hold a command."""
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    out = [" ".join(c.split()) for c in re.findall(r"`([^`]+)`", re.sub(r"```.*?```", "", text, flags=re.S))]
    for block in blocks:
        out += block.replace("\\\n", " ").splitlines()
    return out


def documented() -> list[tuple[str, list[str]]]:
    found = []
    for path in DOCS:
        for cand in _candidates(path.read_text(encoding="utf-8")):
            m = START.search(cand)
            if not m:
                continue
            command = " ".join(_fill(re.split(r"\s(?:&&|;|#)\s?", cand[m.start():])[0]).split())
            tokens = shlex.split(command)
            argv = tokens[3:] if tokens[0].startswith("python") else tokens[1:]
            if len(argv) == 1 or "--against" in argv or any(PLACEHOLDER.search(t) for t in argv):
                continue   # a subcommand's name, not a command; --against REV reads history a clone may lack
            found.append((f"{path.name}: {command}", argv))
    return found


COMMANDS = documented()


class _Parsed(Exception):
    """Raised where the CLI would start simulating: the command got past the parser and the loader."""


class _NoExecutor:
    def close(self) -> None:
        pass


def test_the_docs_quote_commands_this_test_sees():
    names = " ".join(c for c, _ in COMMANDS)
    assert "whatif --stack prod --set services.chat.containerConcurrency=8" in names
    assert "check --stack prod --dask" in names and "--knobs minReplicas,nodeMin" in names


@pytest.mark.parametrize("where, argv", COMMANDS, ids=[c for c, _ in COMMANDS])
def test_documented_command_parses_and_its_stack_config_loads(where, argv, monkeypatch, capsys, tmp_path):
    def check_then_stop(stack, *args, **kwargs):
        load_stack(stack)
        raise _Parsed

    def stop(*args, **kwargs):
        raise _Parsed

    monkeypatch.chdir(tmp_path)   # --plot DIR and the like are checked (and created) where the user stands
    monkeypatch.setenv("KSERVE_PREFLIGHT_DEBUG", "1")   # let _Parsed through the CLI's last-resort handler
    monkeypatch.setattr(simulation.executors, "make_executor", lambda *a, **k: _NoExecutor())
    monkeypatch.setattr(check_cli, "make_executor", lambda *a, **k: _NoExecutor())
    monkeypatch.setattr(check_cli, "check", check_then_stop)
    monkeypatch.setattr(whatif, "compare", stop)        # after `sides`: both configs parsed by the loader
    monkeypatch.setattr(tuner.cli, "tune", stop)        # after the stack, --service, --knobs, --price checks
    try:
        with pytest.raises(_Parsed):
            check_cli.main(argv)
    except SystemExit as exit_:
        pytest.fail(f"{where}: exit {exit_.code}\n{capsys.readouterr().err}")


def test_the_readmes_tuner_knobs_are_the_names_knobs_takes():
    """README's tuner section once listed `initial-scale`, `scale-down-delay`: `--knobs` refuses those."""
    from tuner.space import KNOBS

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = text[text.index("searches the service's knobs"):text.index("the names `--knobs` takes")]
    names = re.findall(r"`([^`]+)`", listed)
    assert set(names) == set(KNOBS), set(names) ^ set(KNOBS)
