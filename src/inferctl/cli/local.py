"""`inferctl local up|down|status|logs`: a real vLLM engine on this machine."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from inferctl.cli.common import JsonOpt, console, emit, fail, run

app = typer.Typer(
    help="Run a real vLLM engine on this machine (by default the tiny Gemma 4 model on the CPU build).",
    no_args_is_help=True,
)


def _render_status(result) -> None:
    from rich.table import Table

    c = console()
    style = {"running": "bold green", "starting": "bold yellow", "dead": "bold red"}.get(result.status, "dim")
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="dim", no_wrap=True)
    t.add_column()
    t.add_row("status", f"[{style}]{result.status}[/]")
    if result.status == "stopped":
        c.print(t)
        c.print("Start one with [bold]inferctl local up[/].")
        return
    t.add_row("url", result.url or "")
    t.add_row("model", f"{result.model}  ({result.model_dir})")
    t.add_row("pid", str(result.pid))
    if result.uptime_s is not None:
        t.add_row("uptime", _duration(result.uptime_s))
    if getattr(result, "startup_s", None) is not None:
        t.add_row("startup", f"{result.startup_s:.1f} s")
    t.add_row("log", result.log_path or "")
    c.print(t)
    if result.status == "dead":
        c.print("The recorded process is gone; [bold]inferctl local logs[/] shows why, "
                "[bold]inferctl local up[/] starts a new one.")


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else (f"{m}m{s:02d}s" if m else f"{s}s")


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def up(
    ctx: typer.Context,
    model: Annotated[
        Path | None,
        typer.Option("--model", help="Local model directory (default: the tiny Gemma 4 model, built once).",
                     show_default=False),
    ] = None,
    port: Annotated[int | None, typer.Option(help="Port on 127.0.0.1 (default 8321).", show_default=False)] = None,
    served_model_name: Annotated[
        str | None,
        typer.Option(help="Name clients use as `model` (default: tiny-gemma4, or the directory name).",
                     show_default=False),
    ] = None,
    max_model_len: Annotated[
        int | None,
        typer.Option(help="Context length (default: 2048 for the tiny model, the model's own otherwise).",
                     show_default=False),
    ] = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until /health answers 200.")] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for readiness.")] = 600.0,
    as_json: JsonOpt = False,
) -> None:
    """Start the local engine (does nothing if it already runs). Engine flags go after `--`.

    Example: inferctl local up -- --enforce-eager --kv-cache-dtype fp8
    """
    from rich.console import Console
    from rich.markup import escape

    from inferctl.ops import local as ops

    extra = list(ctx.args)
    # The spinner goes to stderr so --json output on stdout stays clean.
    err = Console(stderr=True, highlight=False)
    t0 = time.monotonic()
    with err.status("Starting vLLM…", spinner="dots") as spinner:

        def progress(line: str) -> None:
            width = max(20, err.width - 30)
            shown = line if len(line) <= width else "…" + line[-width:]
            spinner.update(f"Starting vLLM ({time.monotonic() - t0:.0f} s)  [dim]{escape(shown)}[/]")

        result = run(
            lambda: ops.up(
                model,
                port,
                extra,
                wait=wait,
                on_progress=progress,
                served_model_name=served_model_name,
                max_model_len=max_model_len,
                timeout=timeout,
            )
        )
    if not as_json:
        c = console()
        if result.already_running:
            c.print(f"[bold]Already running[/] at {result.url}")
        elif result.status == "running":
            c.print(f"[bold green]Serving[/] at {result.url}  (OpenAI API: {result.url}/v1)")
        else:
            c.print(f"[bold yellow]Starting[/] at {result.url}; check with [bold]inferctl local status[/].")
    emit(result, as_json, _render_status)


@app.command()
def down(
    timeout: Annotated[float, typer.Option(help="Seconds to wait after SIGTERM before SIGKILL.")] = 30.0,
    as_json: JsonOpt = False,
) -> None:
    """Stop the local engine (its whole process group) and forget it."""
    from inferctl.ops import local as ops

    result = run(lambda: ops.down(timeout=timeout))
    emit(result, as_json, lambda r: console().print(r.message))


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Is the local engine running? pid, port, model, uptime and log file."""
    from inferctl.ops import local as ops

    result = run(ops.status)
    emit(result, as_json, _render_status)


@app.command()
def logs(
    lines: Annotated[int, typer.Option("-n", "--lines", help="How many lines from the end.")] = 50,
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing new lines (Ctrl-C stops).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """The last lines of the local engine's log (also after a failed start)."""
    import sys

    from inferctl.ops import local as ops

    result = run(lambda: ops.logs(lines=lines))
    if result.log_path is None:
        raise fail("No local engine log yet; start one with `inferctl local up`.")
    if as_json:
        emit(result, True, lambda r: None)
        return
    for line in result.lines:
        sys.stdout.write(line + "\n")
    sys.stdout.flush()
    if follow:
        _follow(Path(result.log_path))


def _follow(path: Path) -> None:
    import os
    import sys

    from_end = True  # the tail was already printed; a replacement file (a new start) is read whole
    try:
        while True:
            with path.open("rb") as f:
                if from_end:
                    f.seek(0, os.SEEK_END)
                inode = os.fstat(f.fileno()).st_ino
                while True:
                    chunk = f.readline()
                    if chunk:
                        sys.stdout.write(chunk.decode("utf-8", errors="replace"))
                        sys.stdout.flush()
                        continue
                    time.sleep(0.5)
                    try:
                        if path.stat().st_ino != inode:
                            break
                    except FileNotFoundError:
                        continue
            from_end = False
    except KeyboardInterrupt:
        raise typer.Exit(0) from None
