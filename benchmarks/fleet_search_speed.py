"""How long does the default fleet search take (issue 12.3: under 30 s on one core)?

The whole default search for one model and workload: every catalog accelerator, format, TP, KV dtype and
MTP on/off, priced on every platform and tier. Reports wall and CPU time and the candidate counts.

    .venv/bin/python -m benchmarks.fleet_search_speed [--workload examples/chat-40rps.toml] [--repeat 3]

Results: benchmarks/results/fleet_search_speed.json and docs/performance.md ("Planner: fleet search speed").
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workload", default="examples/chat-40rps.toml")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from inferctl.plan.fleet import search
    from inferctl.plan.workload import load_workload

    w = load_workload(args.workload)
    walls, cpus, counts = [], [], {}
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        r = search(w)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        counts = r.counts
    out = {"workload": args.workload, "repeat": args.repeat, "wall_s_median": round(statistics.median(walls), 2),
           "cpu_s_median": round(statistics.median(cpus), 2), "counts": counts,
           "top": f"{r.rows[0].label} on {r.rows[0].price_key} ({r.rows[0].tier})" if r.rows else None}
    print(json.dumps(out, indent=2))
    dest = Path("benchmarks/results/fleet_search_speed.json")
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
