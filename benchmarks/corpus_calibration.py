"""How well does a calibration on public measurements predict measurements it did not see?

For every accelerator in the measurement corpus (src/inferctl/catalog/data/measurements/):

* **held-out error**: fit the accelerator's roofline efficiencies and overheads without some entries,
  predict those, repeat. Leave-one-*source*-out where the accelerator has two or more sources (the
  honest test: another lab, another setup); else leave-one-*entry*-out, labelled as such - weaker,
  since the held-out entry shares its source's model, setup and habits with the entries the fit saw.
* **prior error**: the uncalibrated catalog prior on the same entries.
* **full fit**: the parameters fitted on every usable entry (what the catalog ships where the held-out
  error beats the prior), with the entry ids it came from.

Per metric (req/s, TPOT p50, TTFT p50) the median absolute percent error, against the issue's aim
(<= 25% req/s and TPOT, <= 40% TTFT). Writes benchmarks/results/corpus_calibration.json and the table
in docs/planner.md between the ``corpus-calibration`` markers.

    PYTHONPATH=src .venv/bin/python -m benchmarks.corpus_calibration [--accelerator NAME] [--no-docs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

from inferctl.plan.corpus_fit import AIM, beats_prior, corpus_groups, fit_entries, held_out

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "corpus_calibration.json"
DOC = ROOT / "docs" / "planner.md"
BEGIN, END = "<!-- corpus-calibration:begin -->", "<!-- corpus-calibration:end -->"
SHOWN = {"request_throughput": "req/s", "tpot_p50": "TPOT p50", "ttft_p50": "TTFT p50"}


def run(accelerator: str | None) -> dict:
    out: dict = {"date": dt.date.today().isoformat(),
                 "command": "python -m benchmarks.corpus_calibration", "accelerators": {}}  # fmt: skip
    for name, acc in corpus_groups(accelerator).items():
        t0 = time.perf_counter()
        row: dict = {"entries": len(acc.groups), "sources": acc.sources,
                     "skipped": [{"entry": s.entry_id, "reason": s.reason} for s in acc.skipped]}  # fmt: skip
        if len(acc.groups) >= 2:
            h = held_out(acc)
            row |= {"mode": h.mode, "held_out": {k: v.model_dump() for k, v in h.calibrated.items()},
                    "prior": {k: v.model_dump() for k, v in h.prior.items()}, "beats_prior": beats_prior(h),
                    "cells": [c.model_dump() for c in h.cells]}  # fmt: skip
        if acc.groups:
            row["fitted"] = fit_entries(acc.groups).model_dump()
            row["fitted_on"] = [g.entry.id for g in acc.groups]
        row["seconds"] = round(time.perf_counter() - t0, 1)
        out["accelerators"][name] = row
        print(f"{name}: {row.get('mode', 'no held-out test')} in {row['seconds']}s", file=sys.stderr, flush=True)
    return out


def _cell(row: dict, key: str) -> str:
    held, prior = row.get("held_out", {}).get(key), row.get("prior", {}).get(key)
    if not held:
        return "-"
    miss = held["median_abs"] - AIM[key]
    verdict = "meets the aim" if miss <= 0 else f"misses by {miss:.0f} pts"
    return f"{held['median_abs']:.0f}% (prior {prior['median_abs']:.0f}%; {verdict})" if prior else "-"


def table(result: dict) -> str:
    lines = [f"Produced by `{result['command']}` on {result['date']}. Median absolute error per entry, "
             "held out (fitted without it); in brackets the uncalibrated prior on the same entries and the aim "
             "(<= 25% req/s and TPOT, <= 40% TTFT).", "",
             "| accelerator | entries (sources) | test | req/s | TPOT p50 | TTFT p50 | ships fitted values |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for name, row in result["accelerators"].items():
        mode = row.get("mode", "none (one entry)")
        mode = {"leave-one-entry-out": "leave-one-entry-out (weaker: one source)"}.get(mode, mode)
        ships = "yes" if row.get("beats_prior") else "no"
        lines.append(f"| {name} | {row['entries']} ({len(row['sources'])}) | {mode} | "
                     + " | ".join(_cell(row, k) for k in SHOWN) + f" | {ships} |")  # fmt: skip
    return "\n".join(lines)


def write_doc(text: str) -> None:
    doc = DOC.read_text(encoding="utf-8")
    if BEGIN not in doc:
        raise SystemExit(f"{DOC} has no {BEGIN} marker.")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accelerator", help="one accelerator (default: every one in the corpus)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite the table in docs/planner.md")
    args = ap.parse_args()
    result = run(args.accelerator)
    if args.accelerator is None:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        if not args.no_docs:
            write_doc(table(result))
    print(table(result))


if __name__ == "__main__":
    main()
