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
        [--write-catalog]     # also ship the fits that beat the prior as [X.calibration] in accelerators.toml
        [--from-results]      # reuse the last results (docs / catalog only, no fitting)
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

from inferctl.plan.corpus_fit import AIM, corpus_groups, fit_entries, held_out, ship_decision

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
        fitted = fit_entries(acc.groups) if acc.groups else None
        if fitted is not None:
            row["fitted"] = fitted.model_dump()
            row["fitted_on"] = [g.entry.id for g in acc.groups]
        row["ships"], row["why"] = False, "fewer than two usable entries: nothing to hold out"
        if len(acc.groups) >= 2:
            h = held_out(acc)
            row["ships"], row["why"] = ship_decision(h, fitted)
            row |= {"mode": h.mode, "held_out": {k: v.model_dump() for k, v in h.calibrated.items()},
                    "prior": {k: v.model_dump() for k, v in h.prior.items()},
                    "cells": [c.model_dump() for c in h.cells]}  # fmt: skip
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
        ships = ("yes: " if row["ships"] else "no: ") + row["why"]
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


CATALOG = ROOT / "src" / "inferctl" / "catalog" / "data" / "accelerators.toml"
METHOD = ("inferctl.plan.corpus_fit.fit_entries: Nelder-Mead on the mean absolute log error of req/s, output tok/s, "
          "p50 TTFT and p50 TPOT of every usable corpus entry of the accelerator (any model), each re-simulated with "
          "its own model, flags and load; fits bw_efficiency, compute_efficiency, step_overhead_ms, "
          "per_seq_overhead_ms and request_overhead_ms (efficiencies at most 1), pulled towards the prior; the rest is "
          "the prior's")


def _inline(d: dict) -> str:
    return "{ " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in d.items()) + " }"


def _band(metrics: dict, mode: str, row: dict, date: str, command: str) -> list[str]:
    """An ErrorBand (catalog/accelerators.py) as TOML lines: median and worst absolute % per metric."""
    med = {k: round(v["median_abs"], 1) for k, v in metrics.items() if k in SHOWN}
    worst = {k: round(v["max_abs"], 1) for k, v in metrics.items() if k in SHOWN and v.get("max_abs") is not None}
    return [f'method = "{mode}"', f"measurements = {len(row['fitted_on'])}", "sources = " + json.dumps(row["sources"]),
            f"median_abs_pct = {_inline(med)}", f"max_abs_pct = {_inline(worst)}", f'date = "{date}"',
            f"command = {json.dumps(command)}"]  # fmt: skip


def catalog_blocks(name: str, row: dict, date: str, command: str) -> str:
    """TOML tables for one accelerator: the prior's measured error always; the fit when it ships.

    The schema is the accelerator catalog's (``AcceleratorCalibration``, ``ErrorBand``), which is what
    ``plan``/``simulate`` read as provenance: the parameters and entries, the held-out error of the fit, and the
    uncalibrated prior's error on the same entries (not fitted, so not held out: its plain error).
    """
    head = "   # written by benchmarks/corpus_calibration.py --write-catalog"
    lines = [f"[{name}.prior_error]{head}", *_band(row["prior"], "prior (not fitted) on the corpus entries", row,
                                                   date, command)]
    if row.get("ships"):
        p = row["fitted"]
        params = {k: round(p[k], 4) for k in ("bw_efficiency", "compute_efficiency", "step_overhead_ms",
                                             "per_seq_overhead_ms", "request_overhead_ms")}  # fmt: skip
        lines += ["", f"[{name}.calibration]{head}", f"params = {_inline(params)}",
                  "entries = " + json.dumps(row["fitted_on"]), f"source = {json.dumps(METHOD)}", f'date = "{date}"',
                  "", f"[{name}.calibration.error]", *_band(row["held_out"], row["mode"], row, date, command)]
    return "\n".join(lines) + "\n"


def write_catalog(result: dict) -> list[str]:
    """Replace every written ``[X.prior_error]`` / ``[X.calibration]`` table with what ``result`` measured."""
    import re

    # Drop old tables: from their header to the next table header (or the end).
    kept, dropping = [], False
    for line in CATALOG.read_text(encoding="utf-8").splitlines():
        if re.match(r"^\[[\w.-]+\]", line):
            dropping = bool(re.match(r"^\[[\w-]+\.(calibration|prior_error)(\.error)?\]", line))
        if not dropping:
            kept.append(line)
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(kept).rstrip("\n") + "\n")
    shipped = []
    for name, row in result["accelerators"].items():
        m = re.search(rf"^\[{re.escape(name)}\]\n.*?(?=\n\[|\Z)", text, flags=re.S | re.M)
        if m is None:
            raise SystemExit(f"{CATALOG} has no [{name}] table.")
        if "prior" not in row:  # no usable entry (e.g. h200: no prompt length stated): nothing was measured
            continue
        command = result.get("command", "python benchmarks/corpus_calibration.py")
        block = catalog_blocks(name, row, result["date"], command)
        text = text[: m.end()].rstrip("\n") + "\n\n" + block.rstrip("\n") + "\n" + text[m.end():]
        if row.get("ships"):
            shipped.append(name)
    CATALOG.write_text(text, encoding="utf-8")
    return shipped


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accelerator", help="one accelerator (default: every one in the corpus)")
    ap.add_argument("--no-docs", action="store_true", help="do not rewrite the table in docs/planner.md")
    ap.add_argument("--write-catalog", action="store_true",
                    help="ship the fits that beat the prior held out as [X.calibration] in the accelerator catalog")
    ap.add_argument("--from-results", action="store_true",
                    help="do not fit: reuse benchmarks/results/corpus_calibration.json (docs and catalog only)")
    args = ap.parse_args()
    result = json.loads(RESULTS.read_text(encoding="utf-8")) if args.from_results else run(args.accelerator)
    if args.accelerator is None:
        if not args.from_results:
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        if not args.no_docs:
            write_doc(table(result))
        if args.write_catalog:
            print("catalog calibrations:", ", ".join(write_catalog(result)) or "none", file=sys.stderr)
    print(table(result))


if __name__ == "__main__":
    main()
