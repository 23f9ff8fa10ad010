"""Rich faces of the benchmark: live progress while a sweep runs, tables of cells afterwards."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console, RenderableType
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from inferctl.bench.loadgen import LiveStats
from inferctl.bench.spec import CellSpec
from inferctl.bench.store import CellResult, RunMeta
from inferctl.cli.common import styled


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


def _short(v: float | None) -> str:
    """A compact number for narrow tables: 1 decimal below 100, integers (with separators) above."""
    if v is None:
        return "—"
    return f"{v:.1f}" if abs(v) < 100 else f"{v:,.0f}"


_STATUS_SHORT = {"complete": "ok", "failed": "FAIL", "infeasible": "infeas", "skipped": "skip",
                 "aborted": "abort"}
NARROW = 110  # below this many columns the cells table switches to its compact layout


class _LiveProgress(Progress):
    """A Progress whose cell bar reads the load generator's counters at every refresh."""

    live_stats: LiveStats | None = None
    cell_task: TaskID | None = None

    def get_renderables(self):
        live, task = self.live_stats, self.cell_task
        if live is not None and task is not None and task in self._tasks:
            now = time.perf_counter()
            p50 = live.p50_ttft_ms()
            self.update(task, completed=live.done, total=live.planned,
                        stats=f"{live.req_per_s(now):6.1f} req/s  p50 TTFT {_ms(p50)} ms  errors {live.errors}")
        yield from super().get_renderables()


class ProgressReporter:
    """Sweep bar (cells) + cell bar (requests) with live req/s, p50 TTFT and errors."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.progress = _LiveProgress(
            TextColumn("{task.description}", style="bold"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("{task.fields[stats]}"), console=console, refresh_per_second=4,
            transient=False,
        )
        self.sweep_task: TaskID | None = None
        self.started = False

    def sweep_start(self, meta: RunMeta, cells: list[CellSpec], done: int) -> None:
        self.console.print(styled("[bold]run[/] {}  model {}  vLLM {}  max_model_len {}", meta.run_id, meta.model,
                                  meta.vllm_version or "?", meta.max_model_len))
        self.progress.start()
        self.started = True
        self.sweep_task = self.progress.add_task("sweep", total=len(cells), completed=done, stats="")

    def cell_start(self, cell: CellSpec, live: LiveStats) -> None:
        old, self.progress.cell_task = self.progress.cell_task, None
        if old is not None:
            self.progress.remove_task(old)
        self.progress.live_stats = live
        self.progress.cell_task = self.progress.add_task(cell.id, total=live.planned, stats="")

    def cell_end(self, result: CellResult) -> None:
        if self.sweep_task is not None:
            self.progress.advance(self.sweep_task)
        m = result.metrics
        if result.status == "complete":
            # Fits 80 columns: "ctx16384-c2048 8192/8192 ok 1,234 req/s 12,345 tok/s TTFT 1,234 TPOT 12.3 ms"
            line = Text(f"{result.id:<14} {m.ok}/{m.requests} ok  {_short(m.request_throughput)} req/s  "
                        f"{_short(m.output_throughput)} tok/s  TTFT {_short(m.ttft.p50)}  TPOT {_short(m.tpot.p50)} ms")
            if result.client.workers > 1:
                line.append(f"  ×{result.client.workers}", style="dim")
        else:
            line = Text(f"{result.id:<14} {result.status}: {result.reason}")
        self.progress.console.print(line, highlight=False)

    def note(self, text: str) -> None:
        self.progress.console.print(styled("[yellow]note:[/] {}", text), highlight=False)

    def close(self) -> None:
        if self.started:
            self.progress.live_stats = None
            self.progress.stop()
            self.started = False


def cells_table(cells: list[CellResult], title: str | None = None, width: int | None = None) -> RenderableType:
    """All cells; below ``NARROW`` columns a compact layout (p50/p95 TTFT, TPOT, E2E; ITL, concurrency and KV
    are left to ``runs show --json``) that fits an 80-column terminal."""
    from inferctl.cli.common import console
    from inferctl.cli.tables import keep_whole

    width = width or console().width
    if width < NARROW:
        return keep_whole(_narrow_table(cells, title), ["cell"], width)
    t = Table(title=title, title_justify="left")
    for col in ("cell", "status", "ok/req", "req/s", "out tok/s", "TTFT p50", "TTFT p95", "TPOT p50", "ITL p99",
                "E2E p50", "conc", "KV peak", "client"):
        t.add_column(col, justify="left" if col in ("cell", "status") else "right", no_wrap=col == "cell")
    for c in cells:
        m = c.metrics
        kv = c.server.get("kv_cache_usage_peak")
        t.add_row(
            c.id, Text.assemble(c.status, (" cache!", "red") if _cached(c) else ""),
            f"{m.ok}/{m.requests}", f"{m.request_throughput:.2f}", f"{m.output_throughput:.1f}",
            _ms(m.ttft.p50), _ms(m.ttft.p95), _ms(m.tpot.p50), _ms(m.itl.p99), _ms(m.e2e.p50),
            "—" if c.client.achieved_concurrency is None else f"{c.client.achieved_concurrency:.1f}",
            "—" if kv is None else f"{kv:.0%}", Text("bound", style="red") if c.client.client_bound else "ok",
        )
    return keep_whole(t, ["cell"], width)


def _cached(c: CellResult) -> bool:
    """The server's prefix cache served far more than the workload shares (bench/cachecheck.py)."""
    return c.prefix_cache is not None and c.prefix_cache.flagged


def _narrow_table(cells: list[CellResult], title: str | None) -> Table:
    from rich import box

    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False,
              caption="ms; cli ! = client-bound (runs show)", caption_justify="left")
    cols = [("cell", "left"), ("st", "left"), ("ok/req", "right"), ("req/s", "right"), ("tok/s", "right"),
            ("TTFT\np50", "right"), ("TTFT\np95", "right"), ("TPOT\np50", "right"), ("E2E\np50", "right"),
            ("cli", "left")]
    for name, justify in cols:
        t.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for c in cells:
        m = c.metrics
        t.add_row(
            c.id, Text("cache!", style="red") if _cached(c) else _STATUS_SHORT.get(c.status, c.status),
            f"{m.ok}/{m.requests}", _short(m.request_throughput),
            _short(m.output_throughput), _short(m.ttft.p50), _short(m.ttft.p95), _short(m.tpot.p50),
            _short(m.e2e.p50), Text("!", style="red") if c.client.client_bound else "",
        )
    return t


def summary(s: Any) -> None:
    from inferctl.cli.common import console

    out = console()
    out.print(cells_table(s.cells, title=f"{s.run_id} ({s.status})"))
    failed = f"{s.cells_failed} failed, " if getattr(s, "cells_failed", 0) else ""
    out.print(f"{s.cells_complete} complete, {failed}{s.cells_infeasible} infeasible, {s.cells_skipped} skipped, "
              f"{s.cells_aborted} aborted of {s.cells_total} cells")
    cached = [c.id for c in s.cells if _cached(c)]
    if cached:
        out.print(styled("[red]cache![/] prefix cache far above the workload's sharing in {}: {}", ", ".join(cached),
                         next(c for c in s.cells if _cached(c)).prefix_cache.text))
    if s.client_bound_cells:
        out.print(styled("[yellow]client-bound cells:[/] {} (see runs show)", ", ".join(s.client_bound_cells)))
    out.print(f"run directory: {s.path}")
