"""The winning settings as the exact edit to the stack file: a unified diff of `stacks/Pulumi.<stack>.yaml`.

ruamel.yaml's round-trip mode keeps the file's comments, key order and flow style, so the diff shows only the
lines the settings change (`git apply` takes it as is).
"""

from __future__ import annotations

import difflib
import io
from pathlib import Path

from tuner.space import ANN


def stack_file_diff(path: Path, project: str, service: str, settings: dict) -> str:
    """The unified diff that applies `settings` (tuner/space.py names) to the stack file at `path`."""
    from ruamel.yaml import YAML
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    yaml = YAML()  # round-trip
    yaml.preserve_quotes = True
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)   # the stack files' style: "  - name:" under a key
    before = path.read_text()
    doc = yaml.load(before)
    config = doc["config"]
    svc = next(s for s in config[f"{project}:services"] if s.get("name") == service)
    ng = config[f"{project}:gpuNodeGroup"]
    for key in ("minReplicas", "maxReplicas", "scaleTarget", "containerConcurrency", "gpuMemoryUtilization"):
        if key in settings and svc.get(key) != settings[key]:
            svc[key] = settings[key]
    for key, ann in (("initialScale", "initial-scale"), ("scaleDownDelay", "scale-down-delay"), ("window", "window")):
        if key in settings:
            annotations = svc.setdefault("annotations", {})
            if str(annotations.get(ANN + ann)) != str(settings[key]):
                annotations[ANN + ann] = DoubleQuotedScalarString(str(settings[key]))
    for key in ("maxInputTokens", "maxBatchSize"):
        if key in settings and (svc.get("limits") or {}).get(key) != settings[key]:
            svc.setdefault("limits", {})[key] = settings[key]
    if "instanceType" in settings and list(ng.get("instanceTypes") or []) != [settings["instanceType"]]:
        ng["instanceTypes"] = [settings["instanceType"]]
    for key, setting in (("maxSize", "nodeMax"), ("minSize", "nodeMin"), ("desiredSize", "nodeMin")):
        if setting in settings and ng.get(key) != settings[setting]:
            ng[key] = settings[setting]
    buf = io.StringIO()
    yaml.dump(doc, buf)
    name = f"stacks/{path.name}"
    return "".join(difflib.unified_diff(before.splitlines(keepends=True), buf.getvalue().splitlines(keepends=True),
                                        f"a/{name}", f"b/{name}"))
