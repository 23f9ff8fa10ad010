"""Does a calibration transfer? Fit on one tiny model, predict another size and another max_num_seqs.

Phase 1 (``measure``): start the real local vLLM (CPU) three times, sequentially, and run the same
`inferctl bench sweep` grid against each:

    A  the stock tiny Gemma 4 (hidden 64, 4 layers)            <- calibrate on this
    B  a bigger variant (hidden 256, 8 layers, wider heads)     <- predict: a different model size
    C  the stock model with --max-num-seqs 4                    <- predict: a different scheduler limit

Phase 2 (``analyze``): `inferctl calibrate` on A, then simulate B and C with A's fitted parameters and
compare every cell with the measurement (error of req/s, output tok/s, p50 TTFT, p50 TPOT).

    .venv/bin/python -m benchmarks.calibration_transfer measure --workdir /tmp/calib
    .venv/bin/python -m benchmarks.calibration_transfer analyze --workdir /tmp/calib

Results: benchmarks/results/calibration_transfer.json and docs/performance.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from tests.integration.plan_engines import EngineCase, start_case

GRID = ["--concurrency", "1,4,16", "--context", "128,1024", "--output-tokens", "32"]
BIG = {"hidden_size": 256, "intermediate_size": 1024, "num_attention_heads": 4, "num_key_value_heads": 2,
       "head_dim": 64, "global_head_dim": 128, "num_global_key_value_heads": 1, "sliding_window": 128,
       "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 2}
CASES = {
    "A": EngineCase("calib-a", max_model_len=4096, kv_space_gib=1),
    "B": EngineCase("calib-b", overrides=BIG, max_model_len=4096, kv_space_gib=1),
    "C": EngineCase("calib-c", max_model_len=4096, kv_space_gib=1, max_num_seqs=4),
}


def measure(workdir: Path, port: int, only: list[str]) -> None:
    from inferctl.local import engine

    runs = workdir / "runs"
    for i, (key, case) in enumerate(CASES.items()):
        if only and key not in only:
            continue
        state = start_case(case, workdir, port + i)
        try:
            out = subprocess.run(
                [str(Path(sys.executable).with_name("inferctl")), "bench", "sweep", "--url", state.url, *GRID,
                 "--runs-dir", str(runs), "--quiet"],
                capture_output=True, text=True, check=False, env={**os.environ},
            )  # fmt: skip
            path = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            (workdir / f"run-{key}.txt").write_text(path + "\n")
            print(key, path, out.stderr[-500:], flush=True)
        finally:
            engine.terminate(state)


def _cells(path: str) -> dict:
    from inferctl.bench.store import RunDir

    return {c.id: c for c in RunDir.open(path).cells() if c.status == "complete"}


def _err(pred: float | None, meas: float | None) -> float | None:
    if pred is None or meas in (None, 0):
        return None
    return 100 * (pred - meas) / meas


def analyze(workdir: Path, out: Path) -> None:
    from tests.integration.plan_engines import serving_config_for

    from inferctl.bench.spec import SweepSpec
    from inferctl.bench.store import RunDir
    from inferctl.ops.calibrate import calibrate_run
    from inferctl.plan.cells import SimEngine, simulate_cell

    run = {k: (workdir / f"run-{k}.txt").read_text().strip() for k in CASES}
    model_a = workdir / f"model-{CASES['A'].name}"
    cal = calibrate_run(run["A"], model=str(model_a), accelerator="cpu", max_model_len=4096, kv_cache_gib=1.0,
                        out=workdir / "calibration.json")  # fmt: skip
    result = {"calibrated_on": "A", "params": cal.params.model_dump(), "fit_errors": {
        k: v.model_dump() for k, v in cal.errors.items()}, "transfer": {}}
    for key in ("B", "C"):
        case = CASES[key]
        cfg = serving_config_for(case, workdir / f"model-{case.name}")
        engine = SimEngine(cfg, cal.params)
        meas = _cells(run[key])
        spec = SweepSpec.model_validate(RunDir.open(run[key]).read_meta().grid)
        rows = []
        for cell in spec.cells():
            if cell.id not in meas:
                continue
            pred, _, _ = simulate_cell(engine, spec, cell)
            m, p = meas[cell.id].metrics, pred.metrics
            rows.append({"cell": cell.id,
                         "request_throughput": _err(p.request_throughput, m.request_throughput),
                         "output_throughput": _err(p.output_throughput, m.output_throughput),
                         "ttft_p50": _err(p.ttft.p50, m.ttft.p50), "tpot_p50": _err(p.tpot.p50, m.tpot.p50),
                         "measured": {"rps": m.request_throughput, "ttft_p50": m.ttft.p50, "tpot_p50": m.tpot.p50},
                         "predicted": {"rps": p.request_throughput, "ttft_p50": p.ttft.p50, "tpot_p50": p.tpot.p50}})
        summary = {}
        for metric in ("request_throughput", "output_throughput", "ttft_p50", "tpot_p50"):
            vals = [abs(r[metric]) for r in rows if r[metric] is not None]
            summary[metric] = {"median_abs_pct": round(statistics.median(vals), 1) if vals else None,
                               "mape_pct": round(statistics.fmean(vals), 1) if vals else None}
        result["transfer"][key] = {"cells": rows, "summary": summary}
        print(key, json.dumps(summary), flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["measure", "analyze"])
    ap.add_argument("--workdir", default="/tmp/inferctl-calibration")
    ap.add_argument("--port", type=int, default=8670)
    ap.add_argument("--only", nargs="*", default=[])
    ap.add_argument("--out", default="benchmarks/results/calibration_transfer.json")
    args = ap.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.phase == "measure":
        measure(workdir, args.port, args.only)
    else:
        analyze(workdir, Path(args.out))


if __name__ == "__main__":
    main()
