"""The command line: wires each command group's module into one Typer app."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from inferctl import __version__

app = typer.Typer(
    name="inferctl",
    help="Run, watch, query, benchmark, price and plan self-hosted vLLM serving.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"inferctl {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    if debug:
        os.environ["INFERCTL_DEBUG"] = "1"


# Help panels, in the order a user meets them (DESIGN.md, "The journey of a user").
PANELS = {
    "Local engine": ["local"],
    "Observe any endpoint": ["status", "health", "models", "metrics", "memory", "query", "logs", "remediate"],
    "Benchmark and report": ["bench", "runs", "report", "compare", "cost", "import"],
    "Plan before you spend": ["plan", "simulate", "calibrate", "sim"],
    "Google Cloud": ["profiles", "deploy", "describe", "deployments", "scale", "stop", "start", "destroy", "capacity",
                     "secrets", "artifacts"],
    "Agents": ["mcp"],
}


def _register() -> None:
    from inferctl.cli import bench, cloud, deploy, local, logs, mcp, observe, plan, report, runs

    app.add_typer(local.app, name="local")
    observe.register(app)
    logs.register(app)
    bench.register(app)
    runs.register(app)
    report.register(app)
    plan.register(app)
    cloud.register(app)
    deploy.register(app)
    mcp.register(app)
    _group_help()


def _group_help() -> None:
    """Put every command in its help panel and list panels and commands in the journey's order."""
    order = {name: i for i, name in enumerate(n for names in PANELS.values() for n in names)}
    panel_of = {name: panel for panel, names in PANELS.items() for name in names}

    def name_of(info) -> str:
        return info.name or info.callback.__name__.rstrip("_").replace("_", "-")

    for infos in (app.registered_commands, app.registered_groups):
        for info in infos:
            info.rich_help_panel = panel_of.get(name_of(info), "Other")
        infos.sort(key=lambda info: order.get(name_of(info), len(order)))


_register()


def main() -> None:
    app()
