"""Read a stack's config the way the Pulumi CLI hands it over, from the program or straight from the YAML files.

The CLI merges `Pulumi.yaml` `config:` defaults with `<stackConfigDir>/Pulumi.<stack>.yaml` and passes the result
to the program as `"<project>:<key>"` → string (JSON for objects). The SDK never reads those files itself
(../shared/reference/pulumi-offline-testing.md §0), so offline tools and tests use `stack_config_values`.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import Any, Mapping

from validation.errors import InputError, Problem
from validation.yaml_input import MAX_DEPTH, MAX_INT_DIGITS, plain, read_yaml
from stackconfig.schema import PROJECT_ROOT as ROOT
from stackconfig.schema import SECTIONS, StackConfig, parse_stack_config


# A key of another namespace is another package's config, and the CLI hands every key to the program: the
# providers the program uses (aws: region and profile, README "Deploy"; kubernetes), Pulumi's own (pulumi:tags …),
# and whatever an ESC environment the stack imports (`environment:`) carries for other programs (datadog:apiKey,
# awsx:…, azure-native:…). Those pass. What no reader takes and the project would miss is refused
# (`_namespace_problem`): a key without a namespace, a namespace close to the project's (`kserve-prefligth:
# coldStart`: difflib's ratio ≥ 0.6, `get_close_matches`' cutoff), or one of the project's sections under another
# namespace (`kserve:gpuNodeGroup`), whose section would silently fall back to its defaults.
# Sections named with a word other packages also use as a key of their own (kubernetes:cluster, the kubeconfig
# cluster; azure:environment, azure-native:environment, the cloud): under another namespace refused only while the
# project's own key is missing, i.e. when it looks moved rather than another package's.
SHARED_SECTION_WORDS = ("cluster", "environment")
# The top-level keys of a stack settings file (Pulumi docs, "Pulumi stack settings file reference").
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")


def read_project(root: Path = ROOT) -> dict:
    problems: list[Problem] = []
    project = read_yaml(root / "Pulumi.yaml", "Pulumi.yaml", problems)
    if problems:
        raise InputError(problems)
    if not isinstance(project, dict) or not isinstance(project.get("name"), str):
        raise InputError([Problem(str(root / "Pulumi.yaml"), project, "expected a Pulumi project file with a name")])
    return project


def stack_folder(root: Path = ROOT, stack_dir: Path | str | None = None) -> Path:
    """Where the `Pulumi.<stack>.yaml` files are: `stack_dir` when given (a team's own folder, `--stack-dir`, read
    with this project's `Pulumi.yaml`), else the project's `stackConfigDir`."""
    if stack_dir is None:
        return root / read_project(root).get("stackConfigDir", ".")
    if not Path(stack_dir).is_dir():
        raise InputError([Problem("--stack-dir", str(stack_dir), "expected a folder of Pulumi.<stack>.yaml files")])
    return Path(stack_dir)


def stack_names(root: Path = ROOT, stack_dir: Path | str | None = None) -> list[str]:
    """Every `Pulumi.<stack>.yaml` entry of the stack folder; one that is not a readable file (a folder, a dangling
    link) is named when it is read (`stack_config_values`), not reported as a missing stack."""
    folder = stack_folder(root, stack_dir)
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))


def stack_config_values(stack: str, root: Path = ROOT,
                        stack_dir: Path | str | None = None) -> tuple[str, dict[str, Any]]:
    """(project name, {"<ns>:<key>": native value}) as the CLI would merge them for `stack`."""
    project = read_project(root)
    name = project["name"]
    path = stack_folder(root, stack_dir) / f"Pulumi.{stack}.yaml"
    if not os.path.lexists(path):   # a folder, a FIFO, a dangling link: read_yaml below says what it is
        raise InputError([Problem("--stack", stack, "expected one of " + ", ".join(stack_names(root, stack_dir)))])
    values: dict[str, Any] = {}
    for key, spec in (project.get("config") or {}).items():
        full = key if ":" in key else f"{name}:{key}"
        if isinstance(spec, dict) and "default" in spec:
            values[full] = spec["default"]
        elif not isinstance(spec, dict):
            values[full] = spec
    problems: list[Problem] = []
    stack_file = read_yaml(path, str(path), problems)
    if problems:
        raise InputError(problems, str(path))
    stack_file = stack_file or {}
    if not isinstance(stack_file, dict):
        raise InputError([Problem(str(path), stack_file, "expected a mapping with a `config:` key (a Pulumi stack "
                                  "settings file)")])
    unknown = [key for key in stack_file if key not in STACK_FILE_KEYS]
    if unknown:   # `confg:` would leave every key unread and report only "cluster: this key is required"
        raise InputError([Problem(f"{path}: {key}", key, "expected a key of a Pulumi stack settings file: "
                                  + ", ".join(STACK_FILE_KEYS) + _did_you_mean(str(key), STACK_FILE_KEYS))
                          for key in unknown], str(path))
    config = stack_file.get("config") or {}
    if not isinstance(config, dict):
        raise InputError([Problem(f"{path}: config", config, 'expected a mapping of "<namespace>:<key>" to values, '
                                  f'e.g. "{name}:cluster"')])
    values.update(config)
    return name, values


class DuplicateKey(ValueError):
    """A JSON object that names a key twice (json keeps the last silently)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(repr(key))
        out[key] = value
    return out


def project_values(values: Mapping[str, Any], project: str, source: str = "") -> dict[str, Any]:
    """The project's own keys, prefix stripped; string values that hold JSON (as the CLI passes objects) decoded."""
    out: dict[str, Any] = {}
    bad = [key for key in values if not isinstance(key, str)]
    if bad:
        raise InputError([Problem(f"config.{k!r}", values[k], f'expected a "<namespace>:<key>" string key such as '
                                  f'"{project}:cluster" (quote it)') for k in bad])
    problems: list[Problem] = []
    for key, value in values.items():
        ns, colon, short = key.partition(":")
        if ns != project or not colon:
            problem = _namespace_problem(key, project, values)
            if problem:
                problems.append(problem)
            continue
        if isinstance(value, str) and value[:1] in "[{":
            try:
                value = json.loads(value, object_pairs_hook=_unique_keys)
            except DuplicateKey as err:
                problems.append(Problem(f"{project}:{short}", f"{value[:80]}…" if len(value) > 80 else value,
                                        f"expected each key once in a JSON object; {err} appears twice"))
                continue
            except json.JSONDecodeError:
                pass  # left a string: the typed reader reports it where a mapping or list was expected
            except RecursionError:
                problems.append(Problem(f"{project}:{short}", "(…)", f"expected JSON nested at most {MAX_DEPTH} "
                                        "levels deep"))
                continue
            except ValueError:  # Python's int() refuses more than 4,300 digits (sys.int_info)
                problems.append(Problem(f"{project}:{short}", f"{value[:40]}…", f"expected JSON whose numbers have "
                                        f"at most {MAX_INT_DIGITS} digits"))
                continue
        out[short] = plain(value, f"{project}:{short}", problems)
    if problems:
        raise InputError(problems, source)
    return out


def _did_you_mean(word: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(word, list(known), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _namespace_problem(key: str, project: str, values: Mapping[str, Any]) -> Problem | None:
    """The problem with a key outside the project's namespace that the project would miss (see SHARED_SECTION_WORDS):
    no namespace, a namespace close to the project's, or one of the project's sections; None for another
    package's key."""
    ns, colon, short = key.partition(":")
    if not colon:   # `cluster:` without a namespace: the CLI refuses it (`<namespace>:<name>`)
        hint = f"; did you mean {f'{project}:{ns}'!r}?" if ns in SECTIONS else ""
        return Problem(key, key, f'expected a "<namespace>:<key>" key such as "{project}:cluster"{hint}')
    hint = f"; did you mean {f'{project}:{short}'!r}?"
    if difflib.get_close_matches(ns, [project], n=1):
        return Problem(key, ns, f"expected the namespace {project!r} (this project's keys): {ns!r} is close to it "
                       "but is another namespace, which no reader of this program takes, so the key would be "
                       f"ignored{hint}")
    if short in SECTIONS and not (short in SHARED_SECTION_WORDS and f"{project}:{short}" in values):
        return Problem(key, ns, f"expected the namespace {project!r} for {short!r}, one of this project's "
                       f"sections: under {ns!r} (another package's config, passed over by this program) the "
                       f"section would fall back to its defaults{hint}")
    return None


def stack_file(stack: str, root: Path = ROOT, stack_dir: Path | str | None = None) -> str:
    """The stack's settings file as a user names it: `<stackConfigDir>/Pulumi.<stack>.yaml` (`<stack_dir>/…`)."""
    if stack_dir is not None:
        return str(Path(stack_dir) / f"Pulumi.{stack}.yaml")
    return f"{read_project(root).get('stackConfigDir', '.')}/Pulumi.{stack}.yaml"


def program_refusal(stack: str, err: Exception, root: Path = ROOT,
                    stack_dir: Path | str | None = None) -> InputError:
    """The InputError an offline tool reports when the program under mocks refused `stack` (a `pulumi.RunError`):
    the program's own problems (program.py `ConfigRefusal`: key path, value, what is allowed) against the stack's
    settings file; a refusal without problems (the admission webhooks' rules, the SLO gate) as one problem naming
    the file, with the program's message."""
    problems = getattr(err, "problems", None)
    if problems:
        return InputError(problems, stack_file(stack, root, stack_dir))
    return InputError([Problem(stack_file(stack, root, stack_dir), "(refused by the program)", str(err))])


def load_stack(stack: str, root: Path = ROOT, stack_dir: Path | str | None = None) -> StackConfig:
    """Parse a stack's config from its YAML files (for `render`, the simulation gate and tests)."""
    project, values = stack_config_values(stack, root, stack_dir)
    source = stack_file(stack, root, stack_dir)
    return parse_stack_config(project_values(values, project, source), project, stack, source)


def load_from_pulumi() -> StackConfig:
    """Parse the config the CLI (or the test mocks) handed to the running program."""
    import pulumi
    from pulumi.runtime.config import CONFIG, get_config_env

    project, stack = pulumi.get_project(), pulumi.get_stack()
    values = {**get_config_env(), **CONFIG.get()}
    return parse_stack_config(project_values(values, project, f"stack {stack!r}"), project, stack,
                              f"stack {stack!r}")
