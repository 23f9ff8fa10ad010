"""Tiny-model variants of other sizes (build_tiny_model overrides), as the planner and the KV test engines use them."""

from __future__ import annotations

import json

import pytest

from inferctl.catalog.models import load_model
from inferctl.local import tinymodel

BIG = {"hidden_size": 128, "intermediate_size": 512, "head_dim": 32, "global_head_dim": 64,
       "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2}  # fmt: skip


def _header(path):
    raw = path.read_bytes()
    n = int.from_bytes(raw[:8], "little")
    return json.loads(raw[8 : 8 + n])


def test_variant_has_the_requested_shapes_and_weights_to_match(tmp_path):
    tinymodel.build_tiny_model(tmp_path / "v", **BIG)
    cfg = json.loads((tmp_path / "v" / "config.json").read_text())
    assert cfg["hidden_size"] == 128 and cfg["num_hidden_layers"] == 6  # follows layer_types
    header = _header(tmp_path / "v" / "model.safetensors")
    assert header["model.layers.5.mlp.down_proj.weight"]["shape"] == [128, 512]
    assert "model.layers.6.mlp.down_proj.weight" not in header
    manifest = json.loads((tmp_path / "v" / tinymodel.MANIFEST).read_text())
    assert manifest["config_overrides"]["hidden_size"] == 128
    spec = load_model(str(tmp_path / "v"))
    assert spec.hidden_size == 128 and spec.num_layers == 6
    assert [layer.attention for layer in spec.layers] == ["sliding", "sliding", "full"] * 2


def test_no_overrides_is_the_stock_model(tmp_path):
    tinymodel.build_tiny_model(tmp_path / "a")
    assert json.loads((tmp_path / "a" / "config.json").read_text()) == tinymodel.TEXT_CONFIG
    assert "config_overrides" not in json.loads((tmp_path / "a" / tinymodel.MANIFEST).read_text())


def test_inconsistent_layer_count_is_refused(tmp_path):
    with pytest.raises(ValueError, match="layer_types has 4 entries for 6 layers"):
        tinymodel.build_tiny_model(tmp_path / "x", num_hidden_layers=6)


def test_the_same_model_saved_by_transformers_plans_the_same(tmp_path):
    """The stock tiny model and the same fields re-saved by transformers (head dims only in per_layer_config,
    no global_head_dim key) are one model to vLLM; the planner must size their KV caches identically."""
    pytest.importorskip("transformers")
    from tests.integration.plan_engines import resave_config_with_transformers

    from inferctl.plan.config import ServingConfig
    from inferctl.plan.memory import plan_memory

    tinymodel.build_tiny_model(tmp_path / "hand")
    tinymodel.build_tiny_model(tmp_path / "hf")
    saved = resave_config_with_transformers(tmp_path / "hf")
    assert saved["per_layer_config"] == {"3": {"head_dim": 64, "num_key_value_heads": 1}}

    def plan(d):
        return plan_memory(ServingConfig(model=str(d), accelerator="cpu", max_model_len=8192,
                                         max_num_batched_tokens=512, kv_cache_memory_gib=1.0)).kv  # fmt: skip

    hand, hf = plan(tmp_path / "hand"), plan(tmp_path / "hf")
    assert (hf.kv_cache_tokens, hf.max_concurrency) == (hand.kv_cache_tokens, hand.max_concurrency)
    assert hand.kv_cache_tokens == 3_273_603  # what vLLM logged for the stock model (docs/performance.md)
