"""Rich renderings of the use cases' results. Presentation only: no decisions about vLLM here."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inferctl.cli.common import console, styled
from inferctl.cli.tables import keep_whole


def _num(value: float | None, fmt: str = ",.0f", unit: str = "") -> str:
    if value is None:
        return "—"
    return f"{value:{fmt}}{unit}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} ms"


def _kv_table(title: str | None = None) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False, title=title, title_justify="left",
                  title_style="bold")
    table.add_column(style="dim", no_wrap=True)
    table.add_column()
    return table


def _ok(flag: bool, yes: str = "yes", no: str = "no") -> Text:
    return Text(yes, style="bold green") if flag else Text(no, style="bold red")


def status(report: Any) -> None:
    c = console()
    t = _kv_table()
    t.add_row("target", f"{report.target}  {report.url}")
    t.add_row("reachable", _ok(report.reachable))
    t.add_row("healthy", _ok(report.healthy, "yes", "NO"))
    if report.health_ms is not None:
        t.add_row("/health", _ms(report.health_ms))
    if report.version:
        t.add_row("vLLM", report.version)
    for m in report.models:
        t.add_row("model", f"{m.id}  (max_model_len {_num(m.max_model_len)}, from {m.root or '?'})")
    load = report.load
    if load is not None:
        t.add_row("requests", f"{_num(load.requests_running)} running, {_num(load.requests_waiting)} waiting")
        t.add_row("KV cache", f"{_pct(load.kv_cache_usage)} used")
        t.add_row("prefix cache", f"{_pct(load.prefix_cache_hit_rate)} hit rate")
        if load.interval_seconds is not None:
            t.add_row(
                "throughput",
                f"{_num(load.prompt_tokens_per_s, ',.1f')} prompt tok/s, "
                f"{_num(load.generation_tokens_per_s, ',.1f')} output tok/s "
                f"(over {load.interval_seconds:.1f} s)",
            )
        t.add_row("preemptions", _num(load.preemptions_total))
        if load.spec_decode_acceptance_rate is not None:
            t.add_row("spec decode", f"{_pct(load.spec_decode_acceptance_rate)} accepted, "
                      f"{_num(load.spec_decode_mean_acceptance_length, '.2f')} tokens/step")
    if report.not_exposed:
        t.add_row("not exposed", ", ".join(report.not_exposed) + "  (not vLLM: no load, KV or version figures)")
    c.print(t)
    if report.problem:
        c.print(styled("[bold red]problem:[/] {}", report.problem))


def health(report: Any) -> None:
    c = console()
    t = _kv_table()
    t.add_row("target", f"{report.target}  {report.url}")
    t.add_row("healthy", _ok(report.healthy, "yes", "NO"))
    if report.model:
        t.add_row("model", report.model)
    t.add_row("/health", _ms(report.health_endpoint_ms))
    if report.completion_ms is not None:
        t.add_row("completion", f"{_ms(report.completion_ms)} ({report.completion_tokens} tokens, "
                  f"TTFT {_ms(report.ttft_ms)})")
    if report.reply is not None:
        t.add_row("reply", repr(report.reply[:80]))
    c.print(t)
    if report.problem:
        c.print(styled("[bold red]problem:[/] {}", report.problem))


def models(report: Any) -> None:
    c = console()
    table = Table(title=f"{report.target}  {report.url}" + (f"  (vLLM {report.version})" if report.version else ""),
                  title_justify="left")
    for col in ("model", "max_model_len", "checkpoint", "owned by"):
        table.add_column(col)
    for m in report.models:
        table.add_row(m.id, _num(m.max_model_len), m.root or "—", m.owned_by or "—")
    c.print(keep_whole(table, ["model", "checkpoint"]))
    cc = report.cache_config
    if cc is not None:
        t = _kv_table("engine (cache_config_info)")
        t.add_row("block size", _num(cc.block_size))
        t.add_row("KV cache dtype", cc.cache_dtype or "—")
        t.add_row("memory utilization", _num(cc.gpu_memory_utilization, ".2f"))
        t.add_row("prefix caching", "on" if cc.enable_prefix_caching else "off")
        t.add_row("KV cache size", f"{_num(cc.kv_cache_size_tokens)} tokens")
        t.add_row("max concurrency", f"{_num(cc.kv_cache_max_concurrency, ',.2f')}x at max_model_len")
        if cc.kv_cache_memory_bytes:
            t.add_row("KV cache memory", f"{cc.kv_cache_memory_bytes / 2**30:.2f} GiB")
        c.print(t)
    c.print(f"speculative decoding: {'on' if report.speculative_decoding else 'off'}")
    if report.engine_args:
        c.print(Text("engine: " + " ".join(report.engine_args), style="dim"))


def _hist_row(table: Table, name: str, h: Any) -> None:
    if h is None or not h.count:
        table.add_row(name, "—", "—", "—", "—", "—")
        return
    ms = (lambda v: "—" if v is None else f"{v * 1000:,.1f}")  # noqa: E731
    table.add_row(name, f"{h.count:,.0f}", ms(h.mean), ms(h.p50), ms(h.p90), ms(h.p99))


def metrics_renderable(report: Any) -> Group:
    s = report.snapshot
    r = report.rates
    t = _kv_table(f"{report.target}  {report.url}")
    t.add_row("requests", f"{_num(s.requests_running)} running, {_num(s.requests_waiting)} waiting"
              + (f" ({', '.join(f'{k} {v:.0f}' for k, v in s.requests_waiting_by_reason.items())})"
                 if s.requests_waiting_by_reason else ""))
    t.add_row("KV cache", f"{_pct(s.kv_cache_usage)} used")
    t.add_row("prefix cache", f"{_pct(s.prefix_cache_hit_rate)} hit rate "
              f"({_num(s.prefix_cache_hits)} / {_num(s.prefix_cache_queries)} tokens)")
    t.add_row("tokens", f"{_num(s.prompt_tokens)} prompt, {_num(s.generation_tokens)} generated")
    t.add_row("finished", ", ".join(f"{k} {v:,.0f}" for k, v in s.finished_by_reason.items()) or "—")
    t.add_row("preemptions", _num(s.preemptions))
    if r is not None:
        t.add_row("rates", f"{_num(r.prompt_tokens_per_s, ',.1f')} prompt tok/s, "
                  f"{_num(r.generation_tokens_per_s, ',.1f')} output tok/s, "
                  f"{_num(r.requests_finished_per_s, ',.2f')} req/s over {r.interval_seconds:.1f} s")
    if s.spec_decode is not None:
        sd = s.spec_decode
        t.add_row("spec decode", f"{_pct(sd.acceptance_rate)} of {_num(sd.draft_tokens)} draft tokens accepted, "
                  f"{_num(sd.mean_acceptance_length, '.2f')} tokens/step")
        if sd.per_position_acceptance:
            t.add_row("per position", "  ".join(f"{p:.2f}" for p in sd.per_position_acceptance))
    lat = Table(title="latency (server histograms, ms; percentiles estimated from buckets)", title_justify="left")
    for col in ("", "count", "mean", "p50", "p90", "p99"):
        lat.add_column(col, justify="right" if col else "left")
    src = r if r is not None else s
    for name in ("ttft", "itl", "tpot", "e2e", "queue", "prefill", "decode"):
        _hist_row(lat, name, getattr(src, name, None))
    return Group(t, lat)


def metrics(report: Any) -> None:
    console().print(metrics_renderable(report))


def memory(report: Any) -> None:
    c = console()
    lay = report.layout
    t = _kv_table(f"memory layout — {report.source}")
    gib = (lambda v: "—" if v is None else f"{v:,.2f} GiB")  # noqa: E731
    sec = (lambda v: "—" if v is None else f"{v:,.2f} s")  # noqa: E731
    if lay is not None and lay.found_any:
        rows = [
            ("device", lay.device_type),
            ("model", lay.model),
            ("architecture", lay.architecture),
            ("weights dtype", lay.dtype),
            ("max model len", _num(lay.max_model_len) if lay.max_model_len else None),
            ("weights in memory", f"{gib(lay.model_load_memory_gib)} (loaded in {sec(lay.model_load_seconds)})"
             if lay.model_load_memory_gib is not None else None),
            ("memory budget", f"{gib(lay.requested_memory_gib)} (utilization {lay.gpu_memory_utilization:g})"
             if lay.requested_memory_gib is not None and lay.gpu_memory_utilization is not None else None),
            ("profiled reserve", f"activation peak {gib(lay.torch_peak_increase_gib)}, non-torch "
             f"{gib(lay.non_torch_increase_gib)}, non-KV total {gib(lay.non_kv_cache_memory_gib)}"
             if lay.torch_peak_increase_gib is not None else None),
            ("CUDA graph estimate", gib(lay.graph_memory_estimate_gib)
             if lay.graph_memory_estimate_gib is not None else None),
            ("KV cache memory", gib(lay.kv_cache_memory_gib) if lay.kv_cache_memory_gib is not None else None),
            ("KV cache dtype", lay.kv_cache_dtype),
            ("block size", _num(lay.block_size) if lay.block_size else None),
            ("KV cache size", f"{_num(lay.kv_cache_tokens)} tokens" if lay.kv_cache_tokens is not None else None),
            ("max concurrency", f"{lay.max_concurrency:,.2f}x at {_num(lay.max_concurrency_tokens_per_request)} "
             "tokens per request" if lay.max_concurrency is not None else None),
            ("graph capture", f"{sec(lay.graph_capture_seconds)}, {gib(lay.graph_capture_memory_gib)}"
             if lay.graph_capture_seconds is not None else None),
            ("torch.compile", sec(lay.torch_compile_seconds) if lay.torch_compile_seconds is not None else None),
            ("engine init", sec(lay.engine_init_seconds) if lay.engine_init_seconds is not None else None),
        ]
        if lay.tpu_memory is not None:
            tm = lay.tpu_memory
            rows.append(("HBM", f"{gib(tm.total_hbm_used_gb)} used of {gib(tm.total_hbm_limit_cap_gb)} usable "
                         f"({gib(tm.total_hbm_limit_gb)} total), {gib(tm.total_hbm_avail_gb)} left for KV"))
        for label, value in rows:
            if value is not None:
                t.add_row(label, str(value))
    cc = report.server_cache_config
    if cc is not None and cc.kv_cache_size_tokens is not None:
        agree = {True: " — matches the log", False: " — DIFFERS from the log", None: ""}[report.kv_cache_tokens_agree]
        t.add_row("server says", f"{_num(cc.kv_cache_size_tokens)} KV tokens, "
                  f"{_num(cc.kv_cache_max_concurrency, ',.2f')}x max concurrency{agree}")
    c.print(t)
    if report.note:
        c.print(styled("[yellow]note:[/] {}", report.note))


def query_stats(result: Any) -> None:
    t = _kv_table("stats")
    t.add_row("model", result.model)
    t.add_row("TTFT", _ms(result.ttft_ms))
    t.add_row("TPOT", _ms(result.tpot_ms))
    t.add_row("total time", _ms(result.e2e_ms))
    t.add_row("output tokens/s", f"{_num(result.output_tokens_per_s, ',.1f')} "
              f"(decode {_num(result.decode_tokens_per_s, ',.1f')})")
    t.add_row("tokens", f"{_num(result.prompt_tokens)} prompt, {_num(result.completion_tokens)} completion "
              "(server usage)")
    t.add_row("finish reason", result.finish_reason or "—")
    console().print(t)
    query_note(result)


def query_note(result: Any) -> None:
    """Why an answer could not be timed (tokens without text), when it could not."""
    if getattr(result, "note", None):
        console().print(Text(f"note: {result.note}", style="yellow"))
