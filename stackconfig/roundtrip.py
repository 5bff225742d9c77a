"""The stack files' YAML style, for the programs that edit them in place (the tuner's diff, `calibrate --write`).

ruamel.yaml's round-trip mode keeps comments, key order, flow style and quotes; its defaults would still re-wrap
every line past 80 columns and indent lists its own way, so an edit of three lines rewrote the whole file. These
settings match how the shipped `stacks/Pulumi.*.yaml` are written: long flow mappings on one line, and
`  - name:` under a key (mapping indent 2, sequence 4, dash offset 2).
"""

from __future__ import annotations

from typing import Any


def stack_yaml() -> Any:
    """A ruamel.yaml round-trip loader/dumper in the stack files' style."""
    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    return yaml
