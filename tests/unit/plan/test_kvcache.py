"""KV-cache sizing against hand-computed cases (vLLM 0.33's algorithm, reference/vllm.md §5.1).

Notation in the comments: page = kv_heads x block x 2 (K, V) x head_dim x dtype bytes, per layer.
Defaults: block 16, max_num_batched_tokens 2048 with async scheduling -> 4096 tokens in flight.
"""

from __future__ import annotations

import pytest

from inferctl.catalog import load_model
from inferctl.plan.kvcache import blocks_for, kv_layout

GIB = 2**30


def layout(name, *, tp=1, dtype=2.0, max_len=32768, mem=10 * GIB, **kw):
    return kv_layout(load_model(name), kv_memory_bytes=mem, max_model_len=max_len, max_num_batched_tokens=2048,
                     tp=tp, dtype_bytes=dtype, **kw)


def shape(lay):
    return sorted((g.attention, len(g.layers), g.block_size, g.page_bytes, g.blocks_per_request) for g in lay.groups)


def test_12b_tp1_bf16():
    # sliding page 8*16*2*256*2 = 131072; full page 1*16*2*512*2 = 32768 -> full block x4 = 64.
    # 40 sliding + 8 full -> group size 8 -> 5 sliding groups + 1 full group.
    # per request: sliding cdiv(min(1023 + 4096, 32768), 16) + 1 = 321; full cdiv(32768, 64) = 512.
    lay = layout("gemma-4-12b")
    assert shape(lay) == [("full", 8, 64, 131072, 512)] + [("sliding", 8, 16, 131072, 321)] * 5
    assert lay.bytes_per_block == 8 * 131072
    assert lay.num_blocks == 10 * GIB // (8 * 131072) == 10240
    assert lay.blocks_per_request == 5 * 321 + 512 == 2117
    assert lay.max_concurrency == pytest.approx(10240 / 2117)
    assert lay.kv_cache_tokens == int(10240 / 2117 * 32768)
    assert lay.padding_layers == 0


def test_12b_tp2_halves_sliding_heads_replicates_full():
    # sliding heads 8/2 = 4 -> page 65536; full heads max(1, 1//2) = 1 -> 32768 -> full block 32.
    lay = layout("gemma-4-12b", tp=2)
    assert shape(lay) == [("full", 8, 32, 65536, 1024)] + [("sliding", 8, 16, 65536, 321)] * 5
    assert lay.blocks_per_request == 1605 + 1024


def test_12b_tp8_full_page_becomes_the_larger():
    # sliding heads 1 -> 16384 < full 32768: now the sliding block doubles to 32.
    # sliding: cdiv(5119, 32) + 1 = 161 per group; full cdiv(32768, 16) = 2048.
    lay = layout("gemma-4-12b", tp=8)
    assert shape(lay) == [("full", 8, 16, 32768, 2048)] + [("sliding", 8, 32, 32768, 161)] * 5
    assert lay.blocks_per_request == 5 * 161 + 2048
    assert lay.bytes_per_block == 8 * 32768


def test_12b_fp8_kv_doubles_blocks_same_requirement():
    bf16, fp8 = layout("gemma-4-12b"), layout("gemma-4-12b", dtype=1.0)
    assert fp8.blocks_per_request == bf16.blocks_per_request
    assert fp8.num_blocks == 2 * bf16.num_blocks
    assert fp8.kv_cache_tokens == pytest.approx(2 * bf16.kv_cache_tokens, abs=2)


def test_31b_tp1_and_tp4():
    # sliding 16*16*2*256*2 = 262144; full 4*16*2*512*2 = 131072 -> full block 32; 50 + 10 -> group size 10.
    lay = layout("gemma-4-31b")
    assert shape(lay) == [("full", 10, 32, 262144, 1024)] + [("sliding", 10, 16, 262144, 321)] * 5
    assert lay.bytes_per_block == 10 * 262144
    # TP4: sliding 4 heads -> 65536; full 1 head -> 32768; still ratio 2.
    lay4 = layout("gemma-4-31b", tp=4)
    assert shape(lay4) == [("full", 10, 32, 65536, 1024)] + [("sliding", 10, 16, 65536, 321)] * 5
    assert lay4.num_blocks == 4 * lay.num_blocks


def test_26b_a4b():
    # sliding 8*16*2*256*2 = 131072; full 2*16*2*512*2 = 65536 -> block 32; 25 + 5 -> group size 5.
    lay = layout("gemma-4-26b-a4b")
    assert shape(lay) == [("full", 5, 32, 131072, 1024)] + [("sliding", 5, 16, 131072, 321)] * 5
    assert lay.bytes_per_block == 5 * 131072


def test_e2b_kv_shared_layers_allocate_nothing():
    # 15 layers own KV (20 shared): 12 sliding (1 head, 256) and 3 full (1 head, 512).
    # sliding page 16384 < full 32768 -> sliding block 32; window 512:
    # cdiv(min(511 + 4096, 32768), 32) + 1 = 145; group size 3 -> 4 sliding groups.
    lay = layout("gemma-4-e2b")
    assert shape(lay) == [("full", 3, 16, 32768, 2048)] + [("sliding", 3, 32, 32768, 145)] * 4
    assert sum(len(g.layers) for g in lay.groups) == 15
    assert lay.bytes_per_block == 3 * 32768


def test_e4b():
    # 24 own KV: 20 sliding (2 x 256 -> 32768/block) + 4 full (2 x 512 -> 65536) -> sliding block 32.
    lay = layout("gemma-4-e4b")
    assert shape(lay) == [("full", 4, 16, 65536, 2048)] + [("sliding", 4, 32, 65536, 145)] * 5
    assert lay.blocks_per_request == 5 * 145 + 2048


def test_short_context_caps_sliding_at_max_len():
    # max_len 4096 < window + in flight: sliding cdiv(4096, 16) + 1 = 257; full cdiv(4096, 64) = 64.
    lay = layout("gemma-4-12b", max_len=4096)
    assert lay.blocks_per_request == 5 * 257 + 64


def test_sync_scheduling_keeps_one_batch_in_flight():
    lay = layout("gemma-4-12b", async_scheduling=False)
    # cdiv(1023 + 2048, 16) + 1 = 193
    assert lay.groups[0].blocks_per_request == 193


def test_hybrid_manager_disabled_allocates_full_context_everywhere():
    lay = layout("gemma-4-12b", hybrid=False)
    # One uniform-type group of all 48 layers; every layer keeps the whole context.
    assert len(lay.groups) == 1 and len(lay.groups[0].layers) == 48
    assert lay.blocks_per_request == 32768 // 16
    assert lay.bytes_per_block == 40 * 131072 + 8 * 32768
    assert lay.max_concurrency < layout("gemma-4-12b").max_concurrency / 4


def test_padding_layers_when_counts_do_not_divide(tmp_path):
    import json

    # 5 sliding + 2 full: group size 2 -> sliding splits into 3 groups (2, 2, 1): one padding layer.
    cfg = {"model_type": "gemma4_text", "hidden_size": 64, "num_hidden_layers": 7, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 32, "global_head_dim": 32, "sliding_window": 128,
           "layer_types": ["sliding_attention"] * 5 + ["full_attention"] * 2, "vocab_size": 512}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    lay = kv_layout(load_model(str(tmp_path)), kv_memory_bytes=GIB, max_model_len=8192,
                    max_num_batched_tokens=512, block_size=128, async_scheduling=False)
    assert lay.padding_layers == 1
    assert sorted(len(g.layers) for g in lay.groups) == [1, 2, 2, 2]
    # pages equal (2*128*2*32*2 = 32768): bytes_per_block = 2 layers x 32768
    assert lay.bytes_per_block == 65536
    # sliding cdiv(127 + 512, 128) + 1 = 6 (x3 groups); full cdiv(8192, 128) = 64
    assert lay.blocks_per_request == 3 * 6 + 64


def test_tiny_local_model_matches_recorded_vllm_log():
    # Recorded from the real CPU engine (vLLM 0.32, tiny-gemma4-v1, --max-model-len 2048, 1 GiB KV space):
    # "CPU KV cache size: 1,001,624 tokens, Maximum concurrency for 2,048 tokens per request: 489.07x"
    from inferctl.catalog import spec_from_config

    cfg = {"model_type": "gemma4_text", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
           "num_key_value_heads": 2, "head_dim": 32, "global_head_dim": 64, "num_global_key_value_heads": 1,
           "attention_k_eq_v": True, "sliding_window": 128, "vocab_size": 512,
           "layer_types": ["sliding_attention"] * 3 + ["full_attention"]}
    lay = kv_layout(spec_from_config(cfg, "tiny"), kv_memory_bytes=GIB, max_model_len=2048,
                    max_num_batched_tokens=2048, block_size=128, async_scheduling=False)
    assert lay.kv_cache_tokens == 1_001_624
    assert round(lay.max_concurrency, 2) == 489.07


def test_blocks_for_grows_then_sliding_plateaus():
    lay = layout("gemma-4-12b")
    small, mid, big = blocks_for(lay, 100), blocks_for(lay, 8000), blocks_for(lay, 30000)
    assert small < mid < big
    # Beyond the window only the full-attention group keeps growing: 1 block per 64 tokens.
    assert blocks_for(lay, 30064) - blocks_for(lay, 30000) == 1
    assert blocks_for(lay, 32768) == lay.blocks_per_request
