"""Findings: what a run says, computed from its cells (never written by a model), each citing its numbers.

Definitions (per context row, cells ordered by load — concurrency, or rate for open-loop runs):

- **saturation point**: the lowest load whose request throughput is within ``SATURATION_SHARE`` (90%) of
  the row's peak while a higher load was measured. Beyond it, more load buys little throughput and the
  finding says how much latency it costs. When the top of the grid is the first such cell, the row is
  *not saturated within the grid*. (A first-drop rule would be fooled by one noisy cell; a share of the
  peak is not.)
- **SLO capacity**: the highest load whose cell meets every SLO (the cell statistic, e.g. p95 TTFT, at
  or under its limit) with an error rate at or under ``max_error_rate``. SLOs come from ``--slo``, else
  the run's own ``grid.slos``, else ``DEFAULT_SLOS`` (said so in the result).
- **recommended operating range**: from the lowest load meeting the SLOs up to the highest that is also
  at or under the saturation point: past the knee latency rises without throughput.
- **failure boundary**: the first load where success drops below 100% or a cell was not run
  (infeasible, skipped, aborted), and why (timeouts, HTTP codes, connection errors, the cell's reason).
- **client-bound cells**: the load generator's own verdict (``client.client_bound`` and its reasons).
- **spec-decode acceptance**: the server's acceptance rate and mean acceptance length where reported.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from inferctl.bench.stats import Slo, parse_slo
from inferctl.bench.store import CellResult
from inferctl.report.data import Run, load_label, load_of, measured, rows, sent, success_rate

SATURATION_SHARE = 0.90
DEFAULT_SLOS = ("ttft_p95_ms=2000", "tpot_p95_ms=100")
DEFAULT_MAX_ERROR_RATE = 0.01
FEW_REQUESTS = 20

Kind = Literal["saturation", "slo_capacity", "operating_range", "failure", "client_bound", "spec_decode",
               "kv_pressure", "data_quality", "server_agreement"]


class Finding(BaseModel):
    """One computed statement about a run, with the numbers it rests on."""

    kind: Kind = Field(description="What sort of finding this is.")
    severity: Literal["info", "warning", "problem"] = Field(default="info")
    context: int | None = Field(default=None, description="The context row it is about (None: the whole run).")
    text: str = Field(description="One or two sentences that cite the numbers.")
    cells: list[str] = Field(default_factory=list, description="Cell ids the finding rests on.")
    numbers: dict[str, float | int | str | None] = Field(default_factory=dict, description="The cited numbers.")


class RowSummary(BaseModel):
    """Per context: peak, knee, SLO capacity and the recommended range (loads are concurrency or rate)."""

    context: int
    load_kind: Literal["concurrency", "rate"]
    peak_load: float | None = Field(default=None, description="Load of the highest request throughput.")
    peak_request_throughput: float | None = None
    peak_output_throughput: float | None = None
    saturation_load: float | None = Field(default=None, description="Knee; None: not saturated within the grid.")
    slo_max_load: float | None = Field(default=None, description="Highest load meeting every SLO.")
    slo_max_request_throughput: float | None = None
    recommended_min_load: float | None = None
    recommended_max_load: float | None = None
    failure_load: float | None = Field(default=None, description="First load where success < 100% or not run.")


class Findings(BaseModel):
    """Everything computed about one run."""

    run_id: str
    slos: list[str] = Field(description="The SLOs judged, e.g. ttft_p95_ms=2000.")
    slo_source: Literal["given", "run", "default"] = Field(description="Where the SLOs came from.")
    max_error_rate: float
    rows: list[RowSummary] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)


# -- formatting ----------------------------------------------------------------------------


def num(v: float | None, digits: int = 3) -> str:
    """A number for prose: 3 significant digits, thousands separators, '—' for missing."""
    if v is None:
        return "—"
    if v == 0:
        return "0"
    if float(v).is_integer() and abs(v) < 1000:  # counts (preemptions, loads) read better without decimals
        return str(int(v))
    a = abs(v)
    if a >= 1000:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    return f"{v:.{digits}g}"


def pct(v: float | None) -> str:
    return "—" if v is None else f"{v * 100:.0f}%"


def slo_text(s: Slo) -> str:
    return f"{s.metric}_{s.stat}_ms={s.limit_ms:g}"


# -- SLOs ------------------------------------------------------------------------------------


def resolve_slos(run: Run, given: list[str] | None) -> tuple[list[Slo], str]:
    """--slo flags, else the run's own, else the defaults; and which of the three it was."""
    if given:
        return [parse_slo(s) for s in given], "given"
    raw = run.meta.grid.get("slos") or []
    if raw:
        return [Slo.model_validate(s) for s in raw], "run"
    return [parse_slo(s) for s in DEFAULT_SLOS], "default"


def slo_misses(c: CellResult, slos: list[Slo], max_error_rate: float) -> list[str]:
    """Why a cell misses the SLOs (empty: it meets them)."""
    if not measured(c):
        return [f"status {c.status}" + (f" ({c.reason})" if c.reason else "")]
    out = []
    for s in slos:
        v = getattr(c.metrics, s.metric).get(s.stat)
        if v is None:
            if s.metric == "tpot":  # one output token: no decode phase to judge
                continue
            out.append(f"no {s.metric} {s.stat}")
        elif v > s.limit_ms:
            out.append(f"{s.metric} {s.stat} {num(v)} ms > {s.limit_ms:g}")
    if c.metrics.error_rate > max_error_rate:
        out.append(f"error rate {pct(c.metrics.error_rate)} > {pct(max_error_rate)}")
    return out


# -- per row ---------------------------------------------------------------------------------


def _latency(c: CellResult) -> tuple[str, float | None]:
    if c.metrics.e2e.p50 is not None:
        return "p50 E2E", c.metrics.e2e.p50
    return "p50 TTFT", c.metrics.ttft.p50


def _saturation(ctx: int, cells: list[CellResult], summary: RowSummary) -> Finding | None:
    ok = [c for c in cells if measured(c)]
    if len(ok) < 2:
        return None
    peak = max(ok, key=lambda c: c.metrics.request_throughput)
    summary.peak_load = load_of(peak)
    summary.peak_request_throughput = peak.metrics.request_throughput
    summary.peak_output_throughput = peak.metrics.output_throughput
    knee = next(c for c in ok if c.metrics.request_throughput >= SATURATION_SHARE * peak.metrics.request_throughput)
    if knee is ok[-1]:
        prev = ok[-2]
        gain = knee.metrics.request_throughput / prev.metrics.request_throughput - 1 \
            if prev.metrics.request_throughput else None
        return Finding(
            kind="saturation", context=ctx, cells=[prev.id, knee.id],
            text=(f"ctx {ctx}: not saturated within the grid — request throughput still rose from "
                  f"{num(prev.metrics.request_throughput)} req/s at {load_label(prev)} to "
                  f"{num(knee.metrics.request_throughput)} req/s at {load_label(knee)} "
                  f"({'+' if (gain or 0) >= 0 else ''}{pct(gain)}); try higher load."),
            numbers={"from_load": load_of(prev), "to_load": load_of(knee),
                     "from_req_s": prev.metrics.request_throughput, "to_req_s": knee.metrics.request_throughput})
    summary.saturation_load = load_of(knee)
    top = ok[-1]
    lat_name, lat_knee = _latency(knee)
    _, lat_top = _latency(top)
    growth = (lat_top / lat_knee - 1) if lat_knee and lat_top is not None else None
    share = knee.metrics.request_throughput / peak.metrics.request_throughput
    return Finding(
        kind="saturation", context=ctx, cells=[knee.id, peak.id, top.id],
        text=(f"ctx {ctx}: saturates at {load_label(knee)} — {num(knee.metrics.request_throughput)} req/s "
              f"({num(knee.metrics.output_throughput)} output tok/s) is {pct(share)} "
              f"of the row's peak {num(peak.metrics.request_throughput)} req/s at {load_label(peak)}; going to "
              f"{load_label(top)} moves {lat_name} from {num(lat_knee)} to {num(lat_top)} ms"
              + (f" ({'+' if growth >= 0 else ''}{pct(growth)})." if growth is not None else ".")),
        numbers={"saturation_load": load_of(knee), "req_s": knee.metrics.request_throughput,
                 "output_tok_s": knee.metrics.output_throughput, "peak_load": load_of(peak),
                 "peak_req_s": peak.metrics.request_throughput, "top_load": load_of(top),
                 "latency_at_knee_ms": lat_knee, "latency_at_top_ms": lat_top},
    )


def _slo(ctx: int, cells: list[CellResult], slos: list[Slo], max_err: float, summary: RowSummary) -> list[Finding]:
    meets = [c for c in cells if not slo_misses(c, slos, max_err)]
    rule = ", ".join(slo_text(s) for s in slos) + f", errors ≤ {pct(max_err)}"
    if not meets:
        first = cells[0]
        return [Finding(kind="slo_capacity", severity="problem", context=ctx, cells=[first.id],
                        text=(f"ctx {ctx}: no load meets the SLOs ({rule}); even {load_label(first)} misses: "
                              f"{'; '.join(slo_misses(first, slos, max_err))}."),
                        numbers={"slo_max_load": None})]
    best = meets[-1]
    summary.slo_max_load = load_of(best)
    summary.slo_max_request_throughput = best.metrics.request_throughput
    after = [c for c in cells if load_of(c) > load_of(best)]
    gaps = [c for c in cells if load_of(c) < load_of(best) and c not in meets]
    parts = [f"ctx {ctx}: the highest load meeting the SLOs ({rule}) is {load_label(best)} — "
             f"{num(best.metrics.request_throughput)} req/s, p95 TTFT {num(best.metrics.ttft.p95)} ms, "
             f"p95 TPOT {num(best.metrics.tpot.p95)} ms"]
    if after:
        parts.append(f"; {load_label(after[0])} misses: {'; '.join(slo_misses(after[0], slos, max_err))}")
    else:
        parts.append("; it is the top of the grid, so capacity may be higher")
    if gaps:
        parts.append(" (but lower loads missed: " + "; ".join(
            f"{load_label(c)} {', '.join(slo_misses(c, slos, max_err))}" for c in gaps) + ")")
    cited = [best.id] + ([after[0].id] if after else [])
    return [Finding(kind="slo_capacity", context=ctx, cells=cited, text="".join(parts) + ".",
                    numbers={"slo_max_load": load_of(best), "req_s": best.metrics.request_throughput,
                             "ttft_p95_ms": best.metrics.ttft.p95, "tpot_p95_ms": best.metrics.tpot.p95,
                             "next_load": load_of(after[0]) if after else None})]


def _range(ctx: int, cells: list[CellResult], slos: list[Slo], max_err: float, summary: RowSummary) -> Finding | None:
    meets = [c for c in cells if not slo_misses(c, slos, max_err)]
    if not meets:
        return None
    cap = summary.saturation_load
    within = [c for c in meets if cap is None or load_of(c) <= cap] or meets[:1]
    lo, hi = within[0], within[-1]
    summary.recommended_min_load, summary.recommended_max_load = load_of(lo), load_of(hi)
    why = ("the saturation point" if cap is not None and load_of(hi) == cap
           else "the highest load meeting the SLOs" if hi is meets[-1] else "below the knee")
    span = load_label(hi) if lo is hi else f"{load_label(lo)}–{load_label(hi).split('=')[1]}"
    holes = [c for c in cells if load_of(lo) < load_of(c) < load_of(hi) and c not in meets]
    hole_text = f"; {', '.join(load_label(c) for c in holes)} inside it missed the SLOs in this run" if holes else ""
    return Finding(
        kind="operating_range", context=ctx, cells=[lo.id, hi.id],
        text=(f"ctx {ctx}: recommended operating range {span} (up to {why}); at {load_label(hi)} each instance "
              f"serves {num(hi.metrics.request_throughput)} req/s, {num(hi.metrics.output_throughput)} output "
              f"tok/s, p50 E2E {num(hi.metrics.e2e.p50)} ms{hole_text}."),
        numbers={"min_load": load_of(lo), "max_load": load_of(hi), "req_s": hi.metrics.request_throughput,
                 "output_tok_s": hi.metrics.output_throughput, "e2e_p50_ms": hi.metrics.e2e.p50})


def failure_reason(c: CellResult) -> str:
    """Why a cell lost requests, from its counts, HTTP codes and first error messages."""
    m = c.metrics
    if c.status in ("infeasible", "skipped"):
        return c.reason or c.status
    parts = []
    if m.timeout:
        parts.append(f"{m.timeout} timeouts")
    for code, n in sorted(m.http_codes.items()):
        kind = "server errors" if code.startswith("5") else "rejections"
        parts.append(f"{n} HTTP {code} {kind}")
    if m.connection_error:
        parts.append(f"{m.connection_error} connection errors")
    if m.stream_broken:
        parts.append(f"{m.stream_broken} broken streams")
    if m.no_text:
        parts.append(f"{m.no_text} streams of tokens without text")
    if c.status == "aborted":
        parts.append(c.reason or "aborted: most requests failing")
    text = ", ".join(parts) or (c.reason or "unknown")
    if m.first_errors:
        text += f' (first: "{m.first_errors[0][:120]}")'
    return text


def _failure(ctx: int, cells: list[CellResult], summary: RowSummary) -> Finding | None:
    for c in cells:
        sr = success_rate(c)
        if c.status != "complete" or (sr is not None and sr < 1.0):
            summary.failure_load = load_of(c)
            later = [x for x in cells if load_of(x) > load_of(c)]
            sr_text = "nothing sent" if sr is None else f"success {pct(sr)} ({c.metrics.ok}/{sent(c)})"
            tail = ""
            if later:
                rates = [success_rate(x) for x in later]
                tail = "; beyond it: " + ", ".join(
                    f"{load_label(x)} {'not run' if r is None else pct(r)}" for x, r in zip(later, rates, strict=True))
            severity = "warning" if c.status == "infeasible" else "problem"
            return Finding(kind="failure", severity=severity, context=ctx, cells=[c.id, *(x.id for x in later)],
                           text=f"ctx {ctx}: failures start at {load_label(c)} — {sr_text}: {failure_reason(c)}{tail}.",
                           numbers={"failure_load": load_of(c), "success_rate": sr, "ok": c.metrics.ok,
                                    "errors": c.metrics.errors, "timeouts": c.metrics.timeout, "status": c.status})
    return None


# -- whole run -------------------------------------------------------------------------------


def _agreement(cells: list[CellResult]) -> Finding | None:
    off = [(c, a) for c in cells for a in c.agreement if not a.agrees]
    checked = [c for c in cells if c.agreement]
    if not checked:
        return None
    if not off:
        return Finding(kind="server_agreement", severity="info", cells=[c.id for c in checked],
                       text=f"In all {len(checked)} cells the client's TTFT/TPOT/E2E medians lie within vLLM's own "
                            "histogram buckets: the client added nothing visible at the server's resolution.",
                       numbers={"cells": len(checked)})
    c, a = off[0]
    ids = sorted({x.id for x, _ in off})
    return Finding(kind="server_agreement", severity="warning", cells=ids,
                   text=f"{len(ids)} cell(s) disagree with vLLM's own histograms — {c.id}: {a.text}.",
                   numbers={"cells": len(ids), "client_p50_ms": a.client_p50_ms,
                            "server_p50_ms": a.server_p50_ms})


def _prefix_cache(cells: list[CellResult]) -> Finding | None:
    hit = [c for c in cells if c.prefix_cache is not None and c.prefix_cache.flagged]
    if not hit:
        return None
    worst = max(hit, key=lambda c: c.prefix_cache.measured - c.prefix_cache.intended_max)  # type: ignore[union-attr]
    pc = worst.prefix_cache
    assert pc is not None
    return Finding(kind="data_quality", severity="problem", cells=[c.id for c in hit],
                   text=f"{len(hit)} cell(s) measured cached prompts — in {worst.id} {pc.text}.",
                   numbers={"cells": len(hit), "measured": pc.measured, "intended_max": pc.intended_max})


def _client_bound(cells: list[CellResult]) -> Finding | None:
    bound = [c for c in cells if c.client.client_bound]
    if not bound:
        return None
    share = len(bound) / len(cells)
    first_reason = bound[0].client.reasons[0] if bound[0].client.reasons else "no reason recorded"
    scope = "every cell" if len(bound) == len(cells) else f"{len(bound)} of {len(cells)} cells"
    return Finding(
        kind="client_bound", severity="warning", cells=[c.id for c in bound],
        text=(f"The load generator may have limited {scope} ({', '.join(c.id for c in bound[:8])}"
              f"{', ...' if len(bound) > 8 else ''}): their latencies are upper bounds and throughputs lower "
              f"bounds for the server. First reason ({bound[0].id}): {first_reason}."),
        numbers={"client_bound_cells": len(bound), "share": round(share, 3)})


def _spec_decode(cells: list[CellResult]) -> Finding | None:
    with_rate = [c for c in cells if c.server.get("spec_decode_acceptance_rate") is not None]
    if not with_rate:
        return None
    rates = [float(c.server["spec_decode_acceptance_rate"]) for c in with_rate]
    lengths = [float(c.server["spec_decode_mean_acceptance_length"]) for c in with_rate
               if c.server.get("spec_decode_mean_acceptance_length") is not None]
    lo = min(with_rate, key=lambda c: c.server["spec_decode_acceptance_rate"])
    hi = max(with_rate, key=lambda c: c.server["spec_decode_acceptance_rate"])
    mean_rate = sum(rates) / len(rates)
    mean_len = sum(lengths) / len(lengths) if lengths else None
    text = (f"Speculative decoding accepted {pct(mean_rate)} of drafted tokens on average over {len(with_rate)} "
            f"cells (lowest {pct(lo.server['spec_decode_acceptance_rate'])} at {lo.id}, highest "
            f"{pct(hi.server['spec_decode_acceptance_rate'])} at {hi.id})")
    if mean_len is not None:
        text += f"; each verification step emitted {num(mean_len)} tokens on average"
    return Finding(kind="spec_decode", cells=[lo.id, hi.id], text=text + ".",
                   numbers={"acceptance_rate_mean": round(mean_rate, 4), "acceptance_rate_min": min(rates),
                            "acceptance_rate_max": max(rates),
                            "mean_acceptance_length": round(mean_len, 3) if mean_len is not None else None})


def _kv(cells: list[CellResult]) -> Finding | None:
    hot = [c for c in cells
           if (c.server.get("kv_cache_usage_peak") or 0) >= 0.9 or (c.server.get("preemptions") or 0) > 0]
    if not hot:
        return None
    first = min(hot, key=lambda c: (c.context, load_of(c)))
    pre = sum(float(c.server.get("preemptions") or 0) for c in hot)
    return Finding(
        kind="kv_pressure", severity="warning", context=first.context, cells=[c.id for c in hot],
        text=(f"The KV cache ran full or preempted in {len(hot)} cells, first at {first.id} (peak usage "
              f"{pct(first.server.get('kv_cache_usage_peak'))}, {num(first.server.get('preemptions') or 0)} "
              f"preemptions; {num(pre)} in all): beyond it requests queue or are recomputed."),
        numbers={"cells": len(hot), "preemptions_total": pre})


def _quality(run: Run) -> list[Finding]:
    out = []
    few = [c for c in run.cells if measured(c) and c.metrics.requests < FEW_REQUESTS]
    if few:
        n = min(c.metrics.requests for c in few)
        out.append(Finding(kind="data_quality", severity="info", cells=[c.id for c in few],
                           text=(f"{len(few)} cells measured fewer than {FEW_REQUESTS} requests (as few as {n}): "
                                 "their p95 and p99 are interpolated from a handful of samples."),
                           numbers={"cells": len(few), "min_requests": n}))
    if run.meta.source != "measured":
        out.append(Finding(kind="data_quality", severity="info",
                           text=f"This run is {run.meta.source}, not measured by inferctl: "
                                + ("its numbers come from another tool's file." if run.meta.source == "imported"
                                   else "its numbers are the planner's predictions."),
                           numbers={"source": run.meta.source}))
    if run.meta.status == "failed":
        out.append(Finding(kind="data_quality", severity="problem",
                           text=f"The run failed: {run.meta.reason or 'no request succeeded'}.",
                           numbers={"status": run.meta.status}))
    elif run.meta.status != "complete":
        out.append(Finding(kind="data_quality", severity="warning",
                           text=f"The run is {run.meta.status}: some cells may be missing.",
                           numbers={"status": run.meta.status}))
    return out


def compute(run: Run, slos: list[str] | None = None, max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> Findings:
    """All findings of one run (pure: a function of its cells and metadata)."""
    slo_list, source = resolve_slos(run, slos)
    out = Findings(run_id=run.run_id, slos=[slo_text(s) for s in slo_list], slo_source=source,
                   max_error_rate=max_error_rate)
    for ctx, cells in rows(run.cells).items():
        summary = RowSummary(context=ctx, load_kind="rate" if cells[0].rate is not None else "concurrency")
        for f in (_saturation(ctx, cells, summary), *_slo(ctx, cells, slo_list, max_error_rate, summary),
                  _range(ctx, cells, slo_list, max_error_rate, summary), _failure(ctx, cells, summary)):
            if f is not None:
                out.findings.append(f)
        out.rows.append(summary)
    cells = run.cells
    for f in (_prefix_cache(cells), _agreement(cells), _client_bound(cells), _spec_decode(cells), _kv(cells),
              *_quality(run)):
        if f is not None:
            out.findings.append(f)
    return out
