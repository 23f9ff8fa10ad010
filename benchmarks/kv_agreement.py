"""Planner vs vLLM: KV-cache size and max concurrency for several tiny Gemma 4 engines.

Starts the real local vLLM (CPU build) once per configuration, sequentially, parses its startup log
with inferctl.server.logs, and compares the logged "KV cache size: N tokens, Maximum concurrency ...x"
with the planner's figure for the same configuration and the same KV memory.

    .venv/bin/python -m benchmarks.kv_agreement [--only NAME ...] [--out benchmarks/results/kv_agreement.json]

About 1.5-2.5 min per configuration on a 2-core machine. Results go to docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from tests.integration.plan_engines import TEST_CASES, EngineCase, serving_config_for, start_case

EXTRA_CASES = [
    EngineCase("stock-2k-default", max_model_len=2048),
    EngineCase("stock-32k-small-batch", max_model_len=32768, max_num_batched_tokens=256, kv_space_gib=3),
    EngineCase(
        "uniform-pages",
        overrides={"global_head_dim": 32, "num_global_key_value_heads": 2, "sliding_window": 64},
        max_model_len=4096, max_num_batched_tokens=256, block_size=32,
    ),
]
# Not here: --kv-cache-dtype fp8 - the CPU build refuses it without AVX-512/AMX ("FP8 KV cache on CPU requires
# x86 with AVX-512 or AMX"); fp8 KV sizing is covered by the hand-computed unit tests.


def compare(case: EngineCase, workdir: Path, port: int) -> dict:
    from inferctl.local import engine
    from inferctl.plan.memory import plan_memory
    from inferctl.server.logs import parse_startup_log

    t0 = time.monotonic()
    try:
        state = start_case(case, workdir, port)
    except Exception as exc:  # a configuration vLLM rejects is a result too
        return {"case": case.name, "error": str(exc).splitlines()[0][:300]}
    try:
        log = parse_startup_log(Path(state.log_path).read_text(encoding="utf-8", errors="replace"))
    finally:
        engine.terminate(state)
    plan = plan_memory(serving_config_for(case, workdir / f"model-{case.name}"))
    kv = plan.kv
    row = {
        "case": case.name,
        "startup_s": round(time.monotonic() - t0, 1),
        "vllm_tokens": log.kv_cache_tokens,
        "vllm_concurrency": log.max_concurrency,
        "vllm_kv_gib": log.kv_cache_memory_gib,
        "plan_tokens": kv.kv_cache_tokens,
        "plan_concurrency": round(kv.max_concurrency, 2),
        "groups": plan.kv_groups,
    }
    if log.kv_cache_tokens:
        row["tokens_error_pct"] = round(100 * (kv.kv_cache_tokens - log.kv_cache_tokens) / log.kv_cache_tokens, 3)
    if log.max_concurrency:
        row["concurrency_error_pct"] = round(100 * (kv.max_concurrency - log.max_concurrency) / log.max_concurrency, 3)
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--port", type=int, default=8640)
    ap.add_argument("--out", default="benchmarks/results/kv_agreement.json")
    args = ap.parse_args()
    cases = [c for c in TEST_CASES + EXTRA_CASES if not args.only or c.name in args.only]
    rows = []
    with tempfile.TemporaryDirectory(prefix="kv-agreement-") as tmp:
        for i, case in enumerate(cases):
            row = compare(case, Path(tmp), args.port + i)
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
