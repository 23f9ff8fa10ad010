"""Rich renderings of plan, simulate and calibrate results. Presentation only."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from inferctl.cli.common import console, styled
from inferctl.cli.tables import keep_whole


def _kv() -> Table:
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="dim", no_wrap=True)
    t.add_column()
    return t


def _n(v: float | None, fmt: str = ",.1f") -> str:
    return "—" if v is None else f"{v:{fmt}}"


def provenance(p: Any) -> None:
    """Which speed parameters and config reader a prediction used, and their measured error band."""
    if p is None:
        return
    c = console()
    t = _kv()
    fitted = f" ({p.measurements} measurements)" if p.measurements else ""
    t.add_row("speed parameters", f"{p.speed_params}{fitted}: {p.speed_params_detail}")
    style = "yellow" if p.error_band_method == "not measured" else ""
    t.add_row("measured error", Text(p.error_band_detail if p.error_band else f"not measured: {p.error_band_detail}",
                                     style=style))  # fmt: skip
    t.add_row("model config", f"{p.config_reader}: {p.config_reader_detail}")
    c.print(t)


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
    if report.verdict or m.reason:
        t.add_row("why not", Text(report.verdict or m.reason, style="red"))
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
            c.print(styled("[dim]price: {} USD per device-hour ({})[/]", f"{report.price_per_device_hour:g}",
                           report.price_source))
    provenance(report.provenance)
    for note in report.notes:
        c.print(styled("[dim]note: {}[/]", note))


def simulated(summary: Any) -> None:
    c = console()
    c.print(styled("[bold]simulated[/] {} cells ({} infeasible) -> {}", summary.cells_complete,
                   summary.cells_infeasible, summary.path))
    t = Table()
    for col in ("cell", "req/s", "output tok/s", "p50 TTFT ms", "p50 TPOT ms", "KV peak", "preempted"):
        t.add_column(col, justify="right")
    for cell in summary.cells[:40]:
        m = cell.metrics
        t.add_row(cell.id, _n(m.request_throughput, ",.3f"), _n(m.output_throughput), _n(m.ttft.p50, ",.0f"),
                  _n(m.tpot.p50), _n(cell.server.get("kv_cache_usage_peak"), ".0%"),
                  str(cell.server.get("preemptions", "")))
    c.print(keep_whole(t, ["cell"]))
    if len(summary.cells) > 40:
        c.print(styled("[dim]... {} more cells in {}/cells.csv[/]", len(summary.cells) - 40, summary.path))
    provenance(getattr(summary, "provenance", None))
    c.print(styled("[dim]open it like a measured run: inferctl runs show {}[/]", summary.run_id))


def _err_style(pct: float | None) -> str:
    if pct is None:
        return "dim"
    a = abs(pct)
    return "green" if a < 10 else "yellow" if a < 25 else "red"


def calibration(report: Any) -> None:
    c = console()
    c.print(styled("[bold]calibrated[/] {} on {} ({} cells)", report.accelerator, report.run_id, report.cells_used))
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
    c.print(keep_whole(h, ["cell"]))
    c.print(styled("[dim]parameters: {}   heatmap: {}[/]", report.params_path, report.heatmap_path))


def fleet(result: Any, top: int = 15) -> None:
    """The fleet search: ranked deployments, the top one's flags and profile, counts and notes."""
    c = console()
    c.print(styled("[bold]Workload[/] {}", result.workload))
    n = result.counts
    c.print(Text(f"{n.get('candidates', 0)} candidates: {n.get('simulated', 0)} simulated "
                 f"({n.get('simulations', 0)} simulations), {n.get('pruned', 0)} pruned by bounds, "
                 f"{n.get('not_fitting', 0)} not fitting, {n.get('infeasible', 0)} meeting no SLO at any load, "
                 f"{n.get('unpriced', 0)} without a price; {result.elapsed_s:g} s", style="dim"))
    if result.binding:
        c.print(Text(result.binding, style="bold red"))
    if result.rows:
        t = Table(title="Deployments, cheapest first (USD/month: autoscaled over the traffic shape; always on)",
                  title_justify="left", title_style="bold")
        for col in ("#", "deployment", "machine, tier", "req/s per replica", "replicas on machines", "headroom",
                    "USD/month", "always on", "limited by"):
            t.add_column(col, justify="left" if col in ("deployment", "machine, tier", "limited by") else "right")
        for i, r in enumerate(result.rows[:top], 1):
            c_ = r.candidate
            short = f"{c_.model.removeprefix('gemma-4-')} {c_.quant} {c_.tp}x{c_.accelerator} kv {c_.kv_dtype}" + \
                (" mtp" if c_.mtp else "")
            t.add_row(str(i), short, f"{r.price_key} {r.tier}", f"{r.capacity_rps:,.3g}",
                      f"{r.replicas} on {r.machines}", f"{r.headroom:.0%}", f"{r.monthly:,.0f}",
                      f"{r.monthly_always_on:,.0f}", r.limiting or "—")
        c.print(keep_whole(t, ["deployment"]))
        best = result.rows[0]
        c.print(styled("[bold]Top:[/] {} replica{} of {} on {} x {} ({})", best.replicas,
                       "s" if best.replicas > 1 else "", best.label, best.machines, best.price_key, best.tier))
        c.print(Text(f"  vLLM: {best.vllm_flags}"))
        if result.profile:
            c.print(Text("  deployment profile to create (save as a [profiles.NAME] table or a profile file, edit, "
                         "then `inferctl deploy`):"))
            c.print(Text(result.profile.rstrip(), style="dim"))
    for note in result.notes:
        c.print(Text(f"note: {note}", style="dim"))


def corpus_calibration(report: Any) -> None:
    c = console()
    for fit in report.accelerators:
        c.print(styled("[bold]calibrated[/] {} on {} corpus entries from {} source(s){}", fit.accelerator,
                       len(fit.entries), len(fit.sources), f", {len(fit.skipped)} skipped" if fit.skipped else ""))
        t = _kv()
        for k, v in fit.params.model_dump().items():
            t.add_row(k, Text.assemble(f"{v:.4g}  ", (f"(prior {getattr(fit.prior, k):.4g})", "dim")))
        c.print(t)
        e = Table(title="In-sample error (median |error|)", title_justify="left", title_style="bold")
        for col in ("metric", "fitted", "prior"):
            e.add_column(col, justify="right")
        for name, m in fit.errors.items():
            p = fit.prior_errors.get(name)
            e.add_row(name, f"{m.median_abs:.1f}%", f"{p.median_abs:.1f}%" if p else "-")
        c.print(e)
        for s in fit.skipped:
            c.print(Text(f"skipped {s['entry']}: {s['reason']}", style="dim"))
        if fit.params_path:
            c.print(Text(f"parameters: {fit.params_path}", style="dim"))
    for name, why in report.unusable.items():
        c.print(styled("[yellow]{}[/]: none of its {} entries can be simulated ({})", name, len(why), why[0]["reason"]))
    c.print(Text(report.note, style="dim"))
