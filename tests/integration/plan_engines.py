"""Real vLLM engines with several tiny Gemma 4 shapes, for checking the planner against vLLM's own log.

Shared by tests/integration/test_plan_kv_agreement.py (three configurations) and
benchmarks/kv_agreement.py (the broader set). A variant is the tiny local checkpoint with its
config.json changed (sizes, layer pattern, window, KV heads) and weights regenerated for the new
shapes with the tiny-model builder's own recipe, so vLLM walks the same Gemma 4 code paths.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class EngineCase:
    """One engine configuration: model overrides plus vLLM flags and the CPU KV space."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    max_model_len: int = 2048
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    kv_space_gib: int = 1
    kv_cache_dtype: str | None = None
    max_num_seqs: int | None = None
    # config.json written by transformers itself (save_pretrained) instead of the tiny builder: Gemma 4's
    # global_head_dim / num_global_key_value_heads then live only in "per_layer_config" (issue 11.1).
    saved_by_transformers: bool = False

    def args(self) -> list[str]:
        out = ["--max-model-len", str(self.max_model_len), "--enforce-eager"]
        if self.max_num_batched_tokens is not None:
            out += ["--max-num-batched-tokens", str(self.max_num_batched_tokens)]
        if self.block_size is not None:
            out += ["--block-size", str(self.block_size)]
        if self.kv_cache_dtype is not None:
            out += ["--kv-cache-dtype", self.kv_cache_dtype]
        if self.max_num_seqs is not None:
            out += ["--max-num-seqs", str(self.max_num_seqs)]
        return out


# The three the test suite starts (about 1-2 min each on a 2-core machine). Together they cover:
# the stock tiny model with sliding windows that matter (max_model_len >> window + batch), a model
# whose full and sliding pages differ (block-size unification) with padded groups and a non-default
# block size, and a model with KV-shared layers and a larger KV space.
TEST_CASES = [
    EngineCase("stock-8k", max_model_len=8192, max_num_batched_tokens=512),
    EngineCase(
        "wide-unify-pad",
        overrides={
            "hidden_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
            "global_head_dim": 128, "num_global_key_value_heads": 2, "sliding_window": 256,
            "layer_types": ["sliding_attention"] * 2 + ["full_attention"] + ["sliding_attention"] * 3
            + ["full_attention"],
        },
        max_model_len=16384, max_num_batched_tokens=1024, block_size=64, kv_space_gib=2,
    ),
    EngineCase(
        "kv-shared",
        overrides={
            "num_hidden_layers": 6, "num_kv_shared_layers": 2, "sliding_window": 512,
            "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2,
        },
        max_model_len=4096, max_num_batched_tokens=768, kv_space_gib=1,
    ),
    # Issue 11.1: checkpoints whose config.json transformers wrote. The first is the bug report's shape:
    # head_dim = global_head_dim = 64 saves as "per_layer_config": {} and no global_head_dim key (a reader
    # applying Gemma 4's 512 default sized the full layer 8x too wide). The second is the stock tiny model
    # re-saved: its full layer's head_dim 64 and single K=V head appear only as a per_layer_config override.
    EngineCase(
        "hf-saved-equal-head-dims",
        overrides={"head_dim": 64, "global_head_dim": 64, "num_global_key_value_heads": 2},
        max_model_len=8192, max_num_batched_tokens=512, saved_by_transformers=True,
    ),
    EngineCase("hf-saved-per-layer", max_model_len=8192, max_num_batched_tokens=512, saved_by_transformers=True),
]


def free_port() -> int:
    """A port nothing listens on now (sessions share the machine; fixed ports collide)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def build_variant(dest: Path, overrides: dict[str, Any], saved_by_transformers: bool = False) -> Path:
    """The tiny checkpoint with ``overrides`` applied to config.json and weights for the new shapes.

    ``saved_by_transformers``: then config.json is rewritten by transformers' own config class from the same
    fields (``AutoConfig.for_model(...).save_pretrained``), as a checkpoint saved with transformers 5.x is.
    """
    from inferctl.local import tinymodel

    if dest.exists():
        shutil.rmtree(dest)
    tinymodel.build_tiny_model(dest, **overrides)
    if saved_by_transformers:
        resave_config_with_transformers(dest)
    return dest


def resave_config_with_transformers(model_dir: Path) -> dict[str, Any]:
    """Replace ``model_dir``'s config.json with the one transformers writes for the same fields; returns it."""
    from transformers import AutoConfig

    fields = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    model_type = fields.pop("model_type")
    (model_dir / "config.json").unlink()
    AutoConfig.for_model(model_type, **fields).save_pretrained(model_dir)
    saved = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    if "global_head_dim" in saved or "per_layer_config" not in saved:
        raise AssertionError("transformers no longer saves Gemma 4 head dims as per_layer_config; revisit issue 11")
    return saved


def start_case(case: EngineCase, workdir: Path, port: int):
    """Build the case's model, start vLLM on ``port`` and wait until it serves; returns EngineState."""
    from inferctl.local import engine

    model_dir = build_variant(workdir / f"model-{case.name}", case.overrides, case.saved_by_transformers)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": str(case.kv_space_gib)}
    state = engine.spawn(model_dir, served_model_name=case.name, port=port, extra_args=case.args(), env=env)
    try:
        engine.wait_ready(state, timeout=900)
    except BaseException:
        engine.terminate(state)
        raise
    return state


def serving_config_for(case: EngineCase, model_dir: Path):
    """The planner's ServingConfig describing the same engine."""
    from inferctl.profiles.serving import ServingConfig

    return ServingConfig(
        model=str(model_dir),
        accelerator="cpu",
        max_model_len=case.max_model_len,
        max_num_batched_tokens=case.max_num_batched_tokens,
        block_size=case.block_size,
        kv_dtype=case.kv_cache_dtype or "auto",
        kv_cache_memory_gib=float(case.kv_space_gib),
        max_num_seqs=case.max_num_seqs,
    )
