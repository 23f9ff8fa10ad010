"""report.html and compare.html: one self-contained file with interactive plotly charts.

plotly.js is embedded once (``include_plotlyjs=True`` on the first chart), so the file opens offline
with no CDN. Imported lazily: plotly costs ~0.3 s to load.
"""

from __future__ import annotations

import html
import math

from inferctl.report.compare import Comparison
from inferctl.report.data import METRICS, Run
from inferctl.report.figures import Figure, Heat, Panel, log_ticks, tick_label
from inferctl.report.findings import Findings, num
from inferctl.report.markdown import (
    AGREEMENT_HEADERS,
    CELL_HEADERS,
    agreement_table,
    cell_table,
    comparison_table,
    header_facts,
    load_level,
    slo_sentence,
)
from inferctl.report.png import PALETTE

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1280px;color:#222;
padding:0 16px}
h1{font-size:1.5em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12.5px;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 7px;
text-align:right}th{background:#f4f4f4}td:first-child,th:first-child{text-align:left}
.facts td{text-align:left}.warning{color:#a15c00}.problem{color:#b00020}.chart{margin:12px 0}
.muted{color:#666;font-size:12px}
"""


def _esc(x: object) -> str:
    return html.escape(str(x))


def _table(headers: list[str], body: list[list[str]], cls: str = "") -> str:
    h = "".join(f"<th>{_esc(x)}</th>" for x in headers)
    rows = "".join("<tr>" + "".join(f"<td>{_esc(x)}</td>" for x in r) + "</tr>" for r in body)
    return f'<table class="{cls}"><tr>{h}</tr>{rows}</table>'


def _plotly_figure(spec: Figure):
    from plotly.subplots import make_subplots

    items = spec.panels or spec.heats
    cols = 2 if len(items) > 1 else 1
    nrows = math.ceil(len(items) / cols)
    fig = make_subplots(rows=nrows, cols=cols, subplot_titles=[i.title for i in items],
                        horizontal_spacing=0.12 if spec.heats else 0.08, vertical_spacing=0.16)
    for n, item in enumerate(items):
        r, c = n // cols + 1, n % cols + 1
        if isinstance(item, Panel):
            _add_panel(fig, item, r, c, spec.xlabel, first=n == 0)
        else:
            _add_heat(fig, item, r, c, n, len(items), cols, nrows)
    fig.update_layout(title=spec.title, height=380 * nrows, margin={"t": 80, "l": 60, "r": 30, "b": 50},
                      legend={"font": {"size": 10}}, template="plotly_white")
    return fig


def _add_panel(fig, p: Panel, r: int, c: int, xlabel: str, first: bool) -> None:
    import plotly.graph_objects as go

    for ln in p.lines:
        pts = [(x, y) for x, y in zip(ln.x, ln.y, strict=True)
               if y is not None and not (p.logy and y <= 0) and not (p.logx and x <= 0)]
        if not pts:
            continue
        xs, ys = zip(*pts, strict=True)
        fig.add_trace(go.Scatter(
            x=list(xs), y=list(ys), mode="markers" if ln.markers else "lines+markers", name=ln.name,
            legendgroup=ln.name, showlegend=first,
            line={"color": PALETTE[ln.color % len(PALETTE)], "dash": "dash" if ln.dash else "solid"},
            hovertemplate=f"{_esc(ln.name)}<br>{xlabel.split(' (')[0]} %{{x:,~r}}<br>{_esc(p.title)} %{{y:,.4~r}} "
                          f"{_esc(p.ylabel)}<extra></extra>"), row=r, col=c)
    ticks = sorted({x for ln in p.lines for x in ln.x if x > 0})
    # the grid's own loads as ticks: a log axis would otherwise label 1.5, 2.5... that were never measured
    fig.update_xaxes(type="log" if p.logx else "linear", title_text=xlabel, tickvals=ticks,
                     ticktext=[tick_label(t) for t in ticks], row=r, col=c)
    # plain numbers, never 2×10¹ or 1.6k: round 1-2-5 ticks on a log axis, d3's ",~r" (1,600; 0.05) on a linear one
    yticks = log_ticks(y for ln in p.lines for y in ln.y) if p.logy else []
    fig.update_yaxes(type="log" if p.logy else "linear", title_text=p.ylabel, exponentformat="none",
                     separatethousands=True, tickformat=",~r",
                     **({"tickvals": yticks, "ticktext": [tick_label(t) for t in yticks]} if yticks else {}),
                     row=r, col=c)


def _add_heat(fig, h: Heat, r: int, c: int, n: int, total: int, cols: int, nrows: int) -> None:
    import plotly.graph_objects as go

    text = [["—" if v is None else (f"{v * 100:.0f}%" if h.percent else num(v)) for v in row] for row in h.z]
    scale = "RdYlGn_r" if h.lower_is_better else ("RdYlGn" if h.percent else "Viridis")
    vals = [v for row in h.z for v in row if v is not None]
    extra = {}
    if h.percent and vals and min(vals) < 0:
        lim = max(abs(v) for v in vals) or 1.0
        extra = {"zmin": -lim, "zmax": lim}
    elif h.percent:
        extra = {"zmin": 0.0, "zmax": 1.0}
    # one colour bar per heatmap, placed next to its own subplot
    x_end = (c / cols) - (0.06 if c < cols else 0.0)
    y_mid = 1 - (r - 0.5) / nrows
    fig.add_trace(go.Heatmap(z=h.z, x=h.x_labels, y=h.y_labels, text=text, texttemplate="%{text}",
                             colorscale=scale, showscale=True, hoverongaps=False,
                             colorbar={"len": 0.8 / nrows, "x": x_end, "y": y_mid, "thickness": 10,
                                       "tickformat": ".0%" if h.percent else ",~r", "exponentformat": "none"},
                             hovertemplate="%{y} %{x}: %{text}<extra></extra>", **extra), row=r, col=c)


def _charts(figs: list[Figure]) -> str:
    parts = []
    for i, spec in enumerate(figs):
        fig = _plotly_figure(spec)
        parts.append('<div class="chart" id="chart-{}">{}</div>'.format(spec.name, fig.to_html(
            full_html=False, include_plotlyjs=i == 0, div_id=f"plot-{spec.name}",
            config={"displaylogo": False, "responsive": True})))
    return "\n".join(parts)


def _doc(title: str, body: str) -> str:
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_esc(title)}</title>"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><style>{CSS}</style>"
            f"</head><body>{body}</body></html>\n")


def run_html(run: Run, findings: Findings, figs: list[Figure]) -> str:
    """report.html of one run."""
    b = [f"<h1>Benchmark report: {_esc(run.run_id)}</h1>",
         _table(["", ""], [[k, v] for k, v in header_facts(run)], "facts"),
         "<h2>Findings</h2>", f"<p class=\"muted\">{_esc(slo_sentence(findings))}</p><ul>"]
    b += [f'<li class="{f.severity}">{_esc(f.text)}</li>' for f in findings.findings]
    b.append("</ul><h2>Summary per context</h2>")
    b.append(_table(["context", "peak req/s", "peak at", "saturates at", "highest load in SLO", "recommended",
                     "failures from"],
                    [[str(r.context), num(r.peak_request_throughput), load_level(r.load_kind, r.peak_load),
                      load_level(r.load_kind, r.saturation_load, "not within grid"),
                      load_level(r.load_kind, r.slo_max_load, "none"),
                      f"{load_level(r.load_kind, r.recommended_min_load)}–"
                      f"{load_level(r.load_kind, r.recommended_max_load)}"
                      if r.recommended_max_load is not None else "—", load_level(r.load_kind, r.failure_load, "none")]
                     for r in findings.rows]))
    b.append("<h2>Charts</h2><p class=\"muted\">Hover for values; click legend entries to hide lines; drag to "
             "zoom, double-click to reset.</p>")
    b.append(_charts(figs))
    b.append("<h2>Cells</h2><p class=\"muted\">Latencies in ms.</p>")
    for ctx, table in cell_table(run).items():
        b += [f"<h3>Context {ctx} tokens</h3>", _table(CELL_HEADERS, table)]
    if agree := agreement_table(run):
        b += ["<h2>Server vs client (p50, ms)</h2><p class=\"muted\">vLLM's own histograms next to the client's "
              "medians; the server's median is only known to lie in its bucket.</p>",
              _table(AGREEMENT_HEADERS, [[x.replace("**", "") for x in row] for row in agree])]
    return _doc(f"inferctl report {run.run_id}", "\n".join(b))


def compare_html(cmp: Comparison, figs: list[Figure]) -> str:
    """compare.html: runs, what differs, the verdict, overlaid charts and per-metric tables."""
    b = [f"<h1>Comparison: {_esc(' vs '.join(r.label for r in cmp.runs))}</h1>",
         _table(["label", "run", "source", "model", "hardware", "vLLM"],
                [[r.label, r.run_id, r.source, r.model or "—", r.hardware, r.vllm_version or "—"] for r in cmp.runs])]
    if cmp.config_differences:
        b += ["<h2>What differs</h2>", _table(["field"] + [r.label for r in cmp.runs],
                                               [[k] + [v or "—" for v in vals]
                                                for k, vals in cmp.config_differences.items()], "facts")]
    b += ["<h2>Verdict</h2><ul>"] + [f"<li>{_esc(s)}</li>" for s in cmp.summary] + ["</ul>"]
    b += ["<h2>Where each run wins</h2><ul>"]
    b += [f"<li>{_esc(s)}</li>" for v in cmp.verdicts if v.metric in ("output_throughput", "ttft_p95", "tpot_p50")
          for s in v.statements[1:]]
    b += ["</ul><h2>Charts</h2>", _charts(figs)]
    for key in cmp.metrics:
        h, body = comparison_table(cmp, key)
        m = METRICS[key]
        b += [f"<h3>{_esc(m.label)} ({_esc(m.unit or 'fraction')}; "
              f"{'higher' if m.higher_is_better else 'lower'} is better)</h3>", _table(h, body)]
    return _doc("inferctl compare", "\n".join(b))


def fleet_html(result, figs: list[Figure]) -> str:
    """The fleet search's report: the workload, the ranked deployments, the frontier chart, every candidate."""
    c = result.counts
    b = ["<h1>Fleet plan</h1>", f"<p>{_esc(result.workload)}</p>",
         f"<p class=\"muted\">{c.get('candidates', 0)} candidates: {c.get('simulated', 0)} simulated "
         f"({c.get('simulations', 0)} simulations), {c.get('pruned', 0)} pruned, {c.get('not_fitting', 0)} not "
         f"fitting, {c.get('infeasible', 0)} meeting no SLO at any load; {result.elapsed_s:g} s.</p>"]
    if result.binding:
        b.append(f'<p class="problem">{_esc(result.binding)}</p>')
    b.append("<h2>Deployments, cheapest first</h2>")
    b.append(_table(["deployment", "machine", "tier", "req/s per replica", "replicas", "machines", "headroom",
                     "USD/month (shaped)", "USD/month (always on)", "limited by"],
                    [[r.label, r.price_key, r.tier, num(r.capacity_rps), str(r.replicas), str(r.machines),
                      f"{r.headroom:.0%}", f"{r.monthly:,.0f}", f"{r.monthly_always_on:,.0f}", r.limiting or "—"]
                     for r in result.rows[:50]]))
    b.append("<h2>Cost vs capacity</h2>")
    b.append(_charts([f for f in figs if not f.empty]))
    b.append("<h2>Every candidate</h2>")
    b.append(_table(["candidate", "status", "req/s per replica", "bound", "limited by", "why"],
                    [[x.candidate.label, x.status, num(x.capacity_rps) if x.capacity_rps else "—",
                      num(x.bound_rps) if x.bound_rps else "—", x.limiting or "—", x.reason or ""]
                     for x in result.candidates]))
    b += [f'<p class="muted">note: {_esc(n)}</p>' for n in result.notes]
    return _doc("inferctl fleet plan", "\n".join(b))
