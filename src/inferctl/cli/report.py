"""`inferctl report | compare | cost | import`: turn run directories into answers (see docs/reports.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inferctl.cli.common import JsonOpt, console, emit, run, styled

RunsDirOpt = Annotated[str | None, typer.Option("--runs-dir", help="Runs root (default: $INFERCTL_RUNS_DIR or the "
                                                "data dir's runs/).")]
RunArg = Annotated[str, typer.Argument(help="Run id, id prefix, path, or 'latest'.")]
SloOpt = Annotated[list[str] | None, typer.Option("--slo", help="SLO to judge, e.g. ttft_p95_ms=500 (repeatable; "
                                                  "default: the run's own, else ttft_p95_ms=2000 tpot_p95_ms=100).")]
ErrOpt = Annotated[float, typer.Option("--max-error-rate", help="Highest error rate a cell may have and still "
                                       "meet the SLOs (0..1).")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Directory for the files (default: the run directory; "
                                             "compare: <runs>/compare/A-vs-B).")]
_SEV = {"info": "", "warning": "[yellow]⚠[/] ", "problem": "[red]✗[/] "}


def report(ref: RunArg, out: OutOpt = None, slo: SloOpt = None, max_error_rate: ErrOpt = 0.01,
           no_png: Annotated[bool, typer.Option("--no-png", help="Skip the PNG charts.")] = False,
           runs_dir: RunsDirOpt = None, as_json: JsonOpt = False) -> None:
    """Findings, report.md, a self-contained report.html (offline, interactive) and PNG charts for a run."""
    from inferctl.ops import report as ops

    result = run(lambda: ops.report(ref, root=runs_dir, out=out, slos=slo, max_error_rate=max_error_rate,
                                    png=not no_png))

    def render(r) -> None:
        c = console()
        c.print(styled("[bold]{}[/] ({})", r.run_id, r.source))
        c.print(f"SLOs: {', '.join(r.findings.slos)} ({r.findings.slo_source})")
        for f in r.findings.findings:
            c.print(styled("• " + _SEV[f.severity] + "{}", f.text))
        c.print(f"report.md    {r.markdown}")
        if r.charts:
            c.print(f"charts       {', '.join(Path(p).name for p in r.charts)} in {r.out_dir}")
        c.print(styled("[bold]report.html  {}[/]", r.html))

    emit(result, as_json, render)


def compare(
    refs: Annotated[list[str], typer.Argument(help="Two or more runs; the first is the baseline.")],
    label: Annotated[list[str] | None, typer.Option("--label", "-l", help="Name for each run, in order "
                                                    "(repeatable), e.g. --label fp8 --label qat.")] = None,
    metric: Annotated[list[str] | None, typer.Option("--metric", help="Metrics to compare (repeatable; default: "
                                                     "throughputs, goodput, TTFT, TPOT, E2E, success).")] = None,
    tie: Annotated[float, typer.Option("--tie", help="Margin under which runs tie on a cell (fraction).")] = 0.05,
    out: OutOpt = None,
    no_files: Annotated[bool, typer.Option("--no-files", help="Only print; write no compare.md/.html.")] = False,
    runs_dir: RunsDirOpt = None, as_json: JsonOpt = False,
) -> None:
    """Compare runs cell by cell: values, % deltas vs the first run, who wins where, overlaid charts."""
    from inferctl.ops import compare as ops

    result = run(lambda: ops.compare(refs, labels=label, root=runs_dir, out=out, metrics=metric,
                                     tie_threshold=tie, files=not no_files))

    def render(r) -> None:
        from rich.table import Table

        from inferctl.report.findings import num

        cmp, c = r.comparison, console()
        for ref in cmp.runs:
            c.print(styled("[bold]{}[/]  {}  {}  {}  {}", ref.label, ref.run_id, ref.source, ref.model or "—",
                           ref.hardware))
        for k, vals in cmp.config_differences.items():
            c.print(f"  differs: {k}: " + " | ".join(str(v) for v in vals))
        key = "output_throughput" if "output_throughput" in cmp.metrics else cmp.metrics[0]
        t = Table(title=f"{key} (Δ vs {cmp.baseline})", title_justify="left")
        for col in ["ctx", "load", *(x.label for x in cmp.runs), *(f"Δ {x.label}" for x in cmp.runs[1:]), "winner"]:
            t.add_column(col)
        for cell in cmp.cells:
            deltas = [("—" if d is None else f"{d * 100:+.1f}%") for d in cell.deltas[key][1:]]
            t.add_row(str(cell.context), f"{cell.load:g}", *(num(v) for v in cell.values[key]), *deltas,
                      cell.winners.get(key) or "tie")
        c.print(t)
        for s in cmp.summary:
            c.print(f"• {s}")
        for v in cmp.verdicts:
            if v.metric in ("output_throughput", "ttft_p95"):
                for s in v.statements[1:]:
                    c.print(f"  {s}")
        if r.html:
            c.print(styled("[bold]compare.html  {}[/]", r.html))

    emit(result, as_json, render)


def cost(
    refs: Annotated[list[str], typer.Argument(help="A run (or, with --compare, two or more).")],
    hardware: Annotated[list[str] | None, typer.Option("--hardware", help="Price key, deployment profile or "
                                                       "accelerator (e.g. cloudrun-l4, cloudrun-l4-12b-qat, v6e-4); "
                                                       "with --compare one per run, in order.")] = None,
    price_per_hour: Annotated[float | None, typer.Option("--price-per-hour", help="USD per hour of the whole "
                                                         "deployment instead of the catalog.")] = None,
    tier: Annotated[str, typer.Option("--tier", help="on-demand, spot, committed-1y or committed-3y.")] = "on-demand",
    compare_: Annotated[bool, typer.Option("--compare", help="Rank the runs by cost at the same SLOs.")] = False,
    label: Annotated[list[str] | None, typer.Option("--label", "-l", help="Name per run (with --compare).")] = None,
    active_hours: Annotated[float, typer.Option("--active-hours", help="Busy hours per day, for the monthly "
                                                "scale-to-zero estimate.")] = 8.0,
    slo: SloOpt = None, max_error_rate: ErrOpt = 0.01, out: OutOpt = None,
    runs_dir: RunsDirOpt = None, as_json: JsonOpt = False,
) -> None:
    """$/1M requests and tokens per cell and at the SLO-bounded capacity; monthly always-on vs scale-to-zero."""
    from inferctl.cli.common import fail
    from inferctl.ops import cost as ops

    if compare_:
        if price_per_hour is not None:
            raise fail("--price-per-hour prices one run; with --compare give --hardware per run.", 2)
        ranking = run(lambda: ops.cost_compare(refs, hardware=hardware, labels=label, tier=tier, root=runs_dir,
                                               slos=slo, max_error_rate=max_error_rate, active_hours=active_hours))
        _write(out, "cost-ranking.md", ranking, "ranking")
        emit(ranking, as_json, _render_ranking)
        return
    if len(refs) != 1 or (hardware and len(hardware) > 1):
        raise fail("cost prices one run with one --hardware; use --compare for several.", 2)
    result = run(lambda: ops.cost_of(refs[0], hardware=hardware[0] if hardware else None,
                                     price_per_hour=price_per_hour, tier=tier, root=runs_dir, slos=slo,
                                     max_error_rate=max_error_rate, active_hours=active_hours,
                                     label=label[0] if label else None))
    _write(out, "cost.md", result, "cost")
    emit(result, as_json, _render_cost)


def _write(out: Path | None, name: str, result, kind: str) -> None:
    if out is None:
        return
    from inferctl.report.markdown import cost_markdown, ranking_markdown

    out.mkdir(parents=True, exist_ok=True)
    text = cost_markdown(result) if kind == "cost" else ranking_markdown(result)
    (out / name).write_text(text, encoding="utf-8")


def _render_cost(r) -> None:
    from rich.table import Table
    from rich.text import Text

    from inferctl.cli.tables import keep_whole
    from inferctl.report.findings import num

    c, hw = console(), r.hardware
    c.print(styled("[bold]{}[/] priced as [bold]{}[/]: ${}/hour ({}{})", r.label, hw.key, f"{hw.usd_per_hour:.4f}",
                   hw.tier, "" if hw.verified else ", not all components verified"))
    c.print("  " + ", ".join(f"{k} ${v:.4f}/h" for k, v in hw.breakdown.items()))
    t = Table(title=f"per cell (SLOs: {', '.join(r.slos)})", title_justify="left")
    for col in ("cell", "req/s", "out tok/s", "$/1M req", "$/1M out tok", "$/1M total tok", "SLO"):
        t.add_column(col)
    for x in r.cells:
        t.add_row(x.cell, num(x.request_throughput), num(x.output_throughput), num(x.usd_per_million_requests),
                  num(x.usd_per_million_output_tokens), num(x.usd_per_million_total_tokens),
                  "meets" if x.meets_slo else Text("misses", style="red"))
    c.print(keep_whole(t, ["cell"]))
    for cap in r.capacity:
        if cap.cell:
            c.print(f"ctx {cap.context}: at SLO capacity ({cap.cell}, {num(cap.request_throughput)} req/s) "
                    f"${num(cap.usd_per_million_requests)} per 1M requests, "
                    f"${num(cap.usd_per_million_output_tokens)} per 1M output tokens")
        else:
            c.print(f"ctx {cap.context}: {cap.note}")
    mo = r.monthly
    c.print(f"monthly: always-on ${mo.always_on_usd:,.2f}; {mo.active_hours_per_day:g} h/day {mo.mode} "
            f"${mo.active_only_usd:,.2f} (saves ${mo.saving_usd:,.2f})")
    for n in r.notes:
        c.print(styled("[yellow]note:[/] {}", n))


def _render_ranking(rk) -> None:
    from rich.table import Table

    from inferctl.cli.tables import keep_whole
    from inferctl.report.findings import num

    t = Table(title=f"cost at the same SLOs ({', '.join(rk.slos)}), contexts {rk.contexts}", title_justify="left")
    for col in ("rank", "label", "hardware", "$/hour", "$/1M out tok", "monthly always-on", "monthly active"):
        t.add_column(col)
    for e in rk.entries:
        t.add_row(str(e.rank or "—"), e.label, e.hardware, f"{e.usd_per_hour:.3f}", num(e.score),
                  f"{e.monthly_always_on_usd:,.0f}", f"{e.monthly_active_only_usd:,.0f}")
    console().print(keep_whole(t, ["label", "hardware"]))
    for s in rk.summary:
        console().print(f"• {s}")


def import_(
    files: Annotated[list[Path], typer.Argument(help="vllm bench serve JSON, GuideLLM JSON or the seed's "
                                                "benchmark_sweep_results.csv (several files: one run).")],
    label: Annotated[str | None, typer.Option("--label", help="Name of the imported run (default: file name).")] = None,
    hardware: Annotated[str | None, typer.Option("--hardware", help="What it ran on (a price key or profile lets "
                                                 "`cost` price it without --hardware).")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name, when the file lacks it.")] = None,
    output_tokens: Annotated[int | None, typer.Option("--output-tokens", help="Output tokens per request, when "
                                                      "the file cannot say (seed CSVs).")] = None,
    runs_dir: RunsDirOpt = None, as_json: JsonOpt = False,
) -> None:
    """Turn another tool's results into a run directory, so report, compare and cost work on them."""
    from inferctl.ops import bench as bench_ops
    from inferctl.ops import imports as ops

    result = run(lambda: ops.import_files(files, root=runs_dir, label=label, hardware=hardware, model=model,
                                          output_tokens=output_tokens, command=bench_ops.argv()))

    def render(r) -> None:
        c = console()
        c.print(styled("imported {} cells ({}; contexts {}, loads {}) as [bold]{}[/]", r.cells, r.format, r.contexts,
                       ", ".join(f"{x:g}" for x in r.loads), r.run_id))
        for w in r.warnings:
            c.print(styled("[yellow]note:[/] {}", w))
        c.print(f"path: {r.path}")

    emit(result, as_json, render)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("compare")(compare)
    app.command("cost")(cost)
    app.command("import")(import_)
