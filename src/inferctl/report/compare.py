"""Compare runs cell by cell: values, % deltas against the first run, who wins where, and where it flips.

Cells match on (context, load kind, load): the same prompt length at the same concurrency (or rate).
A run *wins* a cell on a metric when it is best and ahead of the runner-up by more than
``tie_threshold`` (5% by default: below that, one noisy cell would decide). Besides per-cell winners,
each challenger gets statements by region — low vs high load, short vs long context, and per context
the load ranges it wins or loses — so a conclusion like "helps at low concurrency and long context,
hurts at high concurrency" is visible in the numbers rather than asserted.
"""

from __future__ import annotations

import statistics
from typing import Any

from pydantic import BaseModel, Field

from inferctl.report.data import METRICS, Run, cell_key, hardware_label, metric
from inferctl.report.findings import num

DEFAULT_METRICS = ["request_throughput", "output_throughput", "goodput", "ttft_p50", "ttft_p95", "tpot_p50",
                   "e2e_p50", "e2e_p95", "success_rate"]
HEADLINE = ["output_throughput", "ttft_p95", "tpot_p50", "e2e_p50"]
TIE_THRESHOLD = 0.05


class RunRef(BaseModel):
    label: str
    run_id: str
    source: str
    model: str | None = None
    hardware: str
    vllm_version: str | None = None
    path: str | None = None


class CellComparison(BaseModel):
    """One matched cell across runs (lists are in run order)."""

    context: int
    load_kind: str = Field(description="concurrency | rate")
    load: float
    cells: list[str | None] = Field(description="Each run's cell id (None: not in that run).")
    values: dict[str, list[float | None]] = Field(description="metric -> each run's value.")
    deltas: dict[str, list[float | None]] = Field(description="metric -> fractional change vs the first run.")
    winners: dict[str, str | None] = Field(description="metric -> label of the clear winner (None: tie/missing).")


class Verdict(BaseModel):
    """How one challenger did against the baseline on one metric."""

    label: str
    metric: str
    higher_is_better: bool
    wins: int = 0
    losses: int = 0
    ties: int = 0
    median_delta: float | None = Field(default=None, description="Median fractional change over matched cells.")
    statements: list[str] = Field(default_factory=list, description="Where it wins and loses, with numbers.")


class Comparison(BaseModel):
    """``inferctl compare --json``."""

    runs: list[RunRef]
    baseline: str = Field(description="Label of the run deltas are relative to.")
    metrics: list[str]
    tie_threshold: float
    config_differences: dict[str, list[str | None]] = Field(
        default_factory=dict, description="Metadata fields that differ between runs, each run's value.")
    cells: list[CellComparison] = Field(default_factory=list)
    unmatched: dict[str, list[str]] = Field(default_factory=dict, description="label -> cells no other run has.")
    verdicts: list[Verdict] = Field(default_factory=list)
    client_bound: dict[str, int] = Field(default_factory=dict, description="label -> client-bound matched cells.")
    summary: list[str] = Field(default_factory=list, description="Headline statements.")


def _flat(d: Any, prefix: str = "") -> dict[str, str]:
    out: dict[str, str] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flat(v, f"{prefix}{k}."))
    elif isinstance(d, list) and d and all(isinstance(x, dict) for x in d):
        for i, v in enumerate(d):
            out.update(_flat(v, f"{prefix}{i}."))
    else:
        out[prefix[:-1]] = str(d)
    return out


_CONFIG_FIELDS = ("model", "model_root", "max_model_len", "vllm_version", "source", "target.url",
                  "engine.hardware", "engine.speculative_config", "grid.output_tokens", "grid.api",
                  "grid.ignore_eos", "grid.shared_prefix")
_VOLATILE = ("created", "id", "permission", "engine.models")


def config_differences(runs: list[Run]) -> dict[str, list[str | None]]:
    """The metadata that differs between runs: model, engine cache config, versions, workload shape."""
    flats = []
    for r in runs:
        m = r.meta.model_dump(mode="json")
        f = {k: v for k, v in _flat(m).items()
             if k in _CONFIG_FIELDS or k.startswith(("engine.cache_config.", "engine.speculative"))}
        f["hardware"] = hardware_label(r.meta)
        # Runs do not record every engine flag; spec decode shows in the server's counters, so say it from those.
        acc = [c.server["spec_decode_acceptance_rate"] for c in r.cells
               if c.server.get("spec_decode_acceptance_rate") is not None]
        f["spec decode (observed)"] = f"on, mean acceptance {sum(acc) / len(acc) * 100:.0f}%" if acc else "off"
        flats.append(f)
    keys = sorted({k for f in flats for k in f} - set(_VOLATILE))
    out: dict[str, list[str | None]] = {}
    for k in keys:
        vals = [f.get(k) for f in flats]
        if len(set(vals)) > 1:
            out[k] = vals
    return out


def _delta(v: float | None, base: float | None) -> float | None:
    if v is None or base is None or base == 0:
        return None
    return round((v - base) / base, 4)


def _winner(vals: list[float | None], labels: list[str], higher: bool, tie: float) -> str | None:
    present = [(v, lab) for v, lab in zip(vals, labels, strict=True) if v is not None]
    if len(present) < 2:
        return None
    ranked = sorted(present, key=lambda x: x[0], reverse=higher)
    best, second = ranked[0][0], ranked[1][0]
    if second == 0:
        return ranked[0][1] if best != 0 else None
    margin = (best - second) / abs(second) if higher else (second - best) / abs(second)
    return ranked[0][1] if margin > tie else None


def _signed(d: float) -> str:
    return f"{'+' if d >= 0 else '−'}{abs(d) * 100:.0f}%"


def _load_text(kind: str, load: float) -> str:
    return f"r={load:g}/s" if kind == "rate" else f"c={load:g}"


def _span(kind: str, loads: list[float]) -> str:
    return _load_text(kind, loads[0]) if len(loads) == 1 else f"{_load_text(kind, loads[0])}–{loads[-1]:g}"


def _runs_of(items: list[tuple[float, str, float]], kind: str) -> list[str]:
    """Consecutive loads with the same outcome, e.g. 'wins at c=1–2 (+20%, +15%)'."""
    out, group = [], []
    for item in items + [(float("nan"), "", 0.0)]:
        if group and item[1] != group[-1][1]:
            loads = [g[0] for g in group]
            span = _load_text(kind, loads[0]) if len(loads) == 1 else f"{_load_text(kind, loads[0])}–{loads[-1]:g}"
            out.append(f"{group[0][1]} at {span} ({', '.join(_signed(g[2]) for g in group)})")
            group = []
        if item[1]:
            group.append(item)
    return out


def _verdict(label: str, key: str, cmp: list[CellComparison], idx: int, tie: float) -> Verdict:
    m = metric(key)
    v = Verdict(label=label, metric=key, higher_is_better=m.higher_is_better)
    pts = [(c, c.deltas[key][idx]) for c in cmp if c.deltas[key][idx] is not None]
    if not pts:
        return v
    good = (lambda d: d > tie) if m.higher_is_better else (lambda d: d < -tie)
    bad = (lambda d: d < -tie) if m.higher_is_better else (lambda d: d > tie)
    v.wins = sum(1 for _, d in pts if good(d))
    v.losses = sum(1 for _, d in pts if bad(d))
    v.ties = len(pts) - v.wins - v.losses
    v.median_delta = round(statistics.median(d for _, d in pts), 4)
    v.statements.append(f"{m.label}: {label} wins {v.wins}, loses {v.losses}, ties {v.ties} of {len(pts)} cells; "
                        f"median change {_signed(v.median_delta)}.")
    # By region: the lower and upper half of the loads, the shortest and longest context.
    loads = sorted({c.load for c, _ in pts})
    ctxs = sorted({c.context for c, _ in pts})
    kind = pts[0][0].load_kind
    if len(loads) >= 2:
        mid = loads[(len(loads) - 1) // 2]
        low = [d for c, d in pts if c.load <= mid]
        high = [d for c, d in pts if c.load > mid]
        v.statements.append(f"{m.label} by load: {_signed(statistics.median(low))} at low load "
                            f"({_span(kind, [x for x in loads if x <= mid])}), {_signed(statistics.median(high))} "
                            f"at high load ({_span(kind, [x for x in loads if x > mid])}).")
    if len(ctxs) >= 2:
        short = [d for c, d in pts if c.context == ctxs[0]]
        long_ = [d for c, d in pts if c.context == ctxs[-1]]
        v.statements.append(f"{m.label} by context: {_signed(statistics.median(short))} at ctx {ctxs[0]}, "
                            f"{_signed(statistics.median(long_))} at ctx {ctxs[-1]}.")
    for ctx in ctxs:
        row = sorted(((c.load, "wins" if good(d) else "loses" if bad(d) else "ties", d)
                      for c, d in pts if c.context == ctx))
        v.statements.append(f"ctx {ctx}: {label} " + "; ".join(_runs_of(row, kind)) + ".")
    return v


def compare(runs: list[Run], labels: list[str] | None = None, metrics: list[str] | None = None,
            tie_threshold: float = TIE_THRESHOLD) -> Comparison:
    """Compare two or more runs on matching cells (pure); the first run is the baseline."""
    labels = list(labels or [])
    for r in runs[len(labels):]:
        labels.append(r.run_id)
    if len(set(labels)) != len(labels):  # two runs with one label would be indistinguishable
        labels = [f"{lab} ({i + 1})" for i, lab in enumerate(labels)]
    keys = [metric(k).key for k in (metrics or DEFAULT_METRICS)]
    out = Comparison(
        runs=[RunRef(label=lab, run_id=r.run_id, source=r.meta.source, model=r.meta.model,
                     hardware=hardware_label(r.meta), vllm_version=r.meta.vllm_version,
                     path=str(r.path) if r.path else None) for lab, r in zip(labels, runs, strict=True)],
        baseline=labels[0], metrics=keys, tie_threshold=tie_threshold, config_differences=config_differences(runs))
    by_key = [{cell_key(c): c for c in r.cells} for r in runs]
    common = set(by_key[0])
    for b in by_key[1:]:
        common &= set(b)
    for lab, b in zip(labels, by_key, strict=True):
        extra = sorted(b[k].id for k in set(b) - common)
        if extra:
            out.unmatched[lab] = extra
    for key in sorted(common):
        cells = [b[key] for b in by_key]
        values = {k: [METRICS[k].get(c) for c in cells] for k in keys}
        out.cells.append(CellComparison(
            context=key[0], load_kind=key[1], load=key[2], cells=[c.id for c in cells], values=values,
            deltas={k: [None] + [_delta(v, vals[0]) for v in vals[1:]] for k, vals in values.items()},
            winners={k: _winner(vals, labels, METRICS[k].higher_is_better, tie_threshold)
                     for k, vals in values.items()}))
    for i, lab in enumerate(labels):
        n = sum(1 for key in common if by_key[i][key].client.client_bound)
        if n:
            out.client_bound[lab] = n
    for idx, lab in enumerate(labels[1:], start=1):
        for k in keys:
            v = _verdict(lab, k, out.cells, idx, tie_threshold)
            if v.median_delta is not None:
                out.verdicts.append(v)
    out.summary = _summary(out)
    return out


def _summary(cmp: Comparison) -> list[str]:
    lines = []
    if not cmp.cells:
        lines.append("No cells match between these runs (different contexts or loads); nothing to compare.")
        return lines
    if cmp.client_bound:
        lines.append("Caution: the load generator limited some cells (" + "; ".join(
            f"{k}: {n}" for k, n in cmp.client_bound.items()) + "), so small differences there may be the client's.")
    for v in cmp.verdicts:
        if v.metric in HEADLINE:
            lines.append(v.statements[0])
    for k in ("output_throughput", "ttft_p95"):
        if k not in cmp.metrics:
            continue
        wins: dict[str, int] = {}
        for c in cmp.cells:
            w = c.winners.get(k)
            if w:
                wins[w] = wins.get(w, 0) + 1
        if wins:
            best = max(wins, key=wins.__getitem__)
            lines.append(f"{METRICS[k].label}: {best} is the clear winner in {wins[best]} of {len(cmp.cells)} "
                         f"matched cells (margin > {cmp.tie_threshold * 100:.0f}%).")
    if "output_throughput" in cmp.metrics:
        top = max(cmp.cells, key=lambda c: max((x or 0) for x in c.values["output_throughput"]))
        vals = ", ".join(f"{r.label} {num(v)}" for r, v in zip(cmp.runs, top.values["output_throughput"], strict=True))
        lines.append(f"Highest output tok/s among matched cells: ctx {top.context} "
                     f"{_load_text(top.load_kind, top.load)} — {vals}.")
    return lines


def series(cmp: Comparison, key: str) -> dict[tuple[str, int], tuple[list[float], list[float | None]]]:
    """(label, context) -> (loads, values) of one metric, for overlaid charts."""
    out: dict[tuple[str, int], tuple[list[float], list[float | None]]] = {}
    for i, r in enumerate(cmp.runs):
        for c in sorted(cmp.cells, key=lambda c: (c.context, c.load)):
            xs, ys = out.setdefault((r.label, c.context), ([], []))
            xs.append(c.load)
            ys.append(c.values[key][i])
    return out
