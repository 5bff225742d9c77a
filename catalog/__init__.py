"""GPUs, the EC2 instance types that carry them, and models: small frozen tables shared by the stack and the simulation.

Sources:
- GPU memory is the total that `nvidia-smi` reports (MiB / 1024); bandwidth and dense bf16 tensor FLOP/s are
  NVIDIA's data-sheet figures (A10G: AWS g5 documentation; sparse figures are never used).
- Instance types and GPU counts per node: the AWS EC2 accelerated-computing instance pages (g5, g6, g6e, p4d,
  p4de, p5, p5e/p5en).
- GPU-to-GPU links (`interconnect`, `interconnect_gbps`, one direction per GPU; tensor parallelism's all-reduces
  run over them): NVIDIA data sheets. SXM boards behind NVSwitch: A100 NVLink 3 600 GB/s bidirectional, H100 and
  H200 NVLink 4 900 GB/s. PCIe cards: A10G, L4 and L40S PCIe Gen4 x16 64 GB/s bidirectional ("NVLink is not
  supported" on the L40S). AWS: p4d/p4de (A100, NVSwitch 600 GB/s), p5 (H100) and p5e/p5en (H200, 900 GB/s) have
  NVLink; g5 (A10G), g6 (L4) and g6e (L40S) connect their GPUs over PCIe only. A user entry that leaves them
  out keeps a same-name built-in GPU's link, and is otherwise taken as PCIe Gen4 x16 (`Catalog.extended`).
- Model shapes (layers, KV heads, head dim): the models' published `config.json`, the same values as
  microsoft/vidur `vidur/config/model_config.py`; see ../shared/reference/gpu-memory-and-models.md. Query heads
  (`num_heads`) are config.json `num_attention_heads`, stated for every built-in LLM, as are its KV heads
  (`num_key_value_heads`) and MLP width (`intermediate_size`), because a tensor-parallel size must split all
  three (simulation/gpu/tensor_parallel.py; a user model that leaves one at 0 skips that rule);
  tests/test_catalog_models.py checks that heads, widths and vocabularies add up to each model's published
  parameter count.

Users add or override entries in the stack config (`catalog:` key) or a scenario; `Catalog.extended()` merges.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

GIB = 1024**3
CUDA_RESERVED_GIB = 0.45  # nvidia-smi total − CUDA-reported total (see Gpu.cuda_total_bytes)
NVLINK, PCIE = "nvlink", "pcie"  # Gpu.interconnect
PCIE_GEN4_X16_GBPS = 32.0  # one direction (64 GB/s bidirectional)


@dataclass(frozen=True)
class Gpu:
    name: str
    memory_gib: float  # usable device memory as nvidia-smi reports it
    bandwidth_gbps: float  # HBM/GDDR bandwidth, GB/s (10^9 bytes)
    bf16_tflops: float  # dense bf16 tensor-core peak, TFLOP/s
    cuda_total_gib: float = 0.0  # total the CUDA runtime reports (what vLLM sizes from); 0 = memory_gib − 0.45
    interconnect: str = ""  # GPU-to-GPU link tensor parallelism all-reduces over: NVLINK or PCIE; "" = unstated
    interconnect_gbps: float = 0.0  # that link's peak, GB/s in one direction per GPU; 0 = unstated

    @property
    def link(self) -> tuple[str, float]:
        """(interconnect, one-way GB/s), PCIe Gen4 x16 for what the entry leaves out."""
        return self.interconnect or PCIE, self.interconnect_gbps or PCIE_GEN4_X16_GBPS

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gib * GIB)

    @property
    def cuda_total_bytes(self) -> int:
        """`torch.cuda.mem_get_info()` total: about 0.45 GiB below nvidia-smi's figure (vLLM start-up logs:
        H100 79.19–79.22 GiB against 79.65; 24 GiB cards 23.55–23.58 against 23.99)."""
        return int((self.cuda_total_gib or self.memory_gib - CUDA_RESERVED_GIB) * GIB)


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpu: str  # key into Catalog.gpus
    gpus: int  # GPUs per node
    vcpus: int
    memory_gib: int


@dataclass(frozen=True)
class Model:
    """A model's memory-relevant shape. LLMs have layers/KV heads; vision models a per-item activation."""

    name: str
    kind: str  # "llm" or "vision"
    params_b: float  # parameters, billions
    dtype_bytes: int = 2  # bf16/fp16 weights and KV cache
    layers: int = 0
    kv_heads: int = 0
    head_dim: int = 0
    max_context: int = 0  # tokens (max_model_len)
    sliding_window: int = 0  # tokens of KV kept per sequence; 0 = the whole context
    activation_mib_per_item: float = 0.0  # vision: activation per image at reference_pixels
    reference_pixels: int = 224 * 224
    weights_gib_override: float = 0.0  # published checkpoint size where it differs from params × dtype
    hidden_size: int = 0  # LLM: model width (config.json hidden_size); 0 = unknown (attention terms skipped)
    vocab_size: int = 0  # LLM: vocabulary (config.json vocab_size); sizes the logits tensor
    gflops_per_item: float = 0.0  # vision: forward FLOPs per image at reference_pixels (2 × published GMACs)
    intermediate_size: int = 0  # LLM: MLP width (config.json intermediate_size); 0 = 3.5 × hidden_size
    num_heads: int = 0  # LLM: query heads (config.json num_attention_heads); 0 = hidden_size // head_dim
    repo_gib: float = 0.0  # the whole Hugging Face repository (what an hf:// download fetches); 0 = the weights

    @property
    def weights_bytes(self) -> int:
        if self.weights_gib_override:
            return int(self.weights_gib_override * GIB)
        return int(self.params_b * 1e9 * self.dtype_bytes)

    @property
    def weights_gib(self) -> float:
        return self.weights_bytes / GIB

    def download_bytes(self, storage_uri: str) -> int:
        """What KServe's storage initializer writes for `storage_uri`. An `hf://` source is the repository's whole
        snapshot: `_download_hf` calls huggingface_hub's `snapshot_download` with neither allow_patterns nor
        ignore_patterns (kserve v0.15 `python/kserve/kserve/storage/storage.py`; from v0.17 it passes only the
        patterns of the STORAGE_ALLOW_PATTERNS / STORAGE_IGNORE_PATTERNS env vars, which this stack does not set), so a
        repository that publishes its weights twice downloads both (`repo_gib`). Any other source (s3://, gs://,
        https://, pvc://) holds what its owner put there: the weights."""
        if storage_uri.startswith("hf://") and self.repo_gib:
            return int(self.repo_gib * GIB)
        return self.weights_bytes

    def download_gib(self, storage_uri: str) -> float:
        return self.download_bytes(storage_uri) / GIB

    @property
    def attention_heads(self) -> int:
        """Query heads: `num_heads`, else hidden_size // head_dim (true for Llama, Mistral, Qwen2.5; not for
        Qwen3-32B or Gemma-2, whose config.json sets head_dim apart from hidden_size)."""
        if self.num_heads:
            return self.num_heads
        return self.hidden_size // self.head_dim if self.head_dim else 0

    @property
    def attention_width(self) -> int:
        """heads × head_dim: the width of Q and of the attention output (what attention FLOPs scale with)."""
        return self.attention_heads * self.head_dim

    @property
    def kv_bytes_per_token(self) -> int:
        """2 (K and V) × layers × KV heads × head dim × bytes per element (vLLM paper §3; vidur MemoryPlanner)."""
        return 2 * self.layers * self.kv_heads * self.head_dim * self.dtype_bytes

    @property
    def flops_per_token(self) -> float:
        """Forward-pass FLOPs per token ≈ 2 × parameters (one multiply-add per weight)."""
        return 2.0 * self.params_b * 1e9


_GPUS = [  # the A100/H100/H200 entries are the SXM boards AWS's p4d/p4de/p5/p5e carry (NVLink; see Sources)
    Gpu("A10G", memory_gib=22.49, bandwidth_gbps=600, bf16_tflops=70, interconnect=PCIE,
        interconnect_gbps=PCIE_GEN4_X16_GBPS),
    Gpu("L4", memory_gib=22.49, bandwidth_gbps=300, bf16_tflops=121, interconnect=PCIE,
        interconnect_gbps=PCIE_GEN4_X16_GBPS),
    Gpu("L40S", memory_gib=44.99, bandwidth_gbps=864, bf16_tflops=362, interconnect=PCIE,
        interconnect_gbps=PCIE_GEN4_X16_GBPS),  # "NVLink is not supported"
    Gpu("A100-40GB", memory_gib=40.0, bandwidth_gbps=1555, bf16_tflops=312, cuda_total_gib=39.4,
        interconnect=NVLINK, interconnect_gbps=300),  # NVLink 3: 600 GB/s bidirectional
    Gpu("A100-80GB", memory_gib=80.0, bandwidth_gbps=2039, bf16_tflops=312, interconnect=NVLINK,
        interconnect_gbps=300),
    Gpu("H100-80GB", memory_gib=79.65, bandwidth_gbps=3350, bf16_tflops=989, cuda_total_gib=79.2,
        interconnect=NVLINK, interconnect_gbps=450),  # NVLink 4: 900 GB/s bidirectional
    Gpu("H200-141GB", memory_gib=140.4, bandwidth_gbps=4800, bf16_tflops=989, interconnect=NVLINK,
        interconnect_gbps=450),
]


def _family(prefix: str, gpu: str, sizes: list[tuple[str, int, int, int]]) -> list[InstanceType]:
    return [InstanceType(f"{prefix}.{size}", gpu, gpus, vcpus, mem) for size, gpus, vcpus, mem in sizes]


_INSTANCES = [
    *_family("g5", "A10G", [("xlarge", 1, 4, 16), ("2xlarge", 1, 8, 32), ("4xlarge", 1, 16, 64),
                            ("8xlarge", 1, 32, 128), ("16xlarge", 1, 64, 256), ("12xlarge", 4, 48, 192),
                            ("24xlarge", 4, 96, 384), ("48xlarge", 8, 192, 768)]),
    *_family("g6", "L4", [("xlarge", 1, 4, 16), ("2xlarge", 1, 8, 32), ("4xlarge", 1, 16, 64),
                          ("8xlarge", 1, 32, 128), ("16xlarge", 1, 64, 256), ("12xlarge", 4, 48, 192),
                          ("24xlarge", 4, 96, 384), ("48xlarge", 8, 192, 768)]),
    *_family("g6e", "L40S", [("xlarge", 1, 4, 32), ("2xlarge", 1, 8, 64), ("4xlarge", 1, 16, 128),
                             ("8xlarge", 1, 32, 256), ("16xlarge", 1, 64, 512), ("12xlarge", 4, 48, 384),
                             ("24xlarge", 4, 96, 768), ("48xlarge", 8, 192, 1536)]),
    InstanceType("p4d.24xlarge", "A100-40GB", 8, 96, 1152),
    InstanceType("p4de.24xlarge", "A100-80GB", 8, 96, 1152),
    InstanceType("p5.48xlarge", "H100-80GB", 8, 192, 2048),
    InstanceType("p5e.48xlarge", "H200-141GB", 8, 192, 2048),
    InstanceType("p5en.48xlarge", "H200-141GB", 8, 192, 2048),
]

# repo_gib: what an hf:// download fetches, the repository's whole snapshot (Model.download_bytes), from the Hugging
# Face file listings; GB (10^9) there, GiB here, rounded up. Where the publisher ships the weights twice:
# - mistralai/Mistral-7B-Instruct-v0.3 at c170c708 (the revision the prod stack pins): "29 GB" in all, the
#   sharded model-0000{1,2,3}-of-00003.safetensors (4.95 + 5 + 4.55 GB) beside consolidated.safetensors (14.5 GB)
#   for mistral-inference (huggingface.co/mistralai/Mistral-7B-Instruct-v0.3/tree/c170c708…): 29.1 GB = 27.1 GiB.
# - meta-llama/Meta-Llama-3-8B(-Instruct) and Llama-3.1-8B(-Instruct): model-0000{1..4}-of-00004.safetensors
#   (model.safetensors.index.json total_size 16,060,522,496 B: 4.98 + 5 + 4.92 + 1.17 GB) and Meta's own
#   checkpoint original/consolidated.00.pth (16.1 GB; meta-llama/Meta-Llama-3-8B-Instruct PR #1 "Upload
#   original checkpoint"; its size in the listings of the repositories duplicated from them, e.g.
#   satpalsr/Meta-Llama-3-8B and Niansuh/Meta-Llama-3.1-8B-Instruct): 32.2 GB = 30.0 GiB.
# - meta-llama/Llama-3.1-70B-Instruct: 30 safetensors shards (total_size 141,107,412,992 B) and
#   original/consolidated.00–07.pth, 17.6 GB each (NousResearch/Meta-Llama-3.1-70B-Instruct): 281.9 GB = 263 GiB.
# Not verified, so the weights size (repo_gib 0): Llama-2 (its -hf repositories also carry pytorch_model-*.bin),
# Mistral-7B-v0.1 (pytorch_model-*.bin beside the safetensors), Llama-3-70B, Llama-3.3-70B, OPT, Qwen, Gemma and
# the vision models. Override with `catalog: models: <name>: repoGib` for the repository a stack names.
_MISTRAL_V03 = Model("mistral-7b-v0.3", "llm", params_b=7.25, layers=32, kv_heads=8, head_dim=128,
                     max_context=32768, hidden_size=4096, vocab_size=32768, intermediate_size=14336, num_heads=32,
                     repo_gib=27.1)

_MODELS = [
    Model("llama-2-7b", "llm", params_b=6.74, layers=32, kv_heads=32, head_dim=128, max_context=4096,
          hidden_size=4096, vocab_size=32000, intermediate_size=11008, num_heads=32),
    Model("llama-2-13b", "llm", params_b=13.02, layers=40, kv_heads=40, head_dim=128, max_context=4096,
          hidden_size=5120, vocab_size=32000, intermediate_size=13824, num_heads=40),
    Model("llama-3-8b", "llm", params_b=8.03, layers=32, kv_heads=8, head_dim=128, max_context=8192,
          hidden_size=4096, vocab_size=128256, intermediate_size=14336, repo_gib=30.0, num_heads=32),
    # Mistral-7B: v0.1 keeps a 4,096-token sliding window and a 32,000 vocabulary; v0.2 and v0.3 attend to the
    # whole context (config.json "sliding_window": null) and v0.3 has 32,768 tokens (mistralai/
    # Mistral-7B-Instruct-v0.3 config.json). `mistral-7b` is v0.3, the release the shipped stacks deploy.
    _MISTRAL_V03,
    replace(_MISTRAL_V03, name="mistral-7b"),
    Model("mistral-7b-v0.1", "llm", params_b=7.24, layers=32, kv_heads=8, head_dim=128, max_context=32768,
          sliding_window=4096, hidden_size=4096, vocab_size=32000, intermediate_size=14336, num_heads=32),
    Model("llama-3-70b", "llm", params_b=70.55, layers=80, kv_heads=8, head_dim=128, max_context=8192,
          hidden_size=8192, vocab_size=128256, intermediate_size=28672, num_heads=64),
    Model("llama-2-70b", "llm", params_b=68.98, layers=80, kv_heads=8, head_dim=128, max_context=4096,
          hidden_size=8192, vocab_size=32000, intermediate_size=28672, num_heads=64),
    # OPT-13B: the vLLM paper's worked example (§3: 800 KB of KV per token). 40 heads × 128 = hidden 5120.
    Model("opt-13b", "llm", params_b=12.85, layers=40, kv_heads=40, head_dim=128, max_context=2048,
          hidden_size=5120, vocab_size=50272, intermediate_size=20480, num_heads=40),
    # Current long-context models (config.json of each Hugging Face repository: num_hidden_layers,
    # hidden_size, intermediate_size, num_key_value_heads, head_dim, vocab_size, max_position_embeddings).
    # Llama-3.3-70B shares Llama-3.1-70B's architecture. Gemma-2 alternates sliding-window (4,096) and global
    # layers: counted as global here (every layer keeps the whole context; conservative).
    Model("llama-3.1-8b", "llm", params_b=8.03, layers=32, kv_heads=8, head_dim=128, max_context=131072,
          hidden_size=4096, vocab_size=128256, intermediate_size=14336, repo_gib=30.0, num_heads=32),
    Model("llama-3.1-70b", "llm", params_b=70.55, layers=80, kv_heads=8, head_dim=128, max_context=131072,
          hidden_size=8192, vocab_size=128256, intermediate_size=28672,
          repo_gib=263.0, num_heads=64),
    Model("llama-3.3-70b", "llm", params_b=70.55, layers=80, kv_heads=8, head_dim=128, max_context=131072,
          hidden_size=8192, vocab_size=128256, intermediate_size=28672, num_heads=64),
    Model("qwen2.5-7b", "llm", params_b=7.62, layers=28, kv_heads=4, head_dim=128, max_context=32768,
          hidden_size=3584, vocab_size=152064, intermediate_size=18944, num_heads=28),
    Model("qwen2.5-14b", "llm", params_b=14.77, layers=48, kv_heads=8, head_dim=128, max_context=32768,
          hidden_size=5120, vocab_size=152064, intermediate_size=13824, num_heads=40),
    Model("qwen2.5-32b", "llm", params_b=32.76, layers=64, kv_heads=8, head_dim=128, max_context=32768,
          hidden_size=5120, vocab_size=152064, intermediate_size=27648, num_heads=40),
    Model("qwen2.5-72b", "llm", params_b=72.71, layers=80, kv_heads=8, head_dim=128, max_context=32768,
          hidden_size=8192, vocab_size=152064, intermediate_size=29568, num_heads=64),
    Model("qwen3-8b", "llm", params_b=8.19, layers=36, kv_heads=8, head_dim=128, max_context=40960,
          hidden_size=4096, vocab_size=151936, intermediate_size=12288, num_heads=32),
    Model("qwen3-32b", "llm", params_b=32.76, layers=64, kv_heads=8, head_dim=128, max_context=40960,
          hidden_size=5120, vocab_size=151936, intermediate_size=25600, num_heads=64),
    Model("gemma-2-9b", "llm", params_b=9.24, layers=42, kv_heads=8, head_dim=256, max_context=8192,
          hidden_size=3584, vocab_size=256000, intermediate_size=14336, num_heads=16),
    Model("gemma-2-27b", "llm", params_b=27.23, layers=46, kv_heads=16, head_dim=128, max_context=8192,
          hidden_size=4608, vocab_size=256000, intermediate_size=36864, num_heads=32),
    # Vision: torchvision ResNet-50 (25.6 M parameters, fp32; 4.1 GMACs at 224×224) and ViT-L/16 (304 M,
    # fp16; 61.6 GMACs). The per-image activation peak at 224×224 is an estimate (inference keeps no
    # activations for backward); calibrate it.
    Model("resnet-50", "vision", params_b=0.0256, dtype_bytes=4, activation_mib_per_item=40.0,
          gflops_per_item=8.2),
    Model("vit-large-16", "vision", params_b=0.304, dtype_bytes=2, activation_mib_per_item=120.0,
          gflops_per_item=123.2),
]


@dataclass(frozen=True)
class Catalog:
    gpus: Mapping[str, Gpu] = field(default_factory=lambda: {g.name: g for g in _GPUS})
    instances: Mapping[str, InstanceType] = field(default_factory=lambda: {i.name: i for i in _INSTANCES})
    models: Mapping[str, Model] = field(default_factory=lambda: {m.name: m for m in _MODELS})

    def extended(self, gpus=(), instances=(), models=()) -> "Catalog":
        """A copy with user entries added (same name replaces the built-in one; a GPU that states no link keeps
        the built-in's, so overriding an H100's memory does not turn its NVLink into PCIe: `_keep_link`; a model
        that leaves its heads or MLP width unstated keeps the built-in's: `_keep_shape`)."""
        return replace(
            self,
            gpus={**self.gpus, **{g.name: _keep_link(g, self.gpus.get(g.name)) for g in gpus}},
            instances={**self.instances, **{i.name: i for i in instances}},
            models={**self.models, **{m.name: _keep_shape(m, self.models.get(m.name)) for m in models}},
        )

    def gpu_of(self, instance_type: str) -> Gpu:
        return self.gpus[self.instances[instance_type].gpu]


def _keep_link(gpu: Gpu, builtin: Gpu | None) -> Gpu:
    """A user GPU that states no `interconnect` keeps the built-in's kind of link, and its bandwidth unless it
    states one (an H100 given `interconnect_gbps` alone stays on NVLink)."""
    if builtin is None or gpu.interconnect:
        return gpu
    return replace(gpu, interconnect=builtin.interconnect,
                   interconnect_gbps=gpu.interconnect_gbps or builtin.interconnect_gbps)


# The shape a tensor-parallel split must divide (simulation/gpu/tensor_parallel.py), 0 when unstated.
SPLIT_SHAPE = ("num_heads", "kv_heads", "intermediate_size")


def _keep_shape(model: Model, builtin: Model | None) -> Model:
    """A user model that leaves `num_heads`, `kv_heads` or `intermediate_size` unstated (0) keeps the built-in's
    (config.json `num_attention_heads`, `num_key_value_heads`, `intermediate_size`): restating gemma-2-9b to give
    its `repo_gib` must not turn its 16 heads into hidden_size // head_dim = 14, which refuses tensor parallelism of
    4, nor drop the KV-head and MLP splits that refuse llama-2-13b on 5 GPUs (`tensor_parallel.heads_problem`;
    vLLM `ModelConfig.verify_with_parallel_config`, `divide` in its parallel linear layers)."""
    if builtin is None:
        return model
    kept = {f: getattr(builtin, f) for f in SPLIT_SHAPE if not getattr(model, f) and getattr(builtin, f)}
    return replace(model, **kept) if kept else model


DEFAULT = Catalog()
