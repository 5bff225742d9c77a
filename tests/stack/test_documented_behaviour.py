"""Review rev11-docs (a new engineer following README.md and docs/ literally): the fixes, each checked against
the code it documents rather than a copied figure.

F1 `whatif --set` writes a dotted key only inside a string map; F2 `catalog.models.NAME.numHeads`, kept from the
built-in when an override leaves it out; F3 the default `resources.cpu` fits the default node, and the node-fit
refusal names the stack file; F4 the what-if table settles an undecided term as the gate does and says why;
F5/F6/F9 doc figures and names; F7 `engineProfile.scheduler` is vLLM's only; F8 an unquoted YAML number is a
Kubernetes quantity."""

from __future__ import annotations

import copy
from dataclasses import replace
import io
import re

import pytest
from rich.console import Console

from catalog import DEFAULT as DEFAULT_CATALOG
from gate.verdict import Check, Verdict
from manifests import render_stack
from manifests.admission import check_pods_can_run
from manifests.node_disk import EVICTION_FREE, SYSTEM_GIB, root_disk_problems, worst_mix
from preflight.overrides import apply_sets, stack_values
from preflight.whatif import Comparison, WhatIf, sides
from preflight.whatif_tables import SHOWN, tables
from simulation.estimates import Estimate
from simulation.scenario import TOP_KEYS
from simulation.trace import TRACE_COLUMNS
from stackconfig.load import ROOT, load_stack, project_values, stack_config_values, stack_file
from stackconfig.schema import parse_stack_config
from validation.errors import InputError

README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"

# -- F1: --set paths ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", [1, -1])
def test_a_nested_gate_path_nests_in_either_order(order):
    _, values = stack_values("dev")
    sets = ["gate.undecided=fail", "gate.replications.max=17"][::order]
    gate = apply_sets(values, sets)["gate"]
    assert gate["undecided"] == "fail" and gate["replications"]["max"] == 17 and "replications.max" not in gate
    before, after = sides("dev", sets)   # and the schema accepts the edit
    assert after.gate.undecided == "fail" and after.gate.max_replications == 17


def test_runtime_env_gets_its_own_mapping_beside_string_valued_runtime_keys():
    _, values = stack_values("dev")
    runtime = values["services"][0]["runtime"]
    assert runtime and all(isinstance(v, str) for v in runtime.values())   # the case that used to flatten
    out = apply_sets(values, ["services.chat.runtime.env.HF_HUB_OFFLINE=\"1\""])["services"][0]["runtime"]
    assert out["env"] == {"HF_HUB_OFFLINE": "1"} and "env.HF_HUB_OFFLINE" not in out
    _, after = sides("dev", ["services.chat.runtime.env.HF_HUB_OFFLINE=\"1\""])
    assert after.services[0].env["HF_HUB_OFFLINE"] == "1"


def test_a_string_map_takes_the_rest_of_the_path_as_one_key_even_when_new():
    _, values = stack_values("dev")
    values["services"][0].pop("annotations", None)
    values["services"][0].pop("nodeSelector", None)
    out = apply_sets(values, ["services.chat.annotations.autoscaling.knative.dev/window=60s",
                              "services.chat.nodeSelector.nvidia.com/gpu.present=\"true\"",
                              "knative.autoscaler.max-scale-up-rate=\"2\""])
    chat = out["services"][0]
    assert chat["annotations"] == {"autoscaling.knative.dev/window": "60s"}
    assert chat["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert out["knative"]["autoscaler"] == {"max-scale-up-rate": "2"}


# -- F2: catalog numHeads -----------------------------------------------------------------------------------------

GEMMA = dict(kind="llm", paramsB=9.24, layers=42, kvHeads=8, headDim=256, maxContext=8192, hiddenSize=3584,
             vocabSize=256000, intermediateSize=14336, repoGib=20)


def _gemma_on_4_gpus(catalog_entry: dict | None):
    """prod's code service as gemma-2-9b on the 4 GPUs of its g6e.12xlarge (the reviewer's set-up)."""
    project, values = stack_config_values("prod")
    values = copy.deepcopy(project_values(values, project))
    svc = values["services"][1]
    svc.update(model={"name": "gemma-2-9b", "storageUri": "s3://example-models/gemma-2-9b"},
               resources={"gpus": 4, "cpu": "8", "memory": "48Gi"},
               limits={"maxInputTokens": 4096, "maxNewTokens": 1024, "maxBatchSize": 64},
               pytorchCudaAllocConf="expandable_segments:False")
    values["services"] = [svc]
    values["modelCache"]["serviceAccountName"] = "model-cache-reader"
    values["gate"] = {"enabled": False}
    if catalog_entry is not None:
        values["catalog"] = {"models": {"gemma-2-9b": catalog_entry}}
    return parse_stack_config(values, project, "prod")


def test_restating_a_built_in_model_keeps_its_attention_heads():
    builtin = DEFAULT_CATALOG.models["gemma-2-9b"].attention_heads
    assert builtin % 4 == 0 and GEMMA["hiddenSize"] // GEMMA["headDim"] % 4 != 0   # what the fallback would give
    cfg = _gemma_on_4_gpus(GEMMA)   # refused before: 3584 // 256 = 14 heads on 4 GPUs
    model = cfg.services[0].model
    assert model.attention_heads == builtin and model.repo_gib == 20


def test_num_heads_given_is_used_and_checked():
    cfg = _gemma_on_4_gpus({**GEMMA, "numHeads": 32})
    assert cfg.services[0].model.attention_heads == 32
    with pytest.raises(InputError, match=r"gemma-2-9b has 14 attention heads, which 4 GPUs cannot share"):
        _gemma_on_4_gpus({**GEMMA, "numHeads": 14})
    for bad in (0, -1, 2.5, "16", True, 5000):
        with pytest.raises(InputError, match=r"catalog\.models\.gemma-2-9b\.numHeads: got"):
            _gemma_on_4_gpus({**GEMMA, "numHeads": bad})


def test_a_new_model_without_num_heads_still_derives_them():
    builtin = DEFAULT_CATALOG.models["gemma-2-9b"]
    assert _gemma_on_4_gpus(None).services[0].model is builtin   # the control: no catalog entry
    project, values = stack_config_values("dev")
    values = copy.deepcopy(project_values(values, project))
    values["catalog"] = {"models": {"my-8b": dict(GEMMA, hiddenSize=4096, headDim=128)}}
    cfg = parse_stack_config(values, project, "dev")
    assert cfg.catalog.models["my-8b"].attention_heads == 32
    assert "numHeads" in README.split("### `catalog`")[1].split("\n### ")[0]


# -- F3: the default CPU fits the default node; the refusal names the stack file -----------------------------------

MINIMAL = {
    "cluster": {"name": "c", "subnetIds": ["subnet-0a1b2c3d"], "createNodeRole": True},
    "services": [{"name": "chat", "maxReplicas": 2,
                  "model": {"name": "llama-3-8b", "storageUri": "hf://m/l", "public": True}}],
}


def test_a_stack_of_only_required_keys_fits_its_default_node():
    cfg = parse_stack_config(copy.deepcopy(MINIMAL), "kserve-preflight", "dev")
    assert cfg.node_group.instance_types == ["g6e.xlarge"]
    check_pods_can_run(cfg)   # raised before: cpu "4" never fits a g6e.xlarge's 3,920m allocatable


def test_the_node_fit_refusal_names_the_stack_file():
    values = copy.deepcopy(MINIMAL)
    values["services"][0]["resources"] = {"cpu": "4"}
    cfg = parse_stack_config(values, "kserve-preflight", "dev")
    with pytest.raises(InputError) as err:
        check_pods_can_run(cfg)
    assert str(err.value).startswith(f"1 problem in {stack_file('dev')}:")
    assert "never schedules" in str(err.value)


def test_readme_states_the_default_cpu_the_schema_uses():
    cfg = parse_stack_config(copy.deepcopy(MINIMAL), "kserve-preflight", "dev")
    row = next(ln for ln in README.splitlines() if ln.startswith("| `resources` | map |"))
    assert f'cpu: "{cfg.services[0].cpu}"' in row


# -- F4: the what-if table settles undecided terms ------------------------------------------------------------------

def _verdict(estimate: Estimate, policy: str = "estimate") -> Verdict:
    e = Estimate(0.01, 0.0, 0.02, 20)
    check = Check("p99 time to first token (s)", estimate, 20.0)
    return Verdict("chat", (check,), {"duration_s": 600}, 20, "nodeLoss", policy,
                   metrics={name: e for name in SHOWN})


def _text(result: WhatIf) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=400, color_system=None)
    for r in tables(result):
        console.print(r)
    return buf.getvalue()


def test_an_undecided_term_shows_how_the_gate_settled_it_and_why():
    passed = _verdict(Estimate(12.0, 10.0, 14.0, 20))
    missed = _verdict(Estimate(22.38, 17.09, 27.67, 20))      # the README example's prod/chat [nodeLoss]
    lenient = _verdict(Estimate(18.0, 15.0, 25.0, 20))        # estimate meets: passes with a warning
    assert not missed.passed and lenient.passed
    shown = {name: Estimate(0.01, 0.0, 0.02, 20) for name in SHOWN}
    comparisons = [Comparison(("chat", "nodeLoss"), passed, missed, ([], []), shown, metrics=(shown, shown)),
                   Comparison(("chat", "nodeLoss"), passed, lenient, ([], []), shown, metrics=(shown, shown))]
    text = _text(WhatIf("prod", None, [], 20, [1], comparisons, {"before": [], "after": []}))
    rows = [ln for ln in text.splitlines() if "SLO p99 time to first token" in ln]
    assert len(rows) == 2
    assert "FAIL (undecided; gate.undecided: estimate)" in rows[0]
    assert "pass, warning (undecided; gate.undecided: estimate)" in rows[1]
    [miss] = [ln for ln in text.splitlines() if "after misses:" in ln]
    assert "chat [nodeLoss]: p99 time to first token (s) 22.38 vs SLO 20" in miss
    assert "its estimate misses the SLO (gate.undecided: estimate)" in miss
    [warn] = [ln for ln in text.splitlines() if "after warning:" in ln]
    assert "passes on the estimate alone" in warn
    assert "before misses" not in text and "before warning" not in text


# -- F8: an unquoted number is a quantity ---------------------------------------------------------------------------

def _chat(resources: dict, **top) -> dict:
    values = copy.deepcopy(MINIMAL)
    values["gpuNodeGroup"] = {"instanceTypes": ["g6e.2xlarge"], **top}
    values["services"][0]["resources"] = resources
    return values


def test_a_bare_number_renders_as_its_quoted_form():
    quoted = parse_stack_config(_chat({"cpu": "3", "memory": "25769803776"},
                                      otherDaemonSets={"cpu": "1", "memory": "0"}), "p", "dev")
    bare = parse_stack_config(_chat({"cpu": 3, "memory": 25769803776},
                                    otherDaemonSets={"cpu": 1, "memory": 0}), "p", "dev")
    assert (bare.services[0].cpu, bare.services[0].memory) == ("3", "25769803776")
    assert render_stack(bare) == render_stack(quoted)
    assert bare.node_group.other_daemonsets_memory == "0"
    half = parse_stack_config(_chat({"cpu": 0.5, "memory": "24Gi"}), "p", "dev")
    assert half.services[0].cpu == "0.5" and render_stack(half) == render_stack(
        parse_stack_config(_chat({"cpu": "0.5", "memory": "24Gi"}), "p", "dev"))


def test_a_bare_number_meets_the_floors_and_the_node_fit():
    with pytest.raises(InputError, match=r"resources\.memory: got '1024'; expected at least 1Gi"):
        parse_stack_config(_chat({"memory": 1024}), "p", "dev")
    with pytest.raises(InputError, match=r"resources\.cpu: got '0.05'; expected at least 100m"):
        parse_stack_config(_chat({"cpu": 0.05}), "p", "dev")
    with pytest.raises(InputError, match=r"otherDaemonSets\.memory: got '512'; expected 0 or at least 1Mi"):
        parse_stack_config(_chat({}, otherDaemonSets={"memory": 512}), "p", "dev")
    cfg = parse_stack_config(_chat({"cpu": 8}), "p", "dev")   # a g6e.2xlarge offers 7,910m
    with pytest.raises(InputError, match="never schedules"):
        check_pods_can_run(cfg)


@pytest.mark.parametrize("bad", [True, -1, float("inf"), float("nan"), [3], {"a": 1}, ""])
def test_what_is_not_a_quantity_is_refused(bad):
    with pytest.raises(InputError, match=r"resources\.cpu: got .*; expected a Kubernetes quantity"):
        parse_stack_config(_chat({"cpu": bad}), "p", "dev")


# -- F5, F6, F7, F9: the docs say what the code does ----------------------------------------------------------------

def test_deploying_quotes_the_shipped_stacks_max_size():
    text = (DOCS / "deploying.md").read_text()
    m = re.search(r"The shipped stacks were sized by it: dev `maxSize` (\d+), staging (\d+), prod (\d+)\.", text)
    assert m, "docs/deploying.md §3 no longer quotes the stacks' maxSize"
    assert [int(x) for x in m.groups()] == [load_stack(s).node_group.max_size for s in ("dev", "staging", "prod")]


def test_deploying_quotes_the_root_disk_the_check_computes():
    import dataclasses

    text = " ".join((DOCS / "deploying.md").read_text().split())
    m = re.search(r"prod without the cache takes (\d+) GiB .*?; (\d+) GiB from `s3://` copies of the weights\), so "
                  r"its `diskSizeGib` must be at least (\d+) GiB \((\d+) GiB from `s3://`\); it has (\d+)\.", text)
    assert m, "docs/deploying.md §2's root-volume example changed form"
    takes, takes_s3, need, need_s3, has = map(int, m.groups())
    cfg = load_stack("prod")
    off = dataclasses.replace(cfg, model_cache=dataclasses.replace(cfg.model_cache, enabled=False))
    s3 = dataclasses.replace(off, services=[dataclasses.replace(s, storage_uri=f"s3://b/{s.name}")
                                            for s in off.services])
    for side, gib, minimum in ((off, takes, need), (s3, takes_s3, need_s3)):
        total = SYSTEM_GIB + worst_mix(side).gib
        assert gib == round(total)
        small = dataclasses.replace(side, node_group=dataclasses.replace(side.node_group, disk_size_gib=10))
        [problem] = root_disk_problems(small)
        assert f"expected at least {minimum} GiB" in problem.allowed
        assert minimum == -(-total // (1 - EVICTION_FREE))
    assert has == cfg.node_group.disk_size_gib


def test_readme_offers_the_scheduler_only_where_the_loader_takes_it():
    project, values = stack_config_values("prod")
    values = copy.deepcopy(project_values(values, project))
    values["services"][1].update(runtime={"engine": "tgi"}, engineProfile={"scheduler": "v1"})
    with pytest.raises(InputError, match=r"engineProfile\.scheduler: got 'v1'.*for engine 'tgi'"):
        parse_stack_config(values, project, "prod")
    assert "`scheduler` (`v1`/`v0`; vLLM/TGI)" not in README
    assert "vLLM only, refused for TGI" in README.split("`scheduler` (")[1].split(")")[0]


def test_policy_doc_names_the_program_runner_that_exists():
    import offline

    text = (DOCS / "policy.md").read_text()
    row = next(ln for ln in text.splitlines() if ln.startswith("| `policy/stack.py` |"))
    [name] = re.findall(r"`([\w/.]+)\.run_program`", row)
    assert name == "offline" and callable(offline.run_program)
    assert "from offline import run_program" in (ROOT / "policy" / "stack.py").read_text()


def test_simulation_doc_lists_every_scenario_key_and_trace_column():
    text = (DOCS / "simulation.md").read_text()
    section = text.split("## Scenario keys", 1)[1].split("\n## ", 1)[0]
    missing = [k for k in TOP_KEYS if f"`{k}" not in section]
    assert not missing, missing
    assert "`columns`" in section and all(f"{c}" in section for c in TRACE_COLUMNS)


def test_restating_a_built_in_model_keeps_the_splits_tensor_parallelism_must_divide():
    """Review 12 (diff), F1: restating llama-2-13b to give its repoGib (no intermediateSize, no numHeads) dropped its
    MLP width 13,824, so 5 GPUs passed as they do not for the built-in (13,824 % 5 ≠ 0: vLLM's `divide` asserts)."""
    from runtime_stack import chat_stack, with_service

    entry = {"kind": "llm", "paramsB": 13.02, "layers": 40, "kvHeads": 40, "headDim": 128, "maxContext": 4096,
             "hiddenSize": 5120, "vocabSize": 32000, "repoGib": 30}
    for catalog in (None, {"models": {"llama-2-13b": entry}}):
        cfg = chat_stack()
        cfg["gpuNodeGroup"] = {"instanceTypes": ["p4de.24xlarge"]}
        cfg = with_service(cfg, runtime={"engine": "vllm"}, maxReplicas=1,
                           resources={"gpus": 5, "cpu": "4", "memory": "64Gi"},
                           model={"name": "llama-2-13b", "storageUri": "hf://m/l", "public": True})
        if catalog:
            cfg["catalog"] = catalog
        with pytest.raises(InputError, match=r"services\[0\]\.resources\.gpus: got 5.*intermediate_size"):
            parse_stack_config(cfg, "p", "dev")
    kept = DEFAULT_CATALOG.extended(models=[replace(DEFAULT_CATALOG.models["llama-2-13b"], num_heads=0, kv_heads=0,
                                                    intermediate_size=0, repo_gib=30)]).models["llama-2-13b"]
    builtin = DEFAULT_CATALOG.models["llama-2-13b"]
    assert (kept.num_heads, kept.kv_heads, kept.intermediate_size, kept.repo_gib) == (
        builtin.num_heads, builtin.kv_heads, builtin.intermediate_size, 30)
