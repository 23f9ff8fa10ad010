"""A small simulated grid whose every figure is pinned (tests/unit/plan/data/golden_sim.json).

The simulator's speed-ups (event batching, precomputation) must not change what it predicts:
test_sim_golden.py re-simulates these cells and compares every number with the stored output of the
version before the optimisation. Regenerate only for an intended change of the model:

    .venv/bin/python -m tests.unit.plan.golden_sim
"""

from __future__ import annotations

import json
from pathlib import Path

from inferctl.bench.spec import SweepSpec
from inferctl.plan.cells import SimEngine, simulate_cell
from inferctl.plan.config import parse_speculative, resolve
from inferctl.plan.perf import PerfParams
from inferctl.profiles.serving import ServingConfig

PATH = Path(__file__).parent / "data" / "golden_sim.json"
CONFIGS = {
    "12b-qat-l4-32k": ServingConfig(model="gemma-4-12b", accelerator="l4", quant="w4a16", max_model_len=32768),
    "31b-h100-tp2": ServingConfig(model="gemma-4-31b", accelerator="h100", count=2, max_model_len=32768),
    "e4b-v6e": ServingConfig(model="gemma-4-e4b", accelerator="tpu-v6e", max_model_len=32768),
    "12b-mtp": ServingConfig(model="gemma-4-12b", accelerator="l4", quant="w4a16", max_model_len=32768,
                             speculative=parse_speculative("mtp:4")),
    "26b-moe-preempting": ServingConfig(model="gemma-4-26b-a4b", accelerator="l4", quant="w4a16", count=2,
                                        max_model_len=16384, kv_cache_memory_gib=1.0, max_num_seqs=64),
}  # fmt: skip
CLOSED = SweepSpec(contexts=[128, 2048, 12000], concurrencies=[1, 16, 128], output_tokens=96).validate_grid()
OPEN = SweepSpec(contexts=[1024], rates=[0.5, 8.0], concurrencies=[], max_concurrency=32, output_tokens=64,
                 burstiness=0.7, seed=3).validate_grid()  # fmt: skip
PARAMS = PerfParams(bw_efficiency=0.6, compute_efficiency=0.35, step_overhead_ms=3.0, per_seq_overhead_ms=0.03,
                    request_overhead_ms=2.0, per_token_us=0.4, compute_half_hidden=700.0)  # fmt: skip


def figures() -> dict:
    out = {}
    for name, cfg in CONFIGS.items():
        for params_name, params in (("prior", None), ("fitted", PARAMS)):
            # "prior": the catalog's uncalibrated priors, pinned as such (a shipped corpus calibration, which
            # plan and simulate use by default, must not move this speed-up guard).
            engine = SimEngine(cfg, params or PerfParams.prior(resolve(cfg)))
            for spec_name, spec in (("closed", CLOSED), ("open", OPEN)):
                for cell in spec.cells():
                    res, _, _ = simulate_cell(engine, spec, cell)
                    key = f"{name}/{params_name}/{spec_name}/{cell.id}"
                    out[key] = {"metrics": res.metrics.model_dump(mode="json"), "server": res.server,
                                "status": res.status}  # fmt: skip
    return out


if __name__ == "__main__":
    PATH.parent.mkdir(parents=True, exist_ok=True)
    PATH.write_text(json.dumps(figures(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(PATH)
