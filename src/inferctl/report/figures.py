"""What the charts show, as data: one description drives both the PNG (matplotlib) and HTML (plotly) renderers.

A ``Figure`` is either line panels (x = load, one line per context or per run × context, log axes) or
heatmaps (context × load). Building them is pure, so tests check the content without drawing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from inferctl.report.compare import Comparison
from inferctl.report.data import METRICS, Run, load_label, load_of, rows


@dataclass
class Line:
    name: str
    x: list[float]
    y: list[float | None]
    color: int = 0  # index into the palette (a context, or a run)
    dash: bool = False
    markers: bool = False  # points only (a scatter), no connecting line


@dataclass
class Panel:
    title: str
    ylabel: str
    lines: list[Line] = field(default_factory=list)
    logx: bool = True
    logy: bool = True


@dataclass
class Heat:
    title: str
    x_labels: list[str]
    y_labels: list[str]
    z: list[list[float | None]]
    lower_is_better: bool = False
    percent: bool = False


@dataclass
class Figure:
    name: str  # file stem: latency, throughput, heatmaps, server...
    title: str
    xlabel: str = "concurrency"
    panels: list[Panel] = field(default_factory=list)
    heats: list[Heat] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not any(any(v is not None for ln in p.lines for v in ln.y) for p in self.panels) and not self.heats


def tick_label(v: float) -> str:
    """A tick as people read it: plain digits, thousands separators, no exponent (26, 800, 1,600, 0.05)."""
    if v == 0 or not math.isfinite(v):
        return "0" if v == 0 else str(v)
    decimals = max(0, 2 - math.floor(math.log10(abs(v))))  # three significant digits
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# Mantissas per decade, coarsest first: a log axis gets the coarsest set that puts at least three ticks on the data.
_MANTISSAS = ((1,), (1, 3), (1, 2, 5), (1, 2, 3, 5, 7), (1, 1.5, 2, 3, 4, 5, 6, 7, 8, 9))


def log_ticks(values: Iterable[float | None]) -> list[float]:
    """Tick positions for a log axis over ``values``: round numbers (1, 2, 5 x 10^k...) within the data's range,
    so both renderers label a log axis ``20  50  100`` rather than ``2x10^1``."""
    pos = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not pos:
        return []
    lo, hi = min(pos), max(pos)
    k0, k1 = math.floor(math.log10(lo)), math.floor(math.log10(hi))
    inside: list[float] = []
    for mantissas in _MANTISSAS:
        ticks = [float(f"{m * 10.0 ** k:.6g}") for k in range(k0, k1 + 1) for m in mantissas]
        inside = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
        if len(inside) >= 3:
            return inside
    # a narrow range (26 to 31, or one point): its ends, rounded
    return inside if len(inside) >= 2 else sorted({float(f"{lo:.2g}"), float(f"{hi:.2g}")})


def _xlabel(run: Run) -> str:
    return "request rate (req/s)" if run.open_loop else "concurrency (requests in flight)"


def _panel(run: Run, title: str, keys: list[tuple[str, bool]], logy: bool = True) -> Panel:
    unit = METRICS[keys[0][0]].unit
    p = Panel(title=title, ylabel=unit or "fraction", logy=logy)
    for i, (ctx, cells) in enumerate(rows(run.cells).items()):
        for key, dash in keys:
            m = METRICS[key]
            ys = [m.get(c) for c in cells]
            if any(y is not None for y in ys):
                suffix = f" {m.label.split()[-1]}" if len(keys) > 1 else ""
                p.lines.append(Line(name=f"ctx {ctx}{suffix}", x=[load_of(c) for c in cells], y=ys, color=i,
                                    dash=dash))
    return p


def run_figures(run: Run) -> list[Figure]:
    """Latency, throughput, heatmaps and server-side figures of one run."""
    xl = _xlabel(run)
    figs = [
        Figure("latency", "Latency vs load (solid p50, dashed p95; one colour per context)", xl, panels=[
            _panel(run, "TTFT", [("ttft_p50", False), ("ttft_p95", True)]),
            _panel(run, "TPOT", [("tpot_p50", False), ("tpot_p95", True)]),
            _panel(run, "E2E latency", [("e2e_p50", False), ("e2e_p95", True)]),
        ]),
        Figure("throughput", "Throughput vs load (one line per context)", xl, panels=[
            _panel(run, "Request throughput", [("request_throughput", False)]),
            _panel(run, "Output token throughput", [("output_throughput", False)]),
        ]),
        heatmaps(run),
        Figure("server", "Server side per cell (from /metrics)", xl, panels=[
            _panel(run, "KV cache usage peak", [("kv_cache_usage_peak", False)], logy=False),
            _panel(run, "Preemptions", [("preemptions", False)], logy=False),
            _panel(run, "Server queue depth peak", [("requests_waiting_peak", False)], logy=False),
            _panel(run, "Spec-decode acceptance rate", [("spec_decode_acceptance_rate", False)], logy=False),
        ]),
    ]
    for f in figs:  # panels with no data at all (no spec decode, no /metrics) say nothing: drop them
        f.panels = [p for p in f.panels if p.lines]
    return [f for f in figs if f.panels or f.heats]


def heatmaps(run: Run) -> Figure:
    """context × load of req/s, output tok/s, p95 TTFT and success rate."""
    by_row = rows(run.cells)
    loads = sorted({load_of(c) for c in run.cells})
    labels = {load_of(c): load_label(c) for c in run.cells}
    ctxs = list(by_row)

    def grid(key: str) -> list[list[float | None]]:
        m = METRICS[key]
        out = []
        for ctx in ctxs:
            cells = {load_of(c): c for c in by_row[ctx]}
            out.append([m.get(cells[x]) if x in cells else None for x in loads])
        return out

    x = [labels[v] for v in loads]
    y = [f"ctx {c}" for c in ctxs]
    return Figure("heatmaps", "Context × load", heats=[
        Heat("Request throughput (req/s)", x, y, grid("request_throughput")),
        Heat("Output tokens/s", x, y, grid("output_throughput")),
        Heat("TTFT p95 (ms)", x, y, grid("ttft_p95"), lower_is_better=True),
        Heat("Success rate", x, y, grid("success_rate"), percent=True),
    ])


COMPARE_PANELS = [("output_throughput", "Output token throughput"), ("request_throughput", "Request throughput"),
                  ("ttft_p95", "TTFT p95"), ("tpot_p50", "TPOT p50"), ("e2e_p50", "E2E latency p50")]


def compare_figures(cmp: Comparison) -> list[Figure]:
    """Overlaid lines (colour = run, dash = second and later contexts) and % delta heatmaps vs the baseline."""
    xl = "request rate (req/s)" if cmp.cells and cmp.cells[0].load_kind == "rate" else "concurrency"
    contexts = sorted({c.context for c in cmp.cells})
    overlay = Figure("compare", "Runs overlaid on matching cells (colour = run; solid = first context, dashed = "
                                "others)", xl)
    for key, title in COMPARE_PANELS:
        if key not in cmp.metrics:
            continue
        p = Panel(title=title, ylabel=METRICS[key].unit)
        for ri, run in enumerate(cmp.runs):
            for ci, ctx in enumerate(contexts):
                cells = sorted((c for c in cmp.cells if c.context == ctx), key=lambda c: c.load)
                p.lines.append(Line(name=f"{run.label} ctx {ctx}", x=[c.load for c in cells],
                                    y=[c.values[key][ri] for c in cells], color=ri, dash=ci > 0))
        overlay.panels.append(p)
    figs = [overlay]
    if not cmp.cells:  # nothing matched: no heatmap can be drawn (ops.compare refuses before this)
        return figs
    loads = sorted({c.load for c in cmp.cells})
    x = [f"r={v:g}" if xl.startswith("request") else f"c={v:g}" for v in loads]
    for ri, run in enumerate(cmp.runs[1:], start=1):
        heats = []
        for key in ("output_throughput", "ttft_p95", "tpot_p50"):
            if key not in cmp.metrics:
                continue
            z = []
            for ctx in contexts:
                cells = {c.load: c for c in cmp.cells if c.context == ctx}
                z.append([cells[v].deltas[key][ri] if v in cells else None for v in loads])
            heats.append(Heat(f"{METRICS[key].label}: {run.label} vs {cmp.baseline} (% change)", x,
                              [f"ctx {c}" for c in contexts], z, lower_is_better=not METRICS[key].higher_is_better,
                              percent=True))
        figs.append(Figure(f"delta-{ri}", f"{run.label} vs {cmp.baseline}", xl, heats=heats))
    return figs


def fleet_figure(result) -> Figure:
    """The fleet search's cost-vs-capacity chart: every priced deployment of a replica (points, one series per
    platform and tier) and the frontier (the cheapest replica-month for at least that capacity)."""
    from inferctl.catalog.prices import HOURS_PER_MONTH

    groups: dict[str, list[tuple[float, float]]] = {}
    for row in result.rows:
        per_replica = row.usd_per_machine_hour / row.replicas_per_machine * HOURS_PER_MONTH
        groups.setdefault(f"{row.platform} {row.tier}", []).append((row.capacity_rps, round(per_replica, 2)))
    lines = []
    for i, (name, pts) in enumerate(sorted(groups.items())):
        pts.sort()
        lines.append(Line(name=name, x=[p[0] for p in pts], y=[p[1] for p in pts], color=i, markers=True))
    every = sorted({p for pts in groups.values() for p in pts}, key=lambda p: (-p[0], p[1]))
    frontier: list[tuple[float, float]] = []
    for x, y in every:  # from the highest capacity down: keep a point when it is cheaper than all above it
        if not frontier or y < frontier[-1][1]:
            frontier.append((x, y))
    frontier.reverse()
    if frontier:
        lines.append(Line(name="frontier", x=[p[0] for p in frontier], y=[p[1] for p in frontier], color=len(lines),
                          dash=True))
    panel = Panel(title="Cost vs capacity per replica", ylabel="USD per replica-month", lines=lines, logx=True,
                  logy=True)
    return Figure(name="fleet", title="Deployments: capacity in SLO vs monthly cost", xlabel="capacity (req/s "
                  "per replica, every SLO met)", panels=[panel])
