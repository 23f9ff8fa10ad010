"""What every command shares: the target flags, --json, and turning errors into one line.

A command body is: parse flags -> call one use case in ``inferctl.ops`` -> ``emit`` the result.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from inferctl import params as P
from inferctl.cli.options import option
from inferctl.errors import InferctlError

T = TypeVar("T")

TargetOpt = Annotated[
    str | None,
    typer.Option("--target", "-t", help="Named target from the config file (default: local).",
                 show_default=False),
]
UrlOpt = Annotated[
    str | None,
    typer.Option("--url", help="Base URL of any OpenAI-compatible vLLM server (overrides --target).",
                 show_default=False),
]
ModelOpt = option(P.SERVED_MODEL, show_default=False)
TokenEnvOpt = Annotated[
    str | None,
    typer.Option("--token-env", help="Environment variable holding a bearer token for --url.",
                 show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON (stable shape).")]


def debug_enabled() -> bool:
    return os.environ.get("INFERCTL_DEBUG", "") not in ("", "0")


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one line to stderr and return the Exit to raise.

    The message is data, never markup (it may quote a server's reply or a user's argument), and any
    URL in it is shown without credentials.
    """
    from rich.console import Console
    from rich.text import Text

    from inferctl.redact import redact_text

    line = Text.assemble(("error:", "bold red"), " ", redact_text(message))
    Console(stderr=True, highlight=False, soft_wrap=True, emoji=False).print(line)
    return typer.Exit(code)


def run(fn: Callable[[], Awaitable[T]] | Callable[[], T]) -> T:
    """Run a use case (sync or async); expected failures become one line and a non-zero exit."""
    import asyncio
    import inspect

    try:
        result = fn()
        if inspect.isawaitable(result):
            result = asyncio.run(result)  # type: ignore[arg-type]
        return result  # type: ignore[return-value]
    except InferctlError as exc:
        if debug_enabled():
            raise
        raise fail(str(exc), getattr(exc, "exit_code", 1)) from None
    except KeyboardInterrupt:
        raise fail("interrupted", 130) from None


def emit(result: Any, as_json: bool, render: Callable[[Any], None]) -> None:
    """Print a result: JSON (the pydantic model's dump) or the Rich rendering."""
    if as_json:
        from pydantic import BaseModel  # not at import: `inferctl --help` stays light

        if isinstance(result, BaseModel):
            sys.stdout.write(result.model_dump_json(indent=2) + "\n")
        else:
            sys.stdout.write(json.dumps(result, indent=2, default=str) + "\n")
        return
    render(result)


def console():
    """The stdout console. It never parses markup or emoji codes: what it prints is data (model ids,
    server replies, log lines, file names), so ``[/]x`` must print as ``[/]x``, not raise MarkupError,
    and ``[bold]evil`` must not turn bold. Style comes from ``styled`` (or ``Text``) only."""
    from rich.console import Console

    return Console(highlight=False, markup=False, emoji=False)


def styled(template: str, *values: object):
    """A Rich Text from our own markup, each ``{}`` in ``template`` filled with a value shown verbatim.

    ``styled("[bold]run[/] {} model {}", run_id, model)``: the template is trusted (written here),
    the values are escaped, so nothing a server, log, file or user said can become markup.
    """
    from rich.markup import escape
    from rich.text import Text

    return Text.from_markup(template.format(*(escape(str(v)) for v in values)), emoji=False)
