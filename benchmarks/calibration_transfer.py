"""Does a calibration transfer to configurations it was not fitted on?

Phase 1 (``measure``): start the real local vLLM (CPU) once per case, sequentially, and run an
`inferctl bench sweep` grid against each (concurrency 1,4,16 x context 128,1024, 32 output tokens,
unless GRIDS says otherwise: A also at 2048, so the fit sees a prompt as long as D's longest - with A's
head dims, not D's size, layer pattern or max_num_seqs):

    A  the stock tiny Gemma 4 (hidden 64, 4 layers), contexts 128,1024,2048 fit
    B  hidden 256, 8 layers, wider heads                                     fit (with A)
    C  A with --max-num-seqs 4                                               held out
    D  hidden 128, 6 layers (another layer pattern), --max-num-seqs 8,
       contexts 256,2048                                                     held out
    E  hidden 384, 10 layers, 6 heads, window 256 (beyond B)                 held out

Phase 2 (``analyze``): `inferctl calibrate` on A alone (one size: the old way) and on A and B jointly
(two sizes: also fits how compute efficiency grows with matrix size and attention's own, head-dim-driven
rate), then simulate every case the fit did not see with the fitted parameters and compare each cell with
the measurement (signed error of req/s, output tok/s, p50 TTFT, p50 TPOT; median, worst and mean absolute
per case). The fit's own per-cell (in-sample) errors are kept too.

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
import threading
from pathlib import Path

from tests.integration.plan_engines import EngineCase, free_port, start_case

GRID = ["--concurrency", "1,4,16", "--context", "128,1024", "--output-tokens", "32"]
BIG = {"hidden_size": 256, "intermediate_size": 1024, "num_attention_heads": 4, "num_key_value_heads": 2,
       "head_dim": 64, "global_head_dim": 128, "num_global_key_value_heads": 1, "sliding_window": 128,
       "layer_types": (["sliding_attention"] * 3 + ["full_attention"]) * 2}
# Held out from every fit: a size between A and B with another layer pattern, another max_num_seqs and
# other contexts (D); a size beyond B (E).
MID = {"hidden_size": 128, "intermediate_size": 512, "num_attention_heads": 4, "num_key_value_heads": 2,
       "head_dim": 32, "global_head_dim": 64, "num_global_key_value_heads": 1, "sliding_window": 128,
       "layer_types": ["sliding_attention", "sliding_attention", "full_attention"] * 2}
LARGE = {"hidden_size": 384, "intermediate_size": 1536, "num_attention_heads": 6, "num_key_value_heads": 2,
         "head_dim": 64, "global_head_dim": 128, "num_global_key_value_heads": 1, "sliding_window": 256,
         "layer_types": (["sliding_attention"] * 4 + ["full_attention"]) * 2}
CASES = {
    "A": EngineCase("calib-a", max_model_len=4096, kv_space_gib=1),
    "B": EngineCase("calib-b", overrides=BIG, max_model_len=4096, kv_space_gib=1),
    "C": EngineCase("calib-c", max_model_len=4096, kv_space_gib=1, max_num_seqs=4),
    "D": EngineCase("calib-d", overrides=MID, max_model_len=4096, kv_space_gib=1, max_num_seqs=8),
    "E": EngineCase("calib-e", overrides=LARGE, max_model_len=4096, kv_space_gib=1),
}
GRIDS = {"A": ["--concurrency", "1,4,16", "--context", "128,1024,2048", "--output-tokens", "32"],
         "D": ["--concurrency", "1,4,16", "--context", "256,2048", "--output-tokens", "32"]}


def measure(workdir: Path, port: int, only: list[str]) -> None:
    from inferctl.local import engine

    runs = workdir / "runs"
    for key, case in CASES.items():
        if only and key not in only:
            continue
        state = start_case(case, workdir, port or free_port())
        load0 = os.getloadavg()
        samples: list[float] = []  # 1-minute load average every 15 s while the sweep runs
        stop = threading.Event()
        sampler = threading.Thread(target=_sample_load, args=(samples, stop), daemon=True)
        sampler.start()
        try:
            out = subprocess.run(
                [str(Path(sys.executable).with_name("inferctl")), "bench", "sweep", "--url", state.url,
                 *GRIDS.get(key, GRID), "--runs-dir", str(runs), "--quiet"],
                capture_output=True, text=True, check=False, env={**os.environ},
            )  # fmt: skip
            path = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
            (workdir / f"run-{key}.txt").write_text(path + "\n")
            stop.set()
            sampler.join()
            spread = (f"; 1-min load while sweeping: min {min(samples):.2f}, median {statistics.median(samples):.2f}, "
                      f"max {max(samples):.2f} ({len(samples)} samples)") if samples else ""  # fmt: skip
            (workdir / f"load-{key}.txt").write_text(f"{load0} -> {os.getloadavg()}{spread}\n")  # host load
            print(key, path, out.stderr[-500:], flush=True)
        finally:
            stop.set()
            engine.terminate(state)


def _sample_load(samples: list[float], stop: threading.Event, every: float = 15.0) -> None:
    while not stop.wait(every):
        samples.append(os.getloadavg()[0])


def _cells(path: str) -> dict:
    from inferctl.bench.store import RunDir

    return {c.id: c for c in RunDir.open(path).cells() if c.status == "complete"}


def _err(pred: float | None, meas: float | None) -> float | None:
    if pred is None or meas in (None, 0):
        return None
    return 100 * (pred - meas) / meas


def _predict(case: EngineCase, model_dir: Path, params, run_path: str) -> dict:
    from tests.integration.plan_engines import serving_config_for

    from inferctl.bench.spec import SweepSpec
    from inferctl.bench.store import RunDir
    from inferctl.plan.cells import SimEngine, simulate_cell

    engine = SimEngine(serving_config_for(case, model_dir), params)
    meas = _cells(run_path)
    spec = SweepSpec.model_validate(RunDir.open(run_path).read_meta().grid)
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
    for metric in METRICS:
        vals = [abs(r[metric]) for r in rows if r[metric] is not None]
        summary[metric] = {"median_abs_pct": round(statistics.median(vals), 1) if vals else None,
                           "max_abs_pct": round(max(vals), 1) if vals else None,
                           "mape_pct": round(statistics.fmean(vals), 1) if vals else None}
    return {"cells": rows, "summary": summary}


METRICS = ("request_throughput", "output_throughput", "ttft_p50", "tpot_p50")
# Which runs each calibration is fitted on; every other measured case is predicted (held out).
FITS = {"A": ["A"], "A+B": ["A", "B"]}


def analyze(workdir: Path, out: Path, fits: list[str]) -> None:
    from inferctl.ops.calibrate import calibrate_runs

    run = {k: (workdir / f"run-{k}.txt").read_text().strip() for k in CASES if (workdir / f"run-{k}.txt").exists()}
    load = {k: (workdir / f"load-{k}.txt").read_text().strip() for k in CASES if (workdir / f"load-{k}.txt").exists()}
    result = {"cases": {k: {"name": c.name, "overrides": c.overrides, "max_num_seqs": c.max_num_seqs,
                            "grid": GRIDS.get(k, GRID), "run": run.get(k), "host_load": load.get(k)}
                        for k, c in CASES.items()}, "fits": {}}  # fmt: skip
    for name in fits:
        keys = FITS[name]
        cal = calibrate_runs([run[k] for k in keys], accelerator="cpu", max_model_len=4096, kv_cache_gib=1.0,
                             out=workdir / f"calibration-{name.replace('+', '')}.json")  # fmt: skip
        entry = {"fit_on": keys, "params": cal.params.model_dump(),
                 "fit_errors": {k: v.model_dump() for k, v in cal.errors.items()},
                 "fit_cells": [{"cell": c.cell, **{m: c.errors.get(m) for m in METRICS}} for c in cal.cells],
                 "predicted": {}}
        for key, case in CASES.items():
            if key in keys or key not in run:
                continue
            entry["predicted"][key] = _predict(case, workdir / f"model-{case.name}", cal.params, run[key])
            print(name, "->", key, json.dumps(entry["predicted"][key]["summary"]), flush=True)
        result["fits"][name] = entry
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["measure", "analyze"])
    ap.add_argument("--workdir", default="/tmp/inferctl-calibration")
    ap.add_argument("--port", type=int, default=0, help="0: a free port per engine")
    ap.add_argument("--only", nargs="*", default=[], help="measure: only these cases")
    ap.add_argument("--fits", nargs="*", default=list(FITS), help="analyze: which calibrations (A, A+B)")
    ap.add_argument("--out", default="benchmarks/results/calibration_transfer.json")
    args = ap.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    if args.phase == "measure":
        measure(workdir, args.port, args.only)
    else:
        analyze(workdir, Path(args.out), args.fits)


if __name__ == "__main__":
    main()
