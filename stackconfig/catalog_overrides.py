"""`catalog:` overrides: extra GPUs, instance types and models merged over the built-in catalog.

Every figure is bounded by what exists, with room to spare (a B200 has 180 GiB at 8 TB/s and ~2,250 dense BF16
TFLOPS; the largest EC2 instance 24 TiB of memory and 896 vCPUs; published models reach ~2 T parameters, 256 k
contexts and vocabularies): a figure past the bound is a typo, and 1e308 used to overflow the memory arithmetic.
A GPU's link (`interconnect`, `interconnectGbps`) follows the simulation's rules (simulation/gpu/profile.py)."""

from __future__ import annotations

from catalog import DEFAULT as DEFAULT_CATALOG
from catalog import NVLINK, PCIE, Catalog, Gpu, InstanceType, Model
from stackconfig.formats import EC2_INSTANCE_TYPE, check_format
from validation.fields import Section

MAX_GPU_GIB = 4096           # one GPU's memory
MAX_TOKENS = 100_000_000     # a context, a sliding window, a vocabulary
# An LLM's KV-cache shape: stack key → catalog.Model field (simulation/gpu/profile.py LLM_SHAPE)
LLM_KEYS = (("layers", "layers"), ("kvHeads", "kv_heads"), ("headDim", "head_dim"), ("maxContext", "max_context"))


def parse_catalog(sec: Section) -> Catalog:
    gpus = [Gpu(name, g.float("memoryGib", 0.0, min=1, max=MAX_GPU_GIB, required=True),
                g.float("bandwidthGbps", 0.0, min=1, max=100_000, required=True),
                g.float("bf16Tflops", 0.0, min=0.1, max=100_000, required=True),
                g.float("cudaTotalGib", 0.0, min=0, max=MAX_GPU_GIB), *_link(g))
            for name, g in named_items(sec.section("gpus"))]
    instances = [InstanceType(name, i.str("gpu", "", required=True), i.int("gpus", 1, min=1, max=16, required=True),
                              i.int("vcpus", 4, min=1, max=4096), i.int("memoryGib", 16, min=1, max=65536))
                 for name, i in named_items(sec.section("instanceTypes"))]
    models = [_model(name, m) for name, m in named_items(sec.section("models"))]
    sec.done()
    catalog = DEFAULT_CATALOG.extended(gpus, instances, models)
    for m in models:   # after `extended`: a restated built-in keeps its KV heads (`catalog._keep_shape`)
        merged = catalog.models[m.name]
        for key, field in LLM_KEYS if merged.kind == "llm" else ():
            if not getattr(merged, field):
                sec.problem(f"models.{m.name}.{key}", getattr(merged, field), "expected a positive number for an "
                            "llm model: its KV cache per token is sized from layers, kvHeads, headDim and maxContext "
                            "(config.json num_hidden_layers, num_key_value_heads, head_dim, max_position_embeddings)")
    for inst in instances:
        check_format(sec, f"instanceTypes.{inst.name}", inst.name, EC2_INSTANCE_TYPE, "expected an EC2 instance "
                     "type name such as 'g6e.xlarge' or 'p4d.24xlarge' (lowercase family, '.', size): EKS refuses "
                     "a node group of an instance type that does not exist")
        if inst.gpu not in catalog.gpus:
            sec.problem(f"instanceTypes.{inst.name}.gpu", inst.gpu,
                        "expected a GPU from the catalog: " + ", ".join(sorted(catalog.gpus)))
    return catalog


def _model(name: str, m: Section) -> Model:
    """One `catalog.models.NAME` entry. It replaces a same-name built-in model whole, except that an unstated
    `numHeads`, `kvHeads` or `intermediateSize` keeps the built-in's (`catalog.Catalog.extended`)."""
    return Model(name, m.choice("kind", ["llm", "vision"], "llm"), m.float("paramsB", 1.0, min=0.0001,
                 max=100_000, required=True), dtype_bytes=m.int("dtypeBytes", 2, min=1, max=4),
                 layers=m.int("layers", 0, min=0, max=10_000), kv_heads=m.int("kvHeads", 0, min=0, max=4096),
                 head_dim=m.int("headDim", 0, min=0, max=65536) or _head_dim(m),
                 max_context=m.int("maxContext", 0, min=0, max=MAX_TOKENS),
                 sliding_window=m.int("slidingWindow", 0, min=0, max=MAX_TOKENS),
                 activation_mib_per_item=m.float("activationMibPerItem", 0.0, min=0, max=MAX_GPU_GIB * 1024),
                 weights_gib_override=m.float("weightsGib", 0.0, min=0, max=1_000_000),
                 # the whole hf:// repository (an hf:// download fetches every file; catalog.Model.download_bytes)
                 repo_gib=m.float("repoGib", 0.0, min=0, max=1_000_000),
                 hidden_size=m.int("hiddenSize", 0, min=0, max=1_000_000),
                 vocab_size=m.int("vocabSize", 0, min=0, max=MAX_TOKENS),
                 gflops_per_item=m.float("gflopsPerItem", 0.0, min=0, max=1e9),
                 intermediate_size=m.int("intermediateSize", 0, min=0, max=10_000_000),
                 num_heads=m.int("numHeads", 0, min=1, max=4096))


def _head_dim(m: Section) -> int:
    """A model's head width when `headDim` is unstated: hidden_size / num_attention_heads, as Llama's, Mistral's
    and Qwen2's config.json leave it (transformers' LlamaAttention: `head_dim = getattr(config, "head_dim",
    hidden_size // num_attention_heads)`); 0 (refused for an llm) without both."""
    hidden, heads = m.data.get("hiddenSize"), m.data.get("numHeads")
    ok = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (hidden, heads))
    return hidden // heads if ok else 0


def _link(g: Section) -> tuple[str, float]:
    """A GPU's `interconnect` (nvlink | pcie) and `interconnectGbps` (one way, per GPU), as a scenario's
    `server.catalog.gpus` reads them (simulation/gpu/profile.py): nvlink needs the bandwidth; unstated ("", 0) keeps a
    same-name built-in GPU's link, else PCIe Gen4 x16 (`catalog.Catalog.extended`, `Gpu.link`)."""
    link = g.choice("interconnect", [NVLINK, PCIE], "")
    gbps = g.float("interconnectGbps", 0.0, min=0.1, max=100_000)
    if link == NVLINK and g.raw("interconnectGbps") is None:
        g.problem("interconnectGbps", None, "required with interconnect: nvlink (one-way GB/s per GPU, e.g. 450 for "
                  "an H100 SXM, 300 for an A100 SXM)")
    return link, gbps


def named_items(sec: Section):
    """Items of a name → mapping section, each read with its own Section (unknown keys reported)."""
    for name in list(sec.data):
        item = sec.section(name)
        yield name, item
        item.done()
