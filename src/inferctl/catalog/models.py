"""Model architectures as the planner needs them: per-layer attention, KV shapes, parameters, weight bytes.

A model comes from the catalog (``data/models.toml``: Gemma 4 sizes and their assistants) or from any
Hugging Face ``config.json`` - a directory holding one (the tiny local model, a downloaded checkpoint) or
the file itself. Both go through :func:`spec_from_config`, so a catalog entry is exactly what the same
``config.json`` on disk would give.

Per-layer rules follow vLLM's ``model_executor/models/gemma4.py`` (reference/vllm.md §5.1):

* layer types come from ``layer_types``; Gemma 4's default (``(i + 1) % 6`` sliding, last layer full)
  applies when it is absent;
* full-attention layers use ``global_head_dim`` and, only when ``attention_k_eq_v``,
  ``num_global_key_value_heads``; K=V layers still store both K and V;
* the last ``num_kv_shared_layers`` layers read another layer's KV and allocate none.
"""

from __future__ import annotations

import json
import struct
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError

WeightFormat = Literal["bf16", "fp8", "w4a16"]
WEIGHT_FORMATS: tuple[str, ...] = ("bf16", "fp8", "w4a16")
# Bytes per linear-layer weight: fp8 adds a per-channel fp32 scale (negligible); Google's QAT w4a16
# checkpoints hold 4-bit weights with a bf16 scale per group of 32 -> 0.5 + 2/32 bytes.
_LINEAR_BYTES = {"bf16": 2.0, "fp8": 1.0, "w4a16": 0.5 + 2 / 32}


class LayerSpec(BaseModel):
    """One decoder layer's attention, as vLLM allocates its KV cache."""

    index: int
    attention: Literal["full", "sliding"] = Field(description="Full attention or sliding window.")
    sliding_window: int | None = Field(default=None, description="Window in tokens (sliding layers).")
    num_kv_heads: int = Field(description="KV heads of the layer (before tensor parallelism).")
    head_dim: int = Field(description="Head size of K (and V).")
    kv_shared: bool = Field(default=False, description="Reads another layer's KV; allocates none.")
    intermediate_size: int = Field(description="Dense MLP width of the layer.")

    def kv_bytes_per_token(self, dtype_bytes: float, tp: int = 1) -> float:
        """K and V bytes one token takes in this layer on one device (0 for KV-shared layers)."""
        if self.kv_shared:
            return 0.0
        return 2 * kv_heads_per_rank(self.num_kv_heads, tp) * self.head_dim * dtype_bytes


def kv_heads_per_rank(kv_heads: int, tp: int) -> int:
    """vLLM replicates KV heads when TP exceeds them: ``max(1, heads // tp)``."""
    return max(1, kv_heads // tp)


class ModelSpec(BaseModel):
    """What the planner knows about a model."""

    name: str = Field(description="Catalog name or the directory / file it was read from.")
    hf_id: str | None = Field(default=None, description="Hugging Face repository id.")
    family: str = Field(description="Architecture family (model_type).")
    hidden_size: int
    num_layers: int
    num_heads: int = Field(description="Query heads.")
    vocab_size: int
    max_position_embeddings: int = Field(description="Longest context the model supports.")
    tie_word_embeddings: bool = True
    attention_k_eq_v: bool = Field(default=False, description="Full layers load K into V (no V weights).")
    layers: list[LayerSpec] = Field(description="Per-layer attention and MLP.")
    num_experts: int = Field(default=0, description="MoE experts per layer (0: dense).")
    top_k_experts: int = Field(default=0, description="Experts each token is routed to.")
    moe_intermediate_size: int = Field(default=0, description="Width of one expert's MLP.")
    per_layer_input_size: int = Field(default=0, description="Gemma per-layer embedding width (E2B/E4B).")
    encoder_params: float = Field(default=0.0, description="Vision/audio encoder parameters vLLM also loads.")
    drafter: str | None = Field(default=None, description="Catalog name of its MTP assistant.")
    drafter_for: str | None = Field(default=None, description="For an assistant: its target model.")
    num_speculative_tokens: int | None = Field(default=None, description="Recommended draft length.")
    kv_shared_with_target: bool = Field(default=False, description="An assistant reading the target's KV.")
    formats: list[str] = Field(default_factory=lambda: list(WEIGHT_FORMATS), description="Weight formats.")
    measured_weight_bytes: float | None = Field(
        default=None, description="Weight bytes read from the checkpoint's safetensors headers, if any."
    )
    estimated: bool = Field(default=False, description="Shapes are estimates, not a published config.")
    config_reader: Literal["catalog", "transformers", "json"] = Field(
        default="catalog", description="How the shapes were read: the hand-written catalog, transformers' own "
        "config class (what vLLM reads), or config.json by inferctl's own rules (transformers not usable)."
    )
    config_reader_detail: str = Field(default="", description="The reader in words (version, or why the fallback).")
    source: str = Field(default="", description="Where the numbers come from.")
    date: str = Field(default="", description="When they were recorded.")

    # --- parameters ---------------------------------------------------------------------------------

    def _attention_params(self, layer: LayerSpec, k_eq_v: bool) -> float:
        h, q = self.hidden_size, self.num_heads * layer.head_dim
        kv = layer.num_kv_heads * layer.head_dim
        if self.kv_shared_with_target:  # assistants: Q-only attention
            return 2 * h * q
        v = 0 if (k_eq_v and layer.attention == "full") else kv
        return h * q + h * kv + h * v + q * h

    def linear_params(self, active: bool = False) -> float:
        """Parameters in the decoder's matmuls (attention, MLP, experts); ``active``: per token."""
        total = 0.0
        for layer in self.layers:
            total += self._attention_params(layer, self.attention_k_eq_v)
            total += 3 * self.hidden_size * layer.intermediate_size
            if self.num_experts:
                experts = self.top_k_experts if active else self.num_experts
                total += experts * 3 * self.hidden_size * self.moe_intermediate_size
                total += self.hidden_size * self.num_experts  # router
            if self.per_layer_input_size:  # per-layer input gate and projection
                total += 2 * self.hidden_size * self.per_layer_input_size
        if self.per_layer_input_size:  # projection of the hidden state to every layer's input
            total += self.hidden_size * self.num_layers * self.per_layer_input_size
        return total

    @property
    def embedding_params(self) -> float:
        """Token embeddings (also the LM head when tied) plus an untied head."""
        n = self.vocab_size * self.hidden_size
        return n if self.tie_word_embeddings else 2 * n

    @property
    def per_layer_embedding_params(self) -> float:
        """Gemma's per-layer embeddings (looked up, never multiplied)."""
        return float(self.vocab_size * self.num_layers * self.per_layer_input_size)

    @property
    def params_total(self) -> float:
        """All parameters vLLM loads for the text model, plus encoders."""
        return (self.linear_params() + self.embedding_params + self.per_layer_embedding_params
                + self.encoder_params)  # fmt: skip

    @property
    def params_active(self) -> float:
        """Parameters one token goes through (MoE: routed experts only; no PLE / encoders)."""
        return self.linear_params(active=True) + self.embedding_params

    def weight_bytes(self, fmt: str) -> float:
        """Bytes of weights in device memory for a format (before tensor parallelism)."""
        if fmt not in _LINEAR_BYTES:
            raise ConfigError(f"Unknown weight format '{fmt}'; choose one of: {', '.join(WEIGHT_FORMATS)}.")
        if fmt == "bf16" and self.measured_weight_bytes:
            return self.measured_weight_bytes
        bf16_parts = self.embedding_params + self.per_layer_embedding_params + self.encoder_params
        return self.linear_params() * _LINEAR_BYTES[fmt] + 2.0 * bf16_parts

    def linear_bytes_per_param(self, fmt: str) -> float:
        return _LINEAR_BYTES[fmt]

    # --- KV -----------------------------------------------------------------------------------------

    def kv_layers(self) -> list[LayerSpec]:
        """Layers that own KV cache."""
        return [layer for layer in self.layers if not layer.kv_shared]

    def kv_bytes_per_token(self, dtype_bytes: float, tp: int = 1) -> dict[str, float]:
        """KV bytes per token on one device by layer type: {'full': ..., 'sliding': ...}."""
        out = {"full": 0.0, "sliding": 0.0}
        for layer in self.kv_layers():
            out[layer.attention] += layer.kv_bytes_per_token(dtype_bytes, tp)
        return out


# --- construction ---------------------------------------------------------------------------------------


def _layer_types(cfg: dict[str, Any], n: int) -> list[str]:
    if types := cfg.get("layer_types"):
        return list(types)[:n]
    every = cfg.get("full_attention_every")
    if every is None and cfg.get("sliding_window_pattern"):  # Gemma 2/3
        every = int(cfg["sliding_window_pattern"])
    if every is None:
        if cfg.get("sliding_window") and str(cfg.get("model_type", "")).startswith("gemma4"):
            every = 6
        else:
            return ["full_attention"] * n
    types = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(n)]
    if str(cfg.get("model_type", "")).startswith("gemma4"):
        types[-1] = "full_attention"
    return types


def _per_layer_shapes(cfg: dict[str, Any], types: list[str], hidden: int, heads: int) -> list[dict[str, int]]:
    """Head size and KV heads per layer by the hand-written rules (catalog entries; the fallback without
    transformers). Gemma 4 follows ``Gemma4TextConfig.__post_init__``: a config.json that carries
    ``per_layer_config`` (what transformers 5.x writes) means exactly those overrides of ``head_dim`` /
    ``num_key_value_heads``, keyed by layer index; without it full layers take ``global_head_dim``
    (default 512) and, when ``attention_k_eq_v``, ``num_global_key_value_heads``.
    """
    kv = int(cfg.get("num_key_value_heads") or heads)
    head_dim = int(cfg.get("head_dim") or hidden // heads)
    base = {"head_dim": head_dim, "num_key_value_heads": kv}
    gemma4 = str(cfg.get("model_type", "")).startswith("gemma4")
    overrides = cfg.get("per_layer_config")
    if isinstance(overrides, dict):
        return [{**base, **{k: v for k, v in (overrides.get(str(i)) or overrides.get(i) or {}).items() if k in base}}
                for i in range(len(types))]  # fmt: skip
    if not gemma4:
        return [dict(base) for _ in types]
    k_eq_v = bool(cfg.get("attention_k_eq_v", False))
    full = {"head_dim": int(cfg.get("global_head_dim") or 512),
            "num_key_value_heads": int(cfg.get("num_global_key_value_heads") or kv) if k_eq_v else kv}  # fmt: skip
    return [dict(full) if t == "full_attention" else dict(base) for t in types]


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The language model's config of a multimodal config.json (``text_config``), else the config."""
    text = cfg.get("text_config")
    return {**text, "_outer": cfg} if isinstance(text, dict) else cfg


def spec_from_config(config: dict[str, Any], name: str, **meta: Any) -> ModelSpec:
    """Build a ModelSpec from a Hugging Face config.json dict (or a catalog entry's ``config``)."""
    cfg = _text_config(config)
    try:
        hidden = int(cfg["hidden_size"])
        n = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
    except (KeyError, TypeError, ValueError):
        raise ConfigError(
            f"{name}: config.json lacks hidden_size / num_hidden_layers / num_attention_heads; "
            f"is it a decoder language model?"
        ) from None
    k_eq_v = bool(cfg.get("attention_k_eq_v", False))
    window = cfg.get("sliding_window")
    shared = int(cfg.get("num_kv_shared_layers") or 0)
    inter = int(cfg.get("intermediate_size") or 4 * hidden)
    kv_shared_target = bool(cfg.get("kv_shared", False))
    types = _layer_types(cfg, n)
    shapes = cfg.get("_per_layer") or _per_layer_shapes(cfg, types, hidden, heads)
    layers = []
    for i, kind in enumerate(types):
        full = kind != "sliding_attention" or not window
        is_shared = kv_shared_target or i >= n - shared
        # Gemma 3n/4 double the MLP width of KV-shared layers when use_double_wide_mlp is set.
        width = inter * (2 if cfg.get("use_double_wide_mlp") and i >= n - shared else 1)
        layers.append(LayerSpec(
            index=i,
            attention="full" if full else "sliding",
            sliding_window=None if full else int(window),
            num_kv_heads=int(shapes[i]["num_key_value_heads"]),
            head_dim=int(shapes[i]["head_dim"]),
            kv_shared=is_shared,
            intermediate_size=width,
        ))  # fmt: skip
    moe = bool(cfg.get("enable_moe_block")) or bool(cfg.get("num_experts") or cfg.get("num_local_experts"))
    spec = ModelSpec(
        name=name,
        family=meta.pop("family", None) or str(cfg.get("model_type") or "unknown"),
        hidden_size=hidden,
        num_layers=n,
        num_heads=heads,
        vocab_size=int(cfg.get("vocab_size") or 32000),
        max_position_embeddings=int(cfg.get("max_position_embeddings") or 8192),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", True))),
        layers=layers,
        num_experts=int(cfg.get("num_experts") or cfg.get("num_local_experts") or 0) if moe else 0,
        top_k_experts=int(cfg.get("top_k_experts") or cfg.get("num_experts_per_tok") or 0) if moe else 0,
        moe_intermediate_size=int(cfg.get("moe_intermediate_size") or 0) if moe else 0,
        per_layer_input_size=int(cfg.get("hidden_size_per_layer_input") or 0),
        kv_shared_with_target=kv_shared_target,
        attention_k_eq_v=k_eq_v,
        **meta,
    )
    return spec


def read_checkpoint_config(config_file: Path) -> tuple[dict[str, Any], str, str]:
    """A config.json as the planner reads it: ``(config, reader, detail)``.

    With transformers importable, the config object transformers builds (:mod:`inferctl.catalog.hf_config`,
    what vLLM reads); without it, or when transformers cannot build this config, the raw JSON by the
    hand-written rules of :func:`spec_from_config`, and ``detail`` says why.
    """
    from inferctl.catalog import hf_config

    try:
        raw = json.loads(config_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Cannot read {config_file}: {exc}.") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{config_file} does not hold a JSON object.")
    version = hf_config.transformers_version()
    if version is None:
        return raw, "json", "transformers is not importable: config.json read by inferctl's own rules"
    try:
        return hf_config.read_config(config_file), "transformers", f"transformers {version} AutoConfig"
    except hf_config.Unreadable as exc:
        return raw, "json", f"transformers {version} cannot build this config ({exc}): read by inferctl's own rules"


def _safetensors_bytes(directory: Path) -> float | None:
    """Sum of tensor bytes from the safetensors headers in a checkpoint directory (no tensor is read)."""
    total, found = 0, False
    for path in sorted(directory.glob("*.safetensors")):
        try:
            with path.open("rb") as f:
                (size,) = struct.unpack("<Q", f.read(8))
                header = json.loads(f.read(size))
        except (OSError, ValueError, struct.error):
            return None
        for key, info in header.items():
            if key != "__metadata__":
                start, end = info["data_offsets"]
                total += end - start
                found = True
    return float(total) if found else None


@cache
def _catalog_raw() -> dict[str, dict[str, Any]]:
    text = resources.files("inferctl.catalog").joinpath("data/models.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def catalog_models() -> dict[str, ModelSpec]:
    """Every model in the catalog, by name."""
    return {name: _from_entry(name, entry) for name, entry in _catalog_raw().items()}


def _from_entry(name: str, entry: dict[str, Any]) -> ModelSpec:
    meta = {k: v for k, v in entry.items() if k not in ("config", "aliases")}
    return spec_from_config(entry["config"], name, config_reader="catalog",
                            config_reader_detail="inferctl model catalog (catalog/data/models.toml)", **meta)


def load_model(name_or_path: str) -> ModelSpec:
    """A catalog model by name, alias or HF id (case-insensitive), or a config.json file or directory.

    Raises ConfigError listing the catalog's names when nothing matches.
    """
    raw = _catalog_raw()
    key = name_or_path.strip().lower()
    for name, entry in raw.items():
        names = [name, str(entry.get("hf_id", "")).lower(), *(a.lower() for a in entry.get("aliases", []))]
        if key in names:
            return _from_entry(name, entry)
    path = Path(name_or_path).expanduser()
    config_file = path / "config.json" if path.is_dir() else path
    if config_file.is_file():
        config, reader, detail = read_checkpoint_config(config_file)
        spec = spec_from_config(config, str(path), source=f"config.json at {config_file}", formats=["bf16"],
                                config_reader=reader, config_reader_detail=detail)  # fmt: skip
        spec.measured_weight_bytes = _safetensors_bytes(config_file.parent)
        return spec
    targets = [n for n, e in raw.items() if not e.get("drafter_for")]
    raise ConfigError(
        f"Unknown model '{name_or_path}'; use a catalog name ({', '.join(targets)}) "
        f"or a directory holding a config.json."
    )
