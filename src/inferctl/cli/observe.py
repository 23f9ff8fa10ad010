"""Read-only commands on any endpoint: status, health, models, metrics, memory, query."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from inferctl.cli import render
from inferctl.cli.common import (
    JsonOpt,
    ModelOpt,
    TargetOpt,
    TokenEnvOpt,
    UrlOpt,
    console,
    emit,
    fail,
    run,
)

if TYPE_CHECKING:
    from inferctl.config import Target


def _target(target: str | None, url: str | None, model: str | None = None, token_env: str | None = None) -> Target:
    from inferctl.ops.targets import resolve_target  # config loads pydantic-settings: not on the --help path

    return run(lambda: resolve_target(target, url, model=model, token_env=token_env))


def status(
    target: TargetOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    token_env: TokenEnvOpt = None,
    interval: Annotated[
        float, typer.Option(help="Seconds between two scrapes when there is no recent previous scrape.")
    ] = 1.0,
    as_json: JsonOpt = False,
) -> None:
    """One screen: reachable, healthy, served models, version, load, KV cache, throughput."""
    from inferctl.ops.status import get_status

    t = _target(target, url, model, token_env)
    report = run(lambda: get_status(t, interval=interval))
    emit(report, as_json, render.status)
    if not report.healthy:
        raise typer.Exit(1)


def health(
    target: TargetOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    token_env: TokenEnvOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A real completion round trip with its latency; exits non-zero when unhealthy."""
    from inferctl.ops.health import check_health

    t = _target(target, url, model, token_env)
    report = run(lambda: check_health(t))
    emit(report, as_json, render.health)
    if not report.healthy:
        raise typer.Exit(1)


def models(
    target: TargetOpt = None,
    url: UrlOpt = None,
    token_env: TokenEnvOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Served models and the engine configuration visible from outside."""
    from inferctl.ops.models import list_models

    t = _target(target, url, None, token_env)
    emit(run(lambda: list_models(t)), as_json, render.models)


def metrics(
    target: TargetOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    token_env: TokenEnvOpt = None,
    raw: Annotated[bool, typer.Option("--raw", help="Print the Prometheus exposition text as served.")] = False,
    watch: Annotated[
        float | None,
        typer.Option("--watch", help="Refresh every SECONDS with live rates (Ctrl-C stops).", show_default=False),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The parsed /metrics summary (queue, KV cache, latencies, spec decode)."""
    from inferctl.ops import metrics as ops

    t = _target(target, url, model, token_env)
    if raw:
        sys.stdout.write(run(lambda: ops.raw_metrics(t)))
        return
    if watch is not None:
        if watch <= 0:
            raise fail("--watch needs a positive number of seconds.", 2)
        run(lambda: _watch(t, watch, as_json))
        return
    emit(run(lambda: ops.get_metrics(t)), as_json, render.metrics)


async def _watch(t: Target, interval: float, as_json: bool) -> None:
    from rich.live import Live

    from inferctl.ops.metrics import watch_metrics

    if as_json:  # one JSON document per line, for piping
        async for report in watch_metrics(t, interval):
            sys.stdout.write(report.model_dump_json() + "\n")
            sys.stdout.flush()
        return
    with Live(console=console(), refresh_per_second=4) as live:
        async for report in watch_metrics(t, interval):
            live.update(render.metrics_renderable(report))


def memory(
    target: TargetOpt = None,
    url: UrlOpt = None,
    token_env: TokenEnvOpt = None,
    log: Annotated[
        Path | None, typer.Option("--log", help="A vLLM log file to read (default: the local engine's own log).",
                                  show_default=False)
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The KV-cache / memory layout from the engine's startup log."""
    from inferctl.ops.memory import memory_layout

    t = None if log is not None and target is None and url is None else _target(target, url, None, token_env)
    emit(run(lambda: memory_layout(t, log_path=log)), as_json, render.memory)


def query(
    prompt: Annotated[str, typer.Argument(help="What to ask. Use '-' to read it from stdin.")],
    target: TargetOpt = None,
    url: UrlOpt = None,
    model: ModelOpt = None,
    token_env: TokenEnvOpt = None,
    max_tokens: Annotated[int, typer.Option("--max-tokens", min=1, help="Most tokens to generate.")] = 256,
    system: Annotated[str | None, typer.Option(help="A system prompt.", show_default=False)] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.", show_default=False)] = None,
    completion: Annotated[
        bool, typer.Option("--completion", help="Use /v1/completions (raw prompt) instead of chat.")
    ] = False,
    stats: Annotated[bool, typer.Option("--stats", help="Show TTFT, TPOT, tokens/s and token counts.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Ask the served model; streams the answer, then (with --stats) its timing."""
    from inferctl.ops.query import ask

    if prompt == "-":
        prompt = sys.stdin.read()
    if not prompt.strip():
        raise fail("The prompt is empty.", 2)
    t = _target(target, url, model, token_env)

    def show(piece: str) -> None:
        sys.stdout.write(piece)
        sys.stdout.flush()

    result = run(lambda: ask(t, prompt, max_tokens=max_tokens, system=system, temperature=temperature,
                             completion_api=completion, on_delta=None if as_json else show))
    if as_json:
        emit(result, True, render.query_stats)
        return
    sys.stdout.write("\n")
    if stats:
        render.query_stats(result)
    elif result.note:
        render.query_note(result)


def register(app: typer.Typer) -> None:
    for fn in (status, health, models, metrics, memory, query):
        app.command()(fn)
