"""`logs`, `logs analyze` and `remediate`: read a target's logs and let its model explain them."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from inferctl.cli.common import JsonOpt, TargetOpt, console, emit, fail, run, styled
from inferctl.cli.deploy import ProjectOpt

logs_app = typer.Typer(help="Logs of a deployment (Cloud Logging) or the local engine (its log file).")

SinceOpt = Annotated[str, typer.Option("--since", help="How far back: 30m, 1h, 2d.")]
LogFileOpt = Annotated[Path | None, typer.Option("--log", help="Read this vLLM log file instead.", show_default=False)]
AskOpt = Annotated[str | None, typer.Option("--ask", show_default=False,
                                            help="Target whose model explains (default: the same target).")]


def _render_logs(result) -> None:
    c = console()
    colour = {"WARNING": "yellow", "ERROR": "red", "CRITICAL": "bold red"}
    for r in result.records:
        style = colour.get(r.severity)
        prefix = f"{r.timestamp or '':26} {r.severity:8} "
        c.print(prefix + r.text, style=style, markup=False, highlight=False, soft_wrap=True)
    c.print(styled("[dim]{} lines from {}[/]", len(result.records), result.location), highlight=False)


@logs_app.callback(invoke_without_command=True)
def logs(
    ctx: typer.Context,
    target: TargetOpt = None,
    since: SinceOpt = "1h",
    severity: Annotated[str | None, typer.Option("--severity", show_default=False,
                                                 help="Minimum severity: WARNING, ERROR, ...")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most lines to show (the newest).")] = 200,
    log: LogFileOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Recent log lines: Cloud Logging for a deployment profile, the log file for the local engine."""
    if ctx.invoked_subcommand is not None:
        return
    from inferctl.ops.logs import fetch_logs

    result = run(lambda: fetch_logs(target, since=since, severity=severity, limit=limit, log_path=log,
                                    project=project))
    emit(result, as_json, _render_logs)


def _render_analysis(a) -> None:
    c = console()
    c.print(styled("[bold]{} log lines[/] from {}", a.lines_read, a.source), highlight=False)
    counts = ", ".join(f"{n} {sev}" for sev, n in sorted(a.issue_counts.items())) or "no warnings or errors"
    c.print(f"Issues: {counts}")
    for issue in a.issues[-15:]:
        c.print(f"  line {issue.line} [{issue.severity}] {issue.message}", markup=False, soft_wrap=True)
    for cause in a.known_causes:
        c.print(styled("[yellow]likely cause:[/] {}", cause))
    if a.summary:
        c.print(styled("\n[bold]Summary by {} on {}:[/]", a.model, a.asked))
        c.print(a.summary, markup=False)
    if a.note:
        c.print(styled("\n[yellow]{}[/]", a.note))


@logs_app.command("analyze")
def analyze(
    target: TargetOpt = None,
    since: SinceOpt = "1h",
    limit: Annotated[int, typer.Option(min=1, help="Most log lines to read.")] = 500,
    log: LogFileOpt = None,
    ask: AskOpt = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Find warnings and errors in the logs and ask the served model to explain the critical ones."""
    from inferctl.ops.diagnose import analyze_logs

    result = run(lambda: analyze_logs(target, since=since, limit=limit, log_path=log, ask_target=ask,
                                      project=project))
    emit(result, as_json, _render_analysis)


def remediate(
    error: Annotated[str, typer.Argument(help="The error text. Use '-' to read it from stdin.")],
    target: TargetOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A short remediation plan for an error, from the served model (plus known causes)."""
    from inferctl.ops.diagnose import remediate as remediate_op

    if error == "-":
        error = sys.stdin.read()
    if not error.strip():
        raise fail("The error text is empty.", 2)

    def render(r) -> None:
        c = console()
        for cause in r.known_causes:
            c.print(styled("[yellow]likely cause:[/] {}", cause))
        if r.plan:
            c.print(styled("\n[bold]Plan by {} on {}:[/]", r.model, r.asked))
            c.print(r.plan, markup=False)
        if r.note:
            c.print(styled("\n[yellow]{}[/]", r.note))

    emit(run(lambda: remediate_op(error, target=target)), as_json, render)


def register(app: typer.Typer) -> None:
    app.add_typer(logs_app, name="logs")
    app.command()(remediate)
