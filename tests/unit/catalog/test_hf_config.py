"""Checkpoints are read through transformers' own config classes, as vLLM reads them (issue 11.1).

Every checkpoint here is written by transformers itself (``save_pretrained``), so the config.json is what a
user downloads or saves, not what we think it should look like. The truth each test asserts is what vLLM's
``Gemma4DecoderLayer`` reads from the same object: ``per_layer_config[i].head_dim`` and
``.num_key_value_heads``, ``layer_types``, ``sliding_window``, ``num_kv_shared_layers``.
"""

from __future__ import annotations

import json
import sys

import pytest

from inferctl.catalog import hf_config
from inferctl.catalog.models import _catalog_raw, catalog_models, load_model
from inferctl.plan.kvcache import kv_layout

transformers = pytest.importorskip("transformers")

TINY = {"hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 2, "vocab_size": 512,
        "max_position_embeddings": 4096}  # fmt: skip


@pytest.fixture
def no_transformers(monkeypatch):
    """transformers not importable (None in sys.modules makes ``import transformers`` raise ImportError)."""
    hf_config.transformers_version.cache_clear()
    monkeypatch.setitem(sys.modules, "transformers", None)
    yield
    hf_config.transformers_version.cache_clear()


def _save(cfg, path):
    cfg.save_pretrained(path)
    return json.loads((path / "config.json").read_text())


def test_transformers_saved_gemma4_with_equal_head_dims_is_64_wide_on_full_layers(tmp_path):
    """The issue's checkpoint: per_layer_config {} and no global_head_dim key; vLLM serves head_dim 64."""
    saved = _save(transformers.Gemma4TextConfig(**TINY, num_hidden_layers=6, num_key_value_heads=1, head_dim=64,
                                                global_head_dim=64), tmp_path)  # fmt: skip
    assert saved["per_layer_config"] == {} and "global_head_dim" not in saved  # the shape of the bug report
    m = load_model(str(tmp_path))
    assert m.config_reader == "transformers" and "transformers" in m.config_reader_detail
    assert [layer.attention for layer in m.layers] == ["sliding"] * 5 + ["full"]
    assert [layer.head_dim for layer in m.layers] == [64] * 6
    assert m.layers[-1].num_kv_heads == 1
    # What vLLM builds from the same object, layer by layer.
    hf = transformers.AutoConfig.from_pretrained(str(tmp_path))
    assert [(lc.head_dim, lc.num_key_value_heads) for lc in hf.per_layer_config] == [
        (layer.head_dim, layer.num_kv_heads) for layer in m.layers]
    # And the KV cache follows: one full layer of 64 x 1 head -> 256 bytes per token in bf16.
    assert m.kv_bytes_per_token(2.0)["full"] == 2 * 1 * 64 * 2.0


def test_transformers_saved_per_layer_overrides_k_eq_v(tmp_path):
    """global_head_dim and num_global_key_value_heads end up in per_layer_config only (no top-level keys)."""
    saved = _save(transformers.Gemma4TextConfig(**TINY, num_hidden_layers=6, num_key_value_heads=2, head_dim=64,
                                                global_head_dim=128, attention_k_eq_v=True,
                                                num_global_key_value_heads=1), tmp_path)  # fmt: skip
    assert "global_head_dim" not in saved and saved["per_layer_config"] == {
        "5": {"head_dim": 128, "num_key_value_heads": 1}}
    m = load_model(str(tmp_path))
    assert [(layer.head_dim, layer.num_kv_heads) for layer in m.layers] == [(64, 2)] * 5 + [(128, 1)]
    assert m.attention_k_eq_v


def test_transformers_default_global_head_dim_is_512(tmp_path):
    """No global_head_dim given at all: transformers' default (512) is what vLLM reads - and so do we."""
    _save(transformers.Gemma4TextConfig(**TINY, num_hidden_layers=6, num_key_value_heads=1, head_dim=64), tmp_path)
    assert [layer.head_dim for layer in load_model(str(tmp_path)).layers] == [64] * 5 + [512]


def test_kv_shared_layers_double_wide_mlp_and_sliding_window(tmp_path):
    _save(transformers.Gemma4TextConfig(**TINY, num_hidden_layers=6, num_key_value_heads=1, head_dim=64,
                                        global_head_dim=64, sliding_window=256, num_kv_shared_layers=2,
                                        use_double_wide_mlp=True,
                                        layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2),
          tmp_path)  # fmt: skip
    m = load_model(str(tmp_path))
    assert [layer.kv_shared for layer in m.layers] == [False] * 4 + [True] * 2
    assert [layer.intermediate_size for layer in m.layers] == [256] * 4 + [512] * 2
    assert {layer.sliding_window for layer in m.layers if layer.attention == "sliding"} == {256}
    assert [layer.index for layer in m.kv_layers()] == [0, 1, 2, 3]


def test_multimodal_gemma4_reads_the_text_config(tmp_path):
    text = transformers.Gemma4TextConfig(**TINY, num_hidden_layers=6, num_key_value_heads=1, head_dim=64,
                                         global_head_dim=64)  # fmt: skip
    _save(transformers.Gemma4Config(text_config=text.to_dict()), tmp_path)
    m = load_model(str(tmp_path))
    assert m.family == "gemma4_text" and m.hidden_size == 128
    assert [layer.head_dim for layer in m.layers] == [64] * 6


def test_other_families_follow_vllms_generic_rules(tmp_path):
    # Mistral without layer_types: vLLM's model-level window slides on every layer.
    _save(transformers.MistralConfig(hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                                     num_hidden_layers=3, intermediate_size=512, sliding_window=1024), tmp_path / "m")
    m = load_model(str(tmp_path / "m"))
    assert {(layer.attention, layer.sliding_window, layer.head_dim, layer.num_kv_heads) for layer in m.layers} == {
        ("sliding", 1024, 64, 2)}
    # Qwen2 with its sliding window switched off (the published configs' use_sliding_window: false).
    _save(transformers.Qwen2Config(hidden_size=256, num_attention_heads=4, num_key_value_heads=2, num_hidden_layers=3,
                                   intermediate_size=512, sliding_window=1024, use_sliding_window=False),
          tmp_path / "q")  # fmt: skip
    assert {layer.attention for layer in load_model(str(tmp_path / "q")).layers} == {"full"}


def test_without_transformers_the_json_rules_read_per_layer_config(tmp_path, no_transformers):
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "gemma4_text", **TINY, "num_hidden_layers": 6, "num_key_value_heads": 2, "head_dim": 64,
        "sliding_window": 512, "attention_k_eq_v": True, "per_layer_config": {"5": {"num_key_value_heads": 1}},
        "layer_types": ["sliding_attention"] * 5 + ["full_attention"]}))  # fmt: skip
    m = load_model(str(tmp_path))
    assert m.config_reader == "json" and "not importable" in m.config_reader_detail
    assert [(layer.head_dim, layer.num_kv_heads) for layer in m.layers] == [(64, 2)] * 5 + [(64, 1)]


def test_a_config_transformers_cannot_build_falls_back_and_says_why(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "no-such-architecture", "hidden_size": 64,
                                                      "num_hidden_layers": 2, "num_attention_heads": 2}))
    m = load_model(str(tmp_path))
    assert m.config_reader == "json" and "cannot build" in m.config_reader_detail
    assert [layer.head_dim for layer in m.layers] == [32, 32]


# --- the hand-written catalog agrees with transformers -------------------------------------------------------
#
# The catalog keeps Gemma 4's shapes without a download. To prove its rules (global_head_dim on full layers,
# num_global_key_value_heads only with attention_k_eq_v, the 5:1 layer pattern with the last layer full, the
# last num_kv_shared_layers layers sharing KV, double-wide MLPs on them) give what transformers gives, each
# entry's shape parameters - the published config.json fields the catalog transcribes - are handed to
# transformers' own config class for that model_type, saved, and read back through transformers. The catalog's
# shorthand `full_attention_every = 6` is left out, so transformers' default pattern decides the layer types;
# E2B's every-5th pattern is not transformers' default and is spelled out as the published layer_types.

_TARGETS = [name for name, entry in _catalog_raw().items() if not entry.get("drafter_for")]


def _transformers_kwargs(entry_config: dict) -> dict:
    kwargs = {k: v for k, v in entry_config.items() if k != "full_attention_every"}
    every = entry_config.get("full_attention_every")
    if every not in (None, 6):
        n = entry_config["num_hidden_layers"]
        kwargs["layer_types"] = ["sliding_attention" if (i + 1) % every else "full_attention" for i in range(n)]
        kwargs["layer_types"][-1] = "full_attention"
    return kwargs


@pytest.mark.parametrize("name", _TARGETS)
def test_catalog_agrees_with_transformers(name, tmp_path):
    entry = _catalog_raw()[name]["config"]
    kwargs = _transformers_kwargs(entry)
    model_type = kwargs.pop("model_type")
    transformers.AutoConfig.for_model(model_type, **kwargs).save_pretrained(tmp_path)
    via_hf = load_model(str(tmp_path))
    catalog = catalog_models()[name]
    assert via_hf.config_reader == "transformers" and catalog.config_reader == "catalog"
    assert [layer.model_dump() for layer in via_hf.layers] == [layer.model_dump() for layer in catalog.layers]
    for field in ("hidden_size", "num_layers", "num_heads", "vocab_size", "max_position_embeddings",
                  "tie_word_embeddings", "attention_k_eq_v", "num_experts", "top_k_experts", "moe_intermediate_size",
                  "per_layer_input_size"):  # fmt: skip
        assert getattr(via_hf, field) == getattr(catalog, field), field
    assert via_hf.linear_params() == catalog.linear_params()
    # The KV cache vLLM would allocate is the same byte for byte.
    a, b = (kv_layout(m, kv_memory_bytes=8 * 2**30, max_model_len=32768, max_num_batched_tokens=8192)
            for m in (via_hf, catalog))  # fmt: skip
    assert (a.kv_cache_tokens, a.num_blocks, a.bytes_per_block) == (b.kv_cache_tokens, b.num_blocks,
                                                                    b.bytes_per_block)
