"""A checkpoint's config.json read by transformers' own config classes - the object vLLM's model code reads.

vLLM builds every model from ``AutoConfig.from_pretrained(dir)``: transformers fills its defaults and derived
fields (Gemma 4's ``layer_types`` pattern, ``global_head_dim`` default of 512, the per-layer overrides in
``per_layer_config``) and vLLM reads the result. Re-implementing those rules by hand drifts with every
transformers release (issue 11: a checkpoint saved by transformers 5.x with ``"per_layer_config": {}`` and no
``global_head_dim`` key was read as 512-wide full layers, while vLLM serves it 64 wide). So when transformers
is importable the planner reads the same object, through the same attributes vLLM reads:

* the text config: ``config.get_text_config()`` (vLLM's ``hf_text_config``);
* per layer: ``per_layer_config[i].head_dim`` and ``.num_key_value_heads`` on heterogeneous configs (Gemma 4,
  ``Gemma4DecoderLayer``); otherwise vLLM's ``get_head_size`` (``head_dim``, else ``hidden_size_per_head``,
  else hidden / heads) and ``get_total_num_kv_heads`` (``n_head_kv``, ``num_kv_heads``,
  ``num_key_value_heads``, ``multi_query_group_num``, ``num_attention_groups``, else the query heads);
* ``layer_types`` and ``sliding_window`` (a model without ``layer_types`` but with a window slides on every
  layer: vLLM's model-level ``cache_config.sliding_window``; a window of 0 means none);
* ``num_kv_shared_layers``, ``attention_k_eq_v``, ``use_double_wide_mlp``, experts, per-layer input width.

:func:`read_config` returns a plain dict in the catalog's config.json vocabulary with every layer spelled
out (``layer_types`` and ``_per_layer``), which :func:`inferctl.catalog.models.spec_from_config` turns into a
ModelSpec without applying any rule of its own.
"""

from __future__ import annotations

import logging
from functools import cache
from pathlib import Path
from typing import Any

# Model-level attributes the planner reads, by their config.json names (transformers fills defaults).
_SCALARS = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
            "vocab_size", "max_position_embeddings", "tie_word_embeddings", "attention_k_eq_v",
            "num_kv_shared_layers", "use_double_wide_mlp", "enable_moe_block", "num_experts", "num_local_experts",
            "top_k_experts", "num_experts_per_tok", "moe_intermediate_size", "hidden_size_per_layer_input",
            "kv_shared")  # fmt: skip
_KV_HEAD_NAMES = ("n_head_kv", "num_kv_heads", "num_key_value_heads", "multi_query_group_num",
                  "num_attention_groups")  # fmt: skip


class Unreadable(Exception):
    """transformers cannot build this config (unknown model type, invalid values): fall back to the raw JSON."""


@cache
def transformers_version() -> str | None:
    """transformers' version when it can be imported, else None (the planner then reads config.json itself)."""
    try:
        import transformers
    except Exception:  # noqa: BLE001 - any import failure means "not available", whatever its kind
        return None
    return str(getattr(transformers, "__version__", "unknown"))


def _first(obj: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return None


def _head_size(layer: Any, hidden: int, heads: int) -> int:
    """vLLM's ``ModelArchConfigConvertorBase.get_head_size`` (non-MLA)."""
    head_dim = getattr(layer, "head_dim", None)
    if head_dim is not None and head_dim > 0:
        return int(head_dim)
    if getattr(layer, "hidden_size_per_head", None) is not None:
        return int(layer.hidden_size_per_head)
    return hidden // heads if heads else 0


def read_config(config_file: Path) -> dict[str, Any]:
    """The text model's config as transformers constructs it, every layer explicit.

    Raises :class:`Unreadable` (with transformers' reason) when transformers cannot build it, and
    ImportError when transformers is not importable.
    """
    from transformers import AutoConfig

    log = logging.getLogger("transformers")  # its warnings ("Forcing last layer ...") are not ours to print
    level = log.level
    log.setLevel(logging.ERROR)
    try:
        try:
            hf = AutoConfig.from_pretrained(str(config_file), local_files_only=True)
        except Exception as exc:  # noqa: BLE001 - transformers raises ValueError, KeyError, OSError, ...
            raise Unreadable(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
        text = hf.get_text_config() if hasattr(hf, "get_text_config") else hf
        per_layer_attrs = set(getattr(text, "per_layer_attributes", None) or ())
        out: dict[str, Any] = {}
        for key in _SCALARS:
            if key not in per_layer_attrs:
                value = getattr(text, key, None)
                if value is not None:
                    out[key] = value
        try:
            n = int(text.num_hidden_layers)
            heads = int(text.num_attention_heads)
            hidden = int(text.hidden_size)
        except (AttributeError, TypeError, ValueError):
            raise Unreadable("it has no num_hidden_layers / num_attention_heads / hidden_size") from None
        window = getattr(text, "sliding_window", None) or None  # 0 = no window (vLLM's ModelConfig)
        # No per-layer types: vLLM applies the model-level window (if any) to every layer.
        declared = getattr(text, "layer_types", None)
        types = list(declared)[:n] if declared else ["sliding_attention" if window else "full_attention"] * n
        heterogeneous = bool(getattr(text, "is_heterogeneous", False))
        per_layer = []
        for i in range(n):
            layer = text.per_layer_config[i] if heterogeneous else text
            kv = _first(layer, _KV_HEAD_NAMES) or heads
            per_layer.append({"head_dim": _head_size(layer, hidden, heads), "num_key_value_heads": int(kv)})
        out.update(layer_types=types, sliding_window=window, _per_layer=per_layer)
        return out
    finally:
        log.setLevel(level)
