"""Catalog data: every entry loads, says where it comes from, and matches the published shapes."""

from __future__ import annotations

import json

import pytest

from inferctl.catalog import accelerators, catalog_models, get_accelerator, load_model
from inferctl.errors import ConfigError

GEMMA4 = ["gemma-4-e2b", "gemma-4-e4b", "gemma-4-12b", "gemma-4-26b-a4b", "gemma-4-31b"]


def test_every_entry_has_source_and_date():
    for acc in accelerators().values():
        assert acc.source and acc.date.startswith("20"), acc.name
    for model in catalog_models().values():
        assert model.source and model.date.startswith("20"), model.name


def test_required_accelerators_present():
    names = set(accelerators())
    assert {"l4", "rtx-pro-6000", "a100-40", "a100-80", "h100", "h200", "tpu-v5e", "tpu-v6e", "cpu"} <= names


def test_accelerator_aliases_and_units():
    assert get_accelerator("V6E").name == "tpu-v6e"
    l4 = get_accelerator("l4")
    assert l4.bandwidth == 300e9
    assert l4.peak_flops("fp8") == 242e12
    assert get_accelerator("a100-80").peak_flops("fp8") == 312e12  # no FP8 units: weight-only fp8


def test_unknown_accelerator_lists_names():
    with pytest.raises(ConfigError, match=r"Unknown accelerator 'b300'.*l4.*tpu-v6e"):
        get_accelerator("b300")


def test_unknown_model_lists_names():
    with pytest.raises(ConfigError, match=r"Unknown model 'llama-9'.*gemma-4-12b"):
        load_model("llama-9")


@pytest.mark.parametrize(
    ("name", "sliding", "full", "sliding_bytes", "full_bytes"),
    [
        # reference/vllm.md §5.1 derived table (bf16, TP 1): layers owning KV x bytes per token.
        ("gemma-4-e2b", 12, 3, 12 * 1024, 3 * 2048),
        ("gemma-4-e4b", 20, 4, 20 * 2048, 4 * 4096),
        ("gemma-4-12b", 40, 8, 40 * 8192, 8 * 2048),
        ("gemma-4-26b-a4b", 25, 5, 25 * 8192, 5 * 4096),
        ("gemma-4-31b", 50, 10, 50 * 16384, 10 * 8192),
    ],
)
def test_kv_shapes_match_reference(name, sliding, full, sliding_bytes, full_bytes):
    m = load_model(name)
    kv_layers = m.kv_layers()
    assert sum(1 for layer in kv_layers if layer.attention == "sliding") == sliding
    assert sum(1 for layer in kv_layers if layer.attention == "full") == full
    assert m.kv_bytes_per_token(2.0) == {"sliding": sliding_bytes, "full": full_bytes}
    assert m.kv_bytes_per_token(1.0)["full"] == full_bytes / 2


def test_e2b_full_layers_and_kv_sharing():
    m = load_model("e2b")
    assert [layer.index for layer in m.layers if layer.attention == "full"] == [4, 9, 14, 19, 24, 29, 34]
    assert [layer.index for layer in m.layers if layer.kv_shared] == list(range(15, 35))
    # use_double_wide_mlp doubles the MLP of the KV-shared layers only
    assert m.layers[14].intermediate_size == 6144 and m.layers[15].intermediate_size == 12288


@pytest.mark.parametrize(
    ("name", "total_b", "active_b"),
    [
        # Published: 31B 30.7 B; 26B-A4B 25.2 B total / 3.8 B active; E2B 2.3 B effective (text, no PLE).
        ("gemma-4-31b", 30.7, 30.7),
        ("gemma-4-26b-a4b", 25.2, 3.8),
        ("gemma-4-12b", 11.9, 11.9),
    ],
)
def test_parameter_counts_match_published(name, total_b, active_b):
    m = load_model(name)
    text_total = m.params_total - m.encoder_params
    assert text_total / 1e9 == pytest.approx(total_b, rel=0.02)
    assert m.params_active / 1e9 == pytest.approx(active_b, rel=0.03)


def test_e2b_effective_params():
    m = load_model("gemma-4-e2b")
    assert (m.params_active) / 1e9 == pytest.approx(2.3, rel=0.03)


def test_weight_bytes_by_format():
    m = load_model("gemma-4-12b")
    bf16, fp8, w4 = (m.weight_bytes(f) for f in ("bf16", "fp8", "w4a16"))
    emb = 2 * (m.embedding_params + m.encoder_params)
    assert bf16 == pytest.approx(2 * m.params_total)
    assert fp8 - emb == pytest.approx((bf16 - emb) / 2)
    assert w4 - emb == pytest.approx((bf16 - emb) * (0.5 + 2 / 32) / 2)
    # The seed system learned it by failing: 12B bf16 weights alone exceed an L4.
    assert bf16 / 2**30 > get_accelerator("l4").memory_gib


def test_hf_config_directory_loads(tmp_path):
    cfg = {
        "model_type": "gemma4_text", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 32, "global_head_dim": 64, "num_global_key_value_heads": 1,
        "attention_k_eq_v": True, "sliding_window": 128, "vocab_size": 512, "max_position_embeddings": 131072,
        "layer_types": ["sliding_attention"] * 3 + ["full_attention"],
    }
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_model(str(tmp_path))
    assert [layer.attention for layer in m.layers] == ["sliding"] * 3 + ["full"]
    assert (m.layers[0].num_kv_heads, m.layers[0].head_dim) == (2, 32)
    assert (m.layers[3].num_kv_heads, m.layers[3].head_dim) == (1, 64)
    assert m.kv_bytes_per_token(2.0) == {"sliding": 3 * 256, "full": 256}


def test_multimodal_config_uses_text_config(tmp_path):
    cfg = {"architectures": ["X"], "text_config": {"hidden_size": 256, "num_hidden_layers": 2,
                                                   "num_attention_heads": 4, "num_key_value_heads": 4}}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    m = load_model(str(tmp_path / "config.json"))
    assert m.num_layers == 2 and all(layer.attention == "full" for layer in m.layers)
    assert m.kv_bytes_per_token(2.0)["full"] == 2 * (2 * 4 * 64 * 2)


def test_safetensors_size_is_read(tmp_path):
    import struct

    header = json.dumps({"w": {"dtype": "BF16", "shape": [10, 10], "data_offsets": [0, 200]}}).encode()
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 200)
    (tmp_path / "config.json").write_text(json.dumps(
        {"hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 1, "vocab_size": 16}))
    m = load_model(str(tmp_path))
    assert m.measured_weight_bytes == 200 and m.weight_bytes("bf16") == 200
