"""report.md and compare.md: the header facts, findings, tables and chart links as Markdown.

``header_facts``, ``cell_table`` and ``comparison_table`` are shared with the HTML renderer, so both
documents say the same thing.
"""

from __future__ import annotations

import time
from typing import Any

from inferctl.report.compare import Comparison
from inferctl.report.cost import CostRanking, CostResult
from inferctl.report.data import Run, hardware_label, load_label, rows, success_rate
from inferctl.report.findings import Findings, num, pct


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S %Z", time.localtime(ts)) if ts else "—"


def _engine(run: Run) -> str:
    cc = run.meta.engine.get("cache_config") or {} if isinstance(run.meta.engine, dict) else {}
    keep = ("cache_dtype", "block_size", "enable_prefix_caching", "gpu_memory_utilization", "kv_cache_size_tokens",
            "kv_cache_max_concurrency", "num_gpu_blocks")
    parts = [f"{k}={cc[k]}" for k in keep if k in cc]
    spec = run.meta.engine.get("speculative_config") if isinstance(run.meta.engine, dict) else None
    if spec:
        parts.append(f"speculative={spec}")
    extra = run.meta.engine.get("imported_from") if isinstance(run.meta.engine, dict) else None
    if extra:
        parts.append(f"imported from {extra.get('format')} {extra.get('file')}")
    return ", ".join(parts) or "not recorded"


def _grid(run: Run) -> str:
    g = run.meta.grid
    loads = (f"rates {g.get('rates')}" if g.get("rates") else f"concurrency {g.get('concurrencies')}")
    return (f"contexts {g.get('contexts')} × {loads}, {g.get('output_tokens')} output tokens "
            f"({'ignore_eos' if g.get('ignore_eos', True) else 'natural stop'}), api {g.get('api')}, "
            f"≥{g.get('requests') or 'auto'} requests per cell"
            + (f", preset {g['preset']}" if g.get("preset") else ""))


def header_facts(run: Run) -> list[tuple[str, str]]:
    """What was measured, against what, when, by which inferctl: the report's header."""
    m = run.meta
    return [
        ("Run", m.run_id), ("Source", m.source), ("Status", m.status),
        ("Target", f"{m.target.get('name')} ({m.target.get('url') or '—'})"),
        ("Model", f"{m.model or '—'}" + (f" ({m.model_root})" if m.model_root and m.model_root != m.model else "")),
        ("Max model length", str(m.max_model_len or "—")), ("vLLM version", m.vllm_version or "—"),
        ("Engine config", _engine(run)), ("Hardware", hardware_label(m)), ("Grid", _grid(run)),
        ("Started", _when(m.started_at)), ("Ended", _when(m.ended_at)),
        ("inferctl version", m.inferctl_version or "—"),
        ("Command", " ".join(m.command) or "—"),
    ]


CELL_HEADERS = ["load", "status", "ok/sent", "req/s", "out tok/s", "goodput", "TTFT p50", "TTFT p95", "TPOT p50",
                "TPOT p95", "E2E p50", "E2E p95", "achieved", "KV peak", "preempt", "queue peak", "spec acc",
                "client"]


def cell_table(run: Run) -> dict[int, list[list[str]]]:
    """context -> table rows (strings) in CELL_HEADERS order."""
    out: dict[int, list[list[str]]] = {}
    for ctx, cells in rows(run.cells).items():
        table = []
        for c in cells:
            m, s = c.metrics, c.server
            sent = m.ok + m.errors
            sr = success_rate(c)
            table.append([
                load_label(c), c.status, f"{m.ok}/{sent}" + (f" ({pct(sr)})" if sr is not None and sr < 1 else ""),
                num(m.request_throughput), num(m.output_throughput), num(m.goodput), num(m.ttft.p50),
                num(m.ttft.p95), num(m.tpot.p50), num(m.tpot.p95), num(m.e2e.p50), num(m.e2e.p95),
                num(c.client.achieved_concurrency), pct(s.get("kv_cache_usage_peak")), num(s.get("preemptions")),
                num(s.get("requests_waiting_peak")), pct(s.get("spec_decode_acceptance_rate")),
                "bound" if c.client.client_bound else "ok",
            ])
        out[ctx] = table
    return out


AGREEMENT_HEADERS = ["cell", "TTFT client", "TTFT server (bucket)", "TPOT client", "TPOT server (bucket)",
                     "E2E client", "E2E server (bucket)", "agree"]


def agreement_table(run: Run) -> list[list[str]]:
    """Client p50s next to vLLM's own histogram p50s (and the bucket that bounds each), one row per cell."""
    body = []
    for c in run.cells:
        if not c.agreement:
            continue
        by = {a.metric: a for a in c.agreement}
        row = [c.id]
        for metric in ("ttft", "tpot", "e2e"):
            a = by.get(metric)
            if a is None:
                row += ["—", "—"]
                continue
            lo, hi = a.server_bucket_ms
            row += [num(a.client_p50_ms), f"{num(a.server_p50_ms)} ({num(lo)}–{'+Inf' if hi is None else num(hi)})"]
        row.append("yes" if all(a.agrees for a in c.agreement) else "**no**")
        body.append(row)
    return body


def _md_table(headers: list[str], body: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(x) for x in row) + " |" for row in body]
    return "\n".join(lines)


def slo_sentence(findings: Findings) -> str:
    origin = {"given": "from --slo", "run": "the run's own", "default": "defaults; pass --slo to change"}
    return (f"SLOs judged: {', '.join(findings.slos)} with errors ≤ {pct(findings.max_error_rate)} "
            f"({origin[findings.slo_source]}).")


def run_markdown(run: Run, findings: Findings, charts: list[str]) -> str:
    """report.md of one run."""
    out = [f"# Benchmark report: {run.run_id}", ""]
    out += [f"- **{k}**: {v}" for k, v in header_facts(run)]
    out += ["", "## Findings", "", slo_sentence(findings), ""]
    out += [f"- {'⚠ ' if f.severity != 'info' else ''}{f.text}" for f in findings.findings]
    out += ["", "## Summary per context", ""]
    out.append(_md_table(
        ["context", "peak req/s (at)", "peak out tok/s", "saturates at", "highest load in SLO", "recommended",
         "failures from"],
        [[r.context, f"{num(r.peak_request_throughput)} ({load_level(r.load_kind, r.peak_load)})",
          num(r.peak_output_throughput), load_level(r.load_kind, r.saturation_load, "not within grid"),
          load_level(r.load_kind, r.slo_max_load, "none"),
          f"{load_level(r.load_kind, r.recommended_min_load)}–{load_level(r.load_kind, r.recommended_max_load)}"
          if r.recommended_max_load is not None else "—",
          load_level(r.load_kind, r.failure_load, "none")] for r in findings.rows]))
    out += ["", "## Cells", "", "Latencies in ms. `achieved` = achieved concurrency (Little's law); `client` = "
            "whether the load generator limited the cell.", ""]
    for ctx, table in cell_table(run).items():
        out += [f"### Context {ctx} tokens", "", _md_table(CELL_HEADERS, table), ""]
    if agree := agreement_table(run):
        out += ["## Server vs client (p50, ms)", "", "vLLM's own histograms (`/metrics`) next to the client's "
                "medians; the server's median is only known to lie in its bucket. `agree` = every client median "
                "lies in that bucket (± 2 ms or 5%).", "", _md_table(AGREEMENT_HEADERS, agree), ""]
    if charts:
        out += ["## Charts", ""] + [f"![{c}]({c})" for c in charts] + [""]
    out += ["Definitions: docs/metrics.md (TTFT, TPOT, ITL, E2E, goodput) and docs/reports.md (findings).", ""]
    return "\n".join(out)


def load_level(kind: str, v: float | None, none: str = "—") -> str:
    """A load level as the tables show it: ``r=2/s`` (open loop) or ``c=8`` (closed loop); ``none`` when unset."""
    if v is None:
        return none
    return f"r={v:g}/s" if kind == "rate" else f"c={v:g}"


def comparison_table(cmp: Comparison, key: str) -> tuple[list[str], list[list[str]]]:
    """One metric across runs per matched cell: values, then % deltas vs the baseline, then the winner."""
    headers = ["context", "load"] + [r.label for r in cmp.runs] + [f"Δ {r.label}" for r in cmp.runs[1:]] + ["winner"]
    body = []
    for c in cmp.cells:
        vals = c.values[key]
        deltas = c.deltas[key][1:]
        body.append([str(c.context), load_level(c.load_kind, c.load)] + [num(v) for v in vals]
                    + ["—" if d is None else f"{'+' if d >= 0 else '−'}{abs(d) * 100:.1f}%" for d in deltas]
                    + [c.winners.get(key) or "tie"])
    return headers, body


def compare_markdown(cmp: Comparison, charts: list[str]) -> str:
    """compare.md."""
    from inferctl.report.data import METRICS

    out = [f"# Comparison: {' vs '.join(r.label for r in cmp.runs)}", ""]
    out.append(_md_table(["label", "run", "source", "model", "hardware", "vLLM"],
                         [[r.label, r.run_id, r.source, r.model or "—", r.hardware, r.vllm_version or "—"]
                          for r in cmp.runs]))
    if cmp.config_differences:
        out += ["", "## What differs", ""]
        out.append(_md_table(["field"] + [r.label for r in cmp.runs],
                             [[k] + [v or "—" for v in vals] for k, vals in cmp.config_differences.items()]))
    out += ["", "## Verdict", ""] + [f"- {s}" for s in cmp.summary]
    out += ["", "## Where each run wins", ""]
    for v in cmp.verdicts:
        out += [f"- {s}" for s in v.statements[1:]] if v.metric in ("output_throughput", "ttft_p95", "tpot_p50") else []
    for key in cmp.metrics:
        h, b = comparison_table(cmp, key)
        out += ["", f"### {METRICS[key].label} ({METRICS[key].unit or 'fraction'}; "
                f"{'higher' if METRICS[key].higher_is_better else 'lower'} is better)", "", _md_table(h, b)]
    if cmp.unmatched:
        out += ["", "Cells without a match: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in cmp.unmatched.items())]
    if charts:
        out += ["", "## Charts", ""] + [f"![{c}]({c})" for c in charts]
    return "\n".join(out) + "\n"


def cost_markdown(res: CostResult) -> str:
    """A cost result as Markdown (used by `cost --out`)."""
    hw = res.hardware
    out = [f"# Cost: {res.label} on {hw.key}", "",
           f"${hw.usd_per_hour:.4f}/hour ({hw.tier}); {', '.join(f'{k} ${v:.4f}' for k, v in hw.breakdown.items())}.",
           f"Sources: {'; '.join(hw.sources)}.", "", "## At SLO-bounded capacity", "",
           f"SLOs: {', '.join(res.slos)}.", ""]
    out.append(_md_table(["context", "cell", "req/s", "out tok/s", "$/1M requests", "$/1M output tok",
                          "$/1M total tok"],
                         [[c.context, c.cell or c.note, num(c.request_throughput), num(c.output_throughput),
                           num(c.usd_per_million_requests), num(c.usd_per_million_output_tokens),
                           num(c.usd_per_million_total_tokens)] for c in res.capacity]))
    mo = res.monthly
    out += ["", "## Monthly", "", f"- Always on: ${mo.always_on_usd:,.2f}",
            f"- {mo.active_hours_per_day:g} active hours a day ({mo.mode}): ${mo.active_only_usd:,.2f} "
            f"(saves ${mo.saving_usd:,.2f})", ""] + [f"- Note: {n}" for n in res.notes]
    return "\n".join(out) + "\n"


def ranking_markdown(rk: CostRanking) -> str:
    out = ["# Cost ranking at the same SLOs", "", f"SLOs: {', '.join(rk.slos)}; contexts {rk.contexts}.", ""]
    out.append(_md_table(["rank", "label", "hardware", "$/hour", "$/1M out tok (geo mean)", "monthly always-on",
                          "monthly active-only"],
                         [[e.rank or "—", e.label, e.hardware, f"{e.usd_per_hour:.3f}", num(e.score),
                           f"{e.monthly_always_on_usd:,.0f}", f"{e.monthly_active_only_usd:,.0f}"]
                          for e in rk.entries]))
    return "\n".join(out + [""] + [f"- {s}" for s in rk.summary]) + "\n"
