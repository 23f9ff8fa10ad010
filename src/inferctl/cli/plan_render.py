"""Rich renderings of plan, simulate and calibrate results. Presentation only."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from inferctl.cli.common import console


def _kv() -> Table:
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="dim", no_wrap=True)
    t.add_column()
    return t


def _n(v: float | None, fmt: str = ",.1f") -> str:
    return "—" if v is None else f"{v:{fmt}}"


def plan(report: Any) -> None:
    c = console()
    m = report.memory
    verdict = Text("FITS", style="bold green") if report.fits else Text("DOES NOT FIT", style="bold red")
    c.print(Text.assemble(verdict, f"  {m.model} ({m.quant}, KV {m.kv_dtype}) on {m.tp * m.replicas} x "
                                   f"{m.accelerator} (TP {m.tp}), max_model_len {m.max_model_len:,}"))
    t = _kv()
    t.add_row("device memory", f"{m.device_memory_gib:.2f} GiB; vLLM may use {m.budget_gib:.2f} GiB")
    t.add_row("weights / device", f"{m.weights_gib:.2f} GiB")
    r = m.reserve
    t.add_row("reserve", f"{r.total_gib:.2f} GiB (activations {r.activations_gib:.2f}, sampler {r.sampler_gib:.2f}, "
                         f"graphs {r.cuda_graphs_gib:.2f}, other {r.non_torch_gib:.2f})")
    t.add_row("KV cache", f"{m.kv_memory_gib:.2f} GiB = {m.kv.num_blocks:,} blocks of {m.kv.bytes_per_block:,} B")
    t.add_row("KV per token", f"full layers {m.kv.bytes_per_token_full:,.0f} B; sliding layers "
                             f"{m.kv.bytes_per_token_sliding:,.0f} B (window + in-flight only)")
    t.add_row("KV groups", m.kv_groups or "—")
    t.add_row("KV capacity", f"{m.kv.kv_cache_tokens:,} tokens (as vLLM logs it)")
    t.add_row("max concurrency", f"{m.kv.max_concurrency:,.2f} requests of {m.max_model_len:,} tokens")
    if m.reason:
        t.add_row("why not", Text(m.reason, style="red"))
    c.print(t)
    if report.suggestions:
        s = Table(title="What would make it fit", title_justify="left", title_style="bold")
        for col in ("change", "flags", "KV tokens", "concurrency"):
            s.add_column(col)
        for x in report.suggestions:
            s.add_row(x.change, x.flags, f"{x.kv_cache_tokens:,}", f"{x.max_concurrency:,.2f}")
        c.print(s)
    if report.performance:
        p = Table(title="Predicted performance (simulated)", title_justify="left", title_style="bold")
        for col in ("users", "prompt/output", "req/s", "output tok/s", "p50 TTFT", "p50 TPOT", "tok/s/user",
                    "$/M output tok"):
            p.add_column(col, justify="right")
        for x in report.performance:
            p.add_row(str(x.concurrency), f"{x.context}/{x.output_tokens}", _n(x.request_throughput, ",.3f"),
                      _n(x.output_throughput), f"{_n(x.ttft_p50_ms, ',.0f')} ms", f"{_n(x.tpot_p50_ms)} ms",
                      _n(x.tokens_per_user), _n(x.cost_per_million_output_tokens, ",.3f"))
        c.print(p)
        if report.price_per_device_hour is not None:
            c.print(f"[dim]price: {report.price_per_device_hour:g} USD per device-hour ({report.price_source})[/]")
    for note in report.notes:
        c.print(f"[dim]note: {note}[/]")


def simulated(summary: Any) -> None:
    c = console()
    c.print(f"[bold]simulated[/] {summary.cells_complete} cells ({summary.cells_infeasible} infeasible) -> "
            f"{summary.path}")
    t = Table()
    for col in ("cell", "req/s", "output tok/s", "p50 TTFT ms", "p50 TPOT ms", "KV peak", "preempted"):
        t.add_column(col, justify="right")
    for cell in summary.cells[:40]:
        m = cell.metrics
        t.add_row(cell.id, _n(m.request_throughput, ",.3f"), _n(m.output_throughput), _n(m.ttft.p50, ",.0f"),
                  _n(m.tpot.p50), _n(cell.server.get("kv_cache_usage_peak"), ".0%"),
                  str(cell.server.get("preemptions", "")))
    c.print(t)
    if len(summary.cells) > 40:
        c.print(f"[dim]... {len(summary.cells) - 40} more cells in {summary.path}/cells.csv[/]")
    c.print(f"[dim]open it like a measured run: inferctl runs show {summary.run_id}[/]")


def _err_style(pct: float | None) -> str:
    if pct is None:
        return "dim"
    a = abs(pct)
    return "green" if a < 10 else "yellow" if a < 25 else "red"


def calibration(report: Any) -> None:
    c = console()
    c.print(f"[bold]calibrated[/] {report.accelerator} on {report.run_id} ({report.cells_used} cells)")
    t = _kv()
    for k, v in report.params.model_dump().items():
        t.add_row(k, f"{v:.4g}")
    c.print(t)
    e = Table(title="Error of the fitted model (MAPE; median)", title_justify="left", title_style="bold")
    for col in ("metric", "MAPE", "median |error|", "before fit (MAPE)"):
        e.add_column(col, justify="right")
    for name, m in report.errors.items():
        e.add_row(name, f"{m.mape:.1f}%", f"{m.median_abs:.1f}%", f"{report.prior_errors[name].mape:.1f}%")
    c.print(e)
    h = Table(title="Per-cell error, % (predicted vs measured)", title_justify="left", title_style="bold")
    for col in ("cell", "req/s", "output tok/s", "p50 TTFT", "p50 TPOT"):
        h.add_column(col, justify="right")
    for cell in report.cells:
        h.add_row(cell.cell, *[Text(_n(cell.errors.get(k), "+.1f"), style=_err_style(cell.errors.get(k)))
                               for k in ("request_throughput", "output_throughput", "ttft_p50", "tpot_p50")])
    c.print(h)
    c.print(f"[dim]parameters: {report.params_path}   heatmap: {report.heatmap_path}[/]")


def corpus_calibration(report: Any) -> None:
    c = console()
    for fit in report.accelerators:
        c.print(f"[bold]calibrated[/] {fit.accelerator} on {len(fit.entries)} corpus entries from "
                f"{len(fit.sources)} source(s)" + (f", {len(fit.skipped)} skipped" if fit.skipped else ""))
        t = _kv()
        for k, v in fit.params.model_dump().items():
            t.add_row(k, f"{v:.4g}  [dim](prior {getattr(fit.prior, k):.4g})[/]")
        c.print(t)
        e = Table(title="In-sample error (median |error|)", title_justify="left", title_style="bold")
        for col in ("metric", "fitted", "prior"):
            e.add_column(col, justify="right")
        for name, m in fit.errors.items():
            p = fit.prior_errors.get(name)
            e.add_row(name, f"{m.median_abs:.1f}%", f"{p.median_abs:.1f}%" if p else "-")
        c.print(e)
        for s in fit.skipped:
            c.print(f"[dim]skipped {s['entry']}: {s['reason']}[/]")
        if fit.params_path:
            c.print(f"[dim]parameters: {fit.params_path}[/]")
    for name, why in report.unusable.items():
        c.print(f"[yellow]{name}[/]: none of its {len(why)} entries can be simulated ({why[0]['reason']})")
    c.print(f"[dim]{report.note}[/]")
