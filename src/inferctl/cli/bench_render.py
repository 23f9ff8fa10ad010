"""Rich faces of the benchmark: live progress while a sweep runs, tables of cells afterwards."""

from __future__ import annotations

import time
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from inferctl.bench.loadgen import LiveStats
from inferctl.bench.spec import CellSpec
from inferctl.bench.store import CellResult, RunMeta


def _ms(v: float | None) -> str:
    return "—" if v is None else f"{v:,.1f}"


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
        self.console.print(f"[bold]run[/] {meta.run_id}  model {meta.model}  vLLM {meta.vllm_version or '?'}  "
                           f"max_model_len {meta.max_model_len}")
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
            line = (f"{result.id:>18}  {m.ok}/{m.requests} ok  {m.request_throughput:.2f} req/s  "
                    f"{m.output_throughput:.1f} tok/s  TTFT p50 {_ms(m.ttft.p50)} ms  TPOT p50 {_ms(m.tpot.p50)} ms")
        else:
            line = f"{result.id:>18}  {result.status}: {result.reason}"
        self.progress.console.print(line, highlight=False)

    def note(self, text: str) -> None:
        self.progress.console.print(f"[yellow]note:[/] {text}", highlight=False)

    def close(self) -> None:
        if self.started:
            self.progress.live_stats = None
            self.progress.stop()
            self.started = False


def cells_table(cells: list[CellResult], title: str | None = None) -> Table:
    t = Table(title=title, title_justify="left")
    for col in ("cell", "status", "ok/req", "req/s", "out tok/s", "TTFT p50", "TTFT p95", "TPOT p50", "ITL p99",
                "E2E p50", "conc", "KV peak", "client"):
        t.add_column(col, justify="left" if col in ("cell", "status") else "right")
    for c in cells:
        m = c.metrics
        kv = c.server.get("kv_cache_usage_peak")
        t.add_row(
            c.id, c.status, f"{m.ok}/{m.requests}", f"{m.request_throughput:.2f}", f"{m.output_throughput:.1f}",
            _ms(m.ttft.p50), _ms(m.ttft.p95), _ms(m.tpot.p50), _ms(m.itl.p99), _ms(m.e2e.p50),
            "—" if c.client.achieved_concurrency is None else f"{c.client.achieved_concurrency:.1f}",
            "—" if kv is None else f"{kv:.0%}", "[red]bound[/]" if c.client.client_bound else "ok",
        )
    return t


def summary(s: Any) -> None:
    from inferctl.cli.common import console

    out = console()
    out.print(cells_table(s.cells, title=f"{s.run_id} ({s.status})"))
    out.print(f"{s.cells_complete} complete, {s.cells_infeasible} infeasible, {s.cells_skipped} skipped, "
              f"{s.cells_aborted} aborted of {s.cells_total} cells")
    if s.client_bound_cells:
        out.print(f"[yellow]client-bound cells:[/] {', '.join(s.client_bound_cells)} (see runs show)")
    out.print(f"run directory: {s.path}")
