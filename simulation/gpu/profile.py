"""Which model on which GPU a scenario's server runs: catalog look-up by name, plus user-defined entries.

Scenario keys (under `server:`):

    server:
      model: llama-2-7b            # a catalog model, or one defined below
      gpu: A10G                    # a catalog GPU ...
      instance_type: g5.xlarge     # ... or the EC2 instance type that carries it (one of the two)
      tensor_parallel_size: 1      # GPUs one replica spans (<= the instance's GPU count; vllm and tgi also
                                   # need it to divide the model's attention heads: gpu/tensor_parallel.py)
      catalog:                     # optional user entries; a name already in the catalog replaces it
        gpus:
          my-gpu: {memory_gib: 32, bandwidth_gbps: 900, bf16_tflops: 200,
                   interconnect: pcie, interconnect_gbps: 32}   # GPU-to-GPU link, one way: optional, see below
        models:
          my-7b: {kind: llm, params_b: 7.0, layers: 32, kv_heads: 8, head_dim: 128, max_context: 8192,
                  hidden_size: 4096, vocab_size: 32000}

Field names are the `catalog.Gpu` / `catalog.Model` dataclass fields. A GPU without `interconnect` keeps a
same-name built-in GPU's link, else is PCIe Gen4 x16 (32 GB/s one way); `interconnect: nvlink` needs
`interconnect_gbps`. A model restated without `num_heads`, `kv_heads` or `intermediate_size` keeps the built-in's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from catalog import DEFAULT, NVLINK, PCIE, Catalog, Gpu, InstanceType, Model
from validation.fields import Section

_GPU_FIELDS = {"memory_gib": (float, True, 1.0), "bandwidth_gbps": (float, True, 1.0),
               "bf16_tflops": (float, True, 0.1), "cuda_total_gib": (float, False, 0.0),
               "interconnect_gbps": (float, False, 0.1)}
_MODEL_FIELDS = {
    "params_b": (float, True, 0.0001), "dtype_bytes": (int, False, 1), "layers": (int, False, 0),
    "kv_heads": (int, False, 0), "head_dim": (int, False, 0), "max_context": (int, False, 0),
    "sliding_window": (int, False, 0), "activation_mib_per_item": (float, False, 0.0),
    "reference_pixels": (int, False, 1), "weights_gib_override": (float, False, 0.0),
    "hidden_size": (int, False, 0), "vocab_size": (int, False, 0), "gflops_per_item": (float, False, 0.0),
    "intermediate_size": (int, False, 0), "num_heads": (int, False, 0), "repo_gib": (float, False, 0.0),
}
LLM_SHAPE = ("layers", "kv_heads", "head_dim", "max_context")   # what an LLM's KV cache is sized from
_INSTANCE_FIELDS = {"gpu": (str, True, None), "gpus": (int, True, 1), "vcpus": (int, False, 1),
                    "memory_gib": (int, False, 1)}


@dataclass(frozen=True)
class Profile:
    """The resolved hardware and model of one replica."""

    model: Model
    gpu: Gpu
    tp: int = 1
    instance_type: InstanceType | None = None


def _read(sec: Section, fields: dict, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, (typ, required, low) in fields.items():
        if typ is float:
            value = sec.float(key, None, min=low, required=required)
        elif typ is int:
            value = sec.int(key, None, min=low, required=required)
        else:
            value = sec.str(key, None, required=required)
        if value is not None:
            out[key] = value
    return out


def _named(sec: Section, key: str) -> list[tuple[str, Section]]:
    """`key: {name: {fields}}` → [(name, Section)]."""
    outer = sec.section(key)
    items = [(str(name), outer.section(str(name))) for name in list(outer.data)]
    return items


def parse_catalog(sec: Section, base: Catalog = DEFAULT) -> Catalog:
    """User entries under `server.catalog` merged over `base` (records problems, never raises)."""
    gpus, models, instances = [], [], []
    for name, g in _named(sec, "gpus"):
        values = _read(g, _GPU_FIELDS, name)
        link = g.choice("interconnect", [NVLINK, PCIE], None)
        if link is not None:
            values["interconnect"] = link
            if link == NVLINK and "interconnect_gbps" not in values:
                g.problem("interconnect_gbps", None, "required with interconnect: nvlink (one-way GB/s per GPU, "
                          "e.g. 450 for an H100 SXM, 300 for an A100 SXM)")
        g.done()
        if all(k in values for k in ("memory_gib", "bandwidth_gbps", "bf16_tflops")):
            gpus.append(Gpu(name, **values))
    for name, m in _named(sec, "models"):
        kind = m.choice("kind", ["llm", "vision"], "llm")
        values = _read(m, _MODEL_FIELDS, name)
        m.done()
        if "params_b" not in values:
            continue
        model = Model(name, kind, **values)
        missing = [k for k in LLM_SHAPE if not getattr(model, k)] if kind == "llm" else []
        if missing:
            m.problem(missing[0], values.get(missing[0]), "an llm model needs layers, kv_heads, head_dim and "
                      "max_context (> 0)")
            continue
        models.append(model)
    for name, i in _named(sec, "instance_types"):
        values = _read(i, _INSTANCE_FIELDS, name)
        i.done()
        if "gpu" in values and "gpus" in values:
            instances.append(InstanceType(name, values["gpu"], values["gpus"], values.get("vcpus", 4),
                                          values.get("memory_gib", 16)))
    sec.done()
    merged = base.extended(gpus, instances, models)
    for inst in instances:
        if inst.gpu not in merged.gpus:
            sec.problem(f"instance_types.{inst.name}.gpu", inst.gpu, "expected a GPU from the catalog: "
                        + ", ".join(sorted(merged.gpus)))
    return merged


def parse_profile(sec: Section, *, kinds: tuple[str, ...] = ("llm", "vision"), default_model: str | None = None,
                  base: Catalog = DEFAULT) -> Profile | None:
    """Read `model`, `gpu` / `instance_type`, `tensor_parallel_size` and `catalog` from a `server:` section.

    Returns None when a problem was recorded (the caller's InputError lists it)."""
    before = len(sec.problems)
    cat = parse_catalog(sec.section("catalog"), base)
    if default_model not in cat.models:
        default_model = None  # the scenario's top-level `model.name` is used only when the catalog knows it
    model_name = sec.str("model", default_model, required=default_model is None)
    model = cat.models.get(model_name) if model_name else None
    if model_name and model is None:
        sec.problem("model", model_name, "expected a model from the catalog: " + ", ".join(sorted(cat.models))
                    + " (or define it under server.catalog.models)")
    elif model is not None and model.kind not in kinds:
        sec.problem("model", model_name, f"expected a {' or '.join(kinds)} model for this server kind; "
                    f"{model_name} is a {model.kind} model")
    gpu_name = sec.str("gpu", None)
    inst_name = sec.str("instance_type", None)
    gpu, inst = None, None
    if inst_name is not None:
        inst = cat.instances.get(inst_name)
        if inst is None:
            sec.problem("instance_type", inst_name, "expected an instance type from the catalog: "
                        + ", ".join(sorted(cat.instances)))
        else:
            gpu = cat.gpus.get(inst.gpu)
            if gpu_name is not None and gpu_name != inst.gpu:
                sec.problem("gpu", gpu_name, f"{inst_name} carries {inst.gpu}; give gpu or instance_type, not both")
    elif gpu_name is not None:
        gpu = cat.gpus.get(gpu_name)
        if gpu is None:
            sec.problem("gpu", gpu_name, "expected a GPU from the catalog: " + ", ".join(sorted(cat.gpus)))
    else:
        sec.problem("gpu", None, "give gpu (e.g. A10G) or instance_type (e.g. g5.xlarge)")
    tp = sec.int("tensor_parallel_size", 1, min=1, max=16)
    if inst is not None and tp > inst.gpus:
        sec.problem("tensor_parallel_size", tp, f"expected at most {inst.gpus} (GPUs on one {inst.name})")
    if len(sec.problems) > before or model is None or gpu is None:
        return None
    return Profile(model, gpu, tp, inst)


def profile_of(model: str, gpu: str, tp: int = 1, catalog: Catalog = DEFAULT) -> Profile:
    """Programmatic shortcut (tests, notebooks): catalog names → Profile; KeyError if unknown."""
    return Profile(catalog.models[model], catalog.gpus[gpu], tp)


__all__ = ["Profile", "parse_catalog", "parse_profile", "profile_of"]
