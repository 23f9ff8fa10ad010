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


def _register() -> None:
    from inferctl.cli import bench, local, observe, runs

    observe.register(app)
    app.add_typer(local.app, name="local")
    bench.register(app)
    runs.register(app)
    from inferctl.cli import cloud, deploy, logs

    deploy.register(app)
    cloud.register(app)
    logs.register(app)
    from inferctl.cli import plan

    plan.register(app)
    from inferctl.cli import report

    report.register(app)
    from inferctl.cli import mcp

    mcp.register(app)


_register()


def main() -> None:
    app()
