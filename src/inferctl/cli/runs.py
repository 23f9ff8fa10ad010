"""`inferctl runs list|show|export`: the run directories benchmarks leave behind."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from inferctl.cli.common import JsonOpt, console, emit, run, styled

app = typer.Typer(help="List, show and export benchmark runs.", no_args_is_help=True)

RunsDirOpt = Annotated[str | None, typer.Option("--runs-dir", help="Runs root (default: $INFERCTL_RUNS_DIR "
                                                "or the data dir's runs/).")]
RunArg = Annotated[str, typer.Argument(help="Run id, id prefix, path, or 'latest'.")]


@app.command("list")
def list_(runs_dir: RunsDirOpt = None, as_json: JsonOpt = False) -> None:
    """Every run, oldest first."""
    from rich.table import Table

    from inferctl.cli.tables import keep_whole
    from inferctl.ops import bench as ops

    result = run(lambda: ops.list_all(runs_dir))

    def render(r) -> None:
        t = Table(title=f"runs in {r.root}", title_justify="left")
        for col in ("run", "source", "status", "target", "model", "started", "cells"):
            t.add_column(col)
        for x in r.runs:
            started = time.strftime("%Y-%m-%d %H:%M", time.localtime(x.started_at)) if x.started_at else "—"
            t.add_row(x.run_id, x.source, x.status, x.target or "—", x.model or "—", started,
                      f"{x.cells_done}/{x.cells_total if x.cells_total is not None else '?'}")
        out = console()
        out.print(keep_whole(t, ["run", "target", "model"]))
        for x in r.runs:
            if x.problem:
                out.print(styled("[yellow]warning:[/] {}", x.problem))

    emit(result, as_json, render)


@app.command("show")
def show(ref: RunArg, runs_dir: RunsDirOpt = None, as_json: JsonOpt = False) -> None:
    """A run's metadata and its cells."""
    from inferctl.cli.bench_render import cells_table
    from inferctl.ops import bench as ops

    detail = run(lambda: ops.show(ref, runs_dir))

    def render(d) -> None:
        m = d.meta
        out = console()
        out.print(styled("[bold]{}[/]  {}, {}  target {} ({})", m.run_id, m.source, m.status, m.target.get("name"),
                         m.target.get("url")))
        out.print(f"model {m.model}  vLLM {m.vllm_version or '?'}  max_model_len {m.max_model_len}  "
                  f"inferctl {m.inferctl_version}")
        if m.workload.get("chat_template") is False:
            out.print(styled("[yellow]no chat template:[/] {}; prefill of chat prompts was not calibrated (api {})",
                             m.workload.get("chat_template_error") or "tokenize failed", m.workload.get("api")))
        out.print(cells_table(d.cells))
        for c in d.cells:
            if c.client.client_bound:
                out.print(styled("[yellow]{} client-bound:[/] {}", c.id, "; ".join(c.client.reasons)))
            if c.metrics.first_errors:
                out.print(styled("[red]{} errors:[/] {}", c.id, " | ".join(c.metrics.first_errors)))
        out.print(f"path: {d.path}")

    emit(detail, as_json, render)


@app.command("export")
def export(
    ref: RunArg,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="seed-csv (the seed's columns), csv or jsonl.")
    ] = "seed-csv",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to a file instead of stdout.")] = None,
    runs_dir: RunsDirOpt = None,
) -> None:
    """Export a run: the seed system's CSV columns by default, so old results line up."""
    from inferctl.ops import bench as ops

    text = run(lambda: ops.export(ref, fmt, runs_dir))
    if output is None:
        sys.stdout.write(text)
    else:
        output.write_text(text, encoding="utf-8")


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="runs")
