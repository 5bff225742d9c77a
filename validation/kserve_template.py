"""KServe's placeholder step on a `spec.predictor.model` container, and the escape that keeps a literal `{{`.

kserve v0.15.2 and v0.16.0 `pkg/controller/v1beta1/inferenceservice/utils/utils.go: ReplacePlaceholders`, called
from `components/predictor.go: buildPodSpec` on the container merged from the ServingRuntime and the
InferenceService: `json.Marshal` the container, parse the JSON text with Go's `text/template` (delimiters `{{`
`}}`), execute it with the InferenceService's ObjectMeta, `json.Unmarshal` the result. A parse or execution error
leaves the InferenceService InvalidSpec (`ErrInvalidPlaceholder`): no revision or Deployment, never Ready. A custom
predictor (`spec.predictor.containers`) is not templated.

Facts of Go's template text and `encoding/json` this rests on (text/template/parse/lex.go, encoding/json/encode.go):
- outside an action the text is copied as it is, up to the next `{{`; a `}}` there is plain text;
- `{{` opens an action; `{{- ` (a `-` then a space) also trims the whitespace before it, ` -}}` the whitespace
  after; `{{/* … */}}` is a comment;
- inside an action a backquoted raw string `` `…` `` holds any character but a backquote, and an action that is one
  string constant prints it unchanged (text/template escapes nothing);
- json.Marshal writes `"` as `\\"`, `\\` as `\\\\`, control characters, `<`, `>`, `&`, U+2028 and U+2029 as escapes
  (all beginning with a backslash) and leaves `{`, `}` and the backquote alone. So an action written as
  `{{"{{"}}` reaches the parser as `{{\\"{{\\"}}` and fails (a backslash is no token), while `` {{`{{`}} `` reaches
  it unchanged and prints `{{`.

Hence the escape: every `{{` of a value becomes `` {{`{{`}} ``, scanning left to right as the lexer finds them
(`escape`). A `{` before a replaced pair would have formed the pair itself, and the replacement ends with `}}`,
which is text to the lexer, so no other action appears; the template step gives back the value exactly.

`execute` is that step on one value, for the simulation to read what the server receives. Only what an escaped
value holds, and the placeholders KServe's own runtimes use, are read: text, `` {{`…`}} ``, `{{.Name}}`,
`{{.Namespace}}` (with spaces, trim markers, comments); anything else is refused with its reason. An action
must close within the value (one spanning two values of the JSON text is refused here, not modelled).
"""

from __future__ import annotations

import json
from typing import Any

from validation.errors import Problem

LEFT, RIGHT = "{{", "}}"
ESCAPED_LEFT = "{{`{{`}}"
_SPACES = " \t\r\n"   # text/template isSpace
_FIELDS = ("Name", "Namespace")


class TemplateError(ValueError):
    """KServe's template step fails on the value, or does what the simulation does not read."""


def escape(text: str) -> str:
    """`text` written so that KServe's template step gives back `text` (module docstring)."""
    return text.replace(LEFT, ESCAPED_LEFT)


def go_json_body(text: str) -> str:
    """`text` as Go's json.Marshal writes a string, without the quotes (HTML-safe escapes included)."""
    body = json.dumps(text, ensure_ascii=False)[1:-1]
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                       ("\u2029", "\\u2029")):
        body = body.replace(char, code)
    return body


def _right_delim(body: str, k: int) -> tuple[int, bool] | None:
    """(index after `}}`, trim the whitespace after) when the action closes at `k`, else None."""
    if body[k:k + 1] in tuple(_SPACES) and body[k + 1:k + 2] == "-" and body.startswith(RIGHT, k + 2):
        return k + 4, True
    if body.startswith(RIGHT, k):
        return k + 2, False
    return None


def _action(body: str, k: int, meta: dict[str, str]) -> tuple[str, int, bool]:
    """The output of the action whose content starts at `k`, the index after it and its right trim."""
    while body[k:k + 1] in tuple(_SPACES) and _right_delim(body, k) is None:
        k += 1
    if body.startswith("/*", k):   # a comment: nothing but the closing delimiter may follow it
        end = body.find("*/", k + 2)
        if end < 0:
            raise TemplateError("an unclosed comment: Go's template parser fails")
        close = _right_delim(body, end + 2)
        if close is None:
            raise TemplateError("a comment that ends before the closing '}}': Go's template parser fails")
        return "", *close
    if body.startswith("`", k):
        end = body.find("`", k + 1)
        if end < 0:
            raise TemplateError("an unterminated raw string: Go's template parser fails")
        out, k = body[k + 1:end], end + 1
    elif body.startswith(".", k):
        j = k + 1
        while j < len(body) and (body[j].isalnum() or body[j] == "_"):
            j += 1
        field = body[k + 1:j]
        if field not in _FIELDS:
            raise TemplateError(f"the placeholder .{field}: only .Name and .Namespace are read here")
        out, k = meta[field], j
    elif _right_delim(body, k) is not None:
        raise TemplateError("an empty action '{{}}': Go's template parser fails (missing value for command)")
    else:
        raise TemplateError(f"an action starting {body[k:k + 12]!r}: Go's template parser fails on it or it runs "
                            "a command; only {{.Name}}, {{.Namespace}} and strings in backquotes are read here")
    while body[k:k + 1] in tuple(_SPACES) and _right_delim(body, k) is None:
        k += 1
    close = _right_delim(body, k)
    if close is None:
        raise TemplateError("an action that does not close within the value after one operand (Go's parser fails "
                            "on an unclosed action; a pipeline or a command is not read here)")
    return out, *close


def execute(text: str, name: str, namespace: str) -> str:
    """What KServe's template step makes of one value of the container (`TemplateError` when it fails or does
    what is not read here)."""
    body, meta = go_json_body(text), {"Name": name, "Namespace": namespace}
    out: list[str] = []
    i, trim_next = 0, False
    while True:
        j = body.find(LEFT, i)
        piece = body[i:] if j < 0 else body[i:j]
        if trim_next:
            piece = piece.lstrip(_SPACES)
        k = j + 2
        if j >= 0 and body[k:k + 1] == "-" and body[k + 1:k + 2] in tuple(_SPACES):
            piece, k = piece.rstrip(_SPACES), k + 2
        out.append(piece)
        if j < 0:
            break
        printed, i, trim_next = _action(body, k, meta)
        out.append(printed)
    try:
        value = json.loads('"' + "".join(out) + '"')
    except json.JSONDecodeError as err:
        raise TemplateError(f"the output is no JSON string ({err.msg}): KServe's json.Unmarshal fails") from None
    return value


def container_as_run(container: Any, name: str, namespace: str, path: str, problems: list[Problem]) -> Any:
    """A copy of a `spec.predictor.model` container with its args and env (names and values) as KServe's template
    step leaves them; a value it fails on, or that is not read here, goes to `problems` and stays as written."""
    if not isinstance(container, dict):
        return container
    out = dict(container)
    why = ("KServe runs a spec.predictor.model container's args and env through Go's text/template "
           "(ReplacePlaceholders) before the pod exists: write a literal '{{' as {{`{{`}}")
    if isinstance(container.get("args"), list):
        args = []
        for i, arg in enumerate(container["args"]):
            try:
                args.append(execute(arg, name, namespace) if isinstance(arg, str) else arg)
            except TemplateError as err:
                problems.append(Problem(f"{path}.args[{i}]", arg, f"{why}; this value has {err}"))
                args.append(arg)
        out["args"] = args
    if isinstance(container.get("env"), list):
        env = []
        for i, var in enumerate(container["env"]):
            var = dict(var) if isinstance(var, dict) else var
            for key in ("name", "value"):
                if isinstance(var, dict) and isinstance(var.get(key), str):
                    try:
                        var[key] = execute(var[key], name, namespace)
                    except TemplateError as err:
                        problems.append(Problem(f"{path}.env[{i}].{key}", var[key], f"{why}; this value has {err}"))
            env.append(var)
        out["env"] = env
    return out
