"""The planner's KV-cache size and max concurrency against the real vLLM engine's own startup log.

Five engines (tests/integration/plan_engines.TEST_CASES), started one after another: the stock tiny
Gemma 4 at 8k context, a variant whose full/sliding pages differ (block-size unification) with padded
groups and block size 64, a variant with KV-shared layers, and two checkpoints whose config.json
transformers itself wrote (per_layer_config, no global_head_dim key; issue 11.1). Given the KV memory the
engine was given (VLLM_CPU_KVCACHE_SPACE), "KV cache size: N tokens" must be equal and "Maximum
concurrency ...: Xx" equal to the two decimals vLLM prints. benchmarks/kv_agreement.py runs a broader
set; docs/performance.md has its results.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.integration.plan_engines import TEST_CASES, free_port, serving_config_for, start_case

from inferctl.plan.memory import plan_memory
from inferctl.server.logs import parse_startup_log


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    from inferctl.local.tinymodel import ensure_tiny_model

    ensure_tiny_model()  # built in the normal cache, before INFERCTL_HOME moves (stable path)
    home = tmp_path_factory.mktemp("plan-home")
    old = os.environ.get("INFERCTL_HOME")
    os.environ["INFERCTL_HOME"] = str(home)
    try:
        yield tmp_path_factory.mktemp("plan-models")
    finally:
        if old is None:
            os.environ.pop("INFERCTL_HOME", None)
        else:
            os.environ["INFERCTL_HOME"] = old


@pytest.mark.parametrize("case", TEST_CASES, ids=[c.name for c in TEST_CASES])
def test_kv_size_matches_vllm_log(case, workdir: Path):
    from inferctl.local import engine

    state = start_case(case, workdir, free_port())
    try:
        log = parse_startup_log(Path(state.log_path).read_text(encoding="utf-8", errors="replace"))
    finally:
        engine.terminate(state)
    assert log.kv_cache_tokens and log.max_concurrency, "the engine logged no KV cache size"
    assert log.max_concurrency_tokens_per_request == case.max_model_len
    plan = plan_memory(serving_config_for(case, workdir / f"model-{case.name}"))
    assert plan.kv.kv_cache_tokens == log.kv_cache_tokens
    assert plan.kv.max_concurrency == pytest.approx(log.max_concurrency, abs=0.005)  # vLLM prints 2 decimals
