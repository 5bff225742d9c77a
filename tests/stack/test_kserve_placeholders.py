"""A `{{` in runtime.args or runtime.env of a `spec.predictor.model` predictor (review 13 F1).

KServe runs that container through Go's text/template before the pod exists (kserve v0.15.2/v0.16.0
`inferenceservice/utils/utils.go: ReplacePlaceholders`, from `components/predictor.go: buildPodSpec`): json.Marshal,
Parse, Execute with the ObjectMeta, Unmarshal. A Jinja chat template failed to parse (InvalidSpec, never Ready) and
`{{.Namespace}}` became the namespace, while preflight simulated the text as written. The stack now escapes every
`{{` as {{`{{`}} (validation/kserve_template.py says why not {{"{{"}}: json.Marshal turns its quotes into \\"), and
the simulation reads the values back through the same step. The expected outputs below are Go's own (go1.19,
text/template + encoding/json, the steps of ReplacePlaceholders); `test_the_step_matches_go` reruns them when a Go
toolchain is on the PATH."""

from __future__ import annotations

import json
import random
import shutil
import subprocess

import pytest

from manifests.inference_service import inference_service
from runtime_stack import TGI_IMAGE, chat_stack
from simulation.isvc import ServingSpec
from stackconfig.schema import parse_stack_config
from stackconfig.server_args import engine_args
from validation.errors import Problem
from validation.kserve_template import TemplateError, container_as_run, escape, execute

JINJA = "--chat-template={% for m in messages %}{{ m['content'] }}{% endfor %}"
NAME, NAMESPACE = "chat", "kserve-inference"

# value → what Go's template step gives (None: it fails, the InferenceService is InvalidSpec)
GO = {
    "{{.Namespace}}": "kserve-inference",
    "x {{- .Name -}} y": "xchaty",
    "{{/* c */}}z": "z",
    "{{ `a\"b` }}": 'a"b',
    "}}": "}}",
    "a{{`{{`}}b": "a{{b",
    '{{"{{"}}': None,            # json.Marshal writes the quotes as \", which no action admits
    "{{}}": None,
    "{{": None,
    JINJA: None,                 # bad character U+005B '['
    "plain --flag=1 <&>": "plain --flag=1 <&>",
}


@pytest.mark.parametrize("value", GO)
def test_the_step_as_go_runs_it(value):
    if GO[value] is None:
        with pytest.raises(TemplateError):
            execute(value, NAME, NAMESPACE)
    else:
        assert execute(value, NAME, NAMESPACE) == GO[value]


@pytest.mark.parametrize("value", [*GO, "{{{", "{{{{", "{ {{ }} {", "`{{`", "{{-", " -}}", "{{/*", "\\{{\"", ""])
def test_an_escaped_value_comes_back_as_written(value):
    assert execute(escape(value), NAME, NAMESPACE) == value


def _stack(runtime: dict):
    stack = parse_stack_config(chat_stack(runtime=runtime), "p", "dev")
    return stack, inference_service(stack, stack.services[0])


def test_a_jinja_arg_is_rendered_escaped_and_simulated_as_written():
    stack, isvc = _stack({"args": [JINJA], "env": {"VLLM_LOGGING_PREFIX": "{{.Namespace}}"}})
    model = isvc["spec"]["predictor"]["model"]
    rendered = [a for a in model["args"] if a.startswith("--chat-template=")]
    assert rendered == ["--chat-template={% for m in messages %}{{`{{`}} m['content'] }}{% endfor %}"]
    assert {"name": "VLLM_LOGGING_PREFIX", "value": "{{`{{`}}.Namespace}}"} in model["env"]
    # what the server receives after KServe's step is what the stack computed from its config
    assert [execute(a, NAME, NAMESPACE) for a in model["args"]] == engine_args(stack.services[0])
    spec = ServingSpec.from_manifest(isvc)
    assert JINJA in spec.args and spec.env["VLLM_LOGGING_PREFIX"] == "{{.Namespace}}"
    assert spec.container["args"] == list(spec.args)


def test_a_custom_predictor_is_not_templated_and_not_escaped():
    stack, isvc = _stack({"engine": "tgi", "image": TGI_IMAGE, "env": {"HF_HUB_OFFLINE": "{{x}}"}})
    [container] = isvc["spec"]["predictor"]["containers"]
    assert {"name": "HF_HUB_OFFLINE", "value": "{{x}}"} in container["env"]
    assert ServingSpec.from_manifest(isvc).env["HF_HUB_OFFLINE"] == "{{x}}"


def test_a_scenario_manifest_with_a_value_kserve_fails_on_is_refused():
    stack, isvc = _stack({"args": [JINJA]})
    model = isvc["spec"]["predictor"]["model"]
    i = next(i for i, a in enumerate(model["args"]) if a.startswith("--chat-template="))
    model["args"][i] = JINJA                                   # as a hand-written manifest would have it
    problems: list[Problem] = []
    ServingSpec.from_manifest(isvc, problems=problems)
    [p] = [p for p in problems if "ReplacePlaceholders" in p.allowed]
    assert p.path == f"inferenceService.spec.predictor.model.args[{i}]" and p.value == JINJA
    assert "write a literal '{{' as {{`{{`}}" in p.allowed


def test_placeholders_read_as_kserve_fills_them():
    problems: list[Problem] = []
    container = {"args": ["--served-model-name={{.Name}}"], "env": [{"name": "NS", "value": "{{.Namespace}}"}]}
    out = container_as_run(container, NAME, NAMESPACE, "c", problems)
    assert out == {"args": ["--served-model-name=chat"], "env": [{"name": "NS", "value": "kserve-inference"}]}
    assert problems == []


@pytest.mark.skipif(shutil.which("go") is None, reason="no Go toolchain: the expectations above are Go's outputs")
def test_the_step_matches_go(tmp_path):
    """Go's text/template and encoding/json on random values: the port agrees wherever it reads a value (it may
    refuse more than Go, never less), and every escaped value comes back as written."""
    (tmp_path / "go.mod").write_text("module t\n\ngo 1.19\n")
    (tmp_path / "main.go").write_text(GO_PROGRAM)
    env = {"GOFLAGS": "-mod=mod", "GOPROXY": "off", "GOCACHE": str(tmp_path / "cache"), "HOME": str(tmp_path),
           "PATH": "/usr/bin:/bin:/usr/local/go/bin"}
    subprocess.run(["go", "build", "-o", "tmpl", "."], cwd=tmp_path, env=env, check=True, timeout=300)
    rng = random.Random(13)
    alphabet = ["{", "}", "{{", "}}", "`", "-", " ", ".", "Name", "Namespace", "a", '"', "\\", "/*", "*/", "<", "\n",
                "\u2028", "1", "Labels"]
    values = list(GO) + ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 16))) for _ in range(3000)]
    lines = [json.dumps({"args": [v]}) for value in values for v in (value, escape(value))]
    out = subprocess.run([str(tmp_path / "tmpl")], input="\n".join(lines) + "\n", capture_output=True, text=True,
                         check=True, timeout=120).stdout.splitlines()
    for i, value in enumerate(values):
        raw, escaped = json.loads(out[2 * i]), json.loads(out[2 * i + 1])
        assert escaped == {"ok": True, "args": [value]}, value
        try:
            mine = execute(value, NAME, NAMESPACE)
        except TemplateError:
            continue
        assert raw == {"ok": True, "args": [mine]}, value


GO_PROGRAM = """package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"text/template"
)

type C struct {
	Args []string `json:"args"`
}

func main() {
	meta := struct{ Name, Namespace string }{"chat", "kserve-inference"}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var c, out C
		json.Unmarshal(sc.Bytes(), &c)
		data, _ := json.Marshal(c)
		tmpl, err := template.New("container-tmpl").Parse(string(data))
		if err == nil {
			buf := &bytes.Buffer{}
			if err = tmpl.Execute(buf, meta); err == nil {
				err = json.Unmarshal(buf.Bytes(), &out)
			}
		}
		res, _ := json.Marshal(map[string]interface{}{"ok": err == nil, "args": out.Args})
		fmt.Println(string(res))
	}
}
"""
