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
ModelOpt = Annotated[
    str | None,
    typer.Option("--model", "-m", help="Served model name (default: the first one served).",
                 show_default=False),
]
TokenEnvOpt = Annotated[
    str | None,
    typer.Option("--token-env", help="Environment variable holding a bearer token for --url.",
                 show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON (stable shape).")]


def debug_enabled() -> bool:
    return os.environ.get("INFERCTL_DEBUG", "") not in ("", "0")


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print one line to stderr and return the Exit to raise."""
    from rich.console import Console
    from rich.text import Text

    # The message is text, not markup: "[cloud]" in it must print as "[cloud]".
    Console(stderr=True, highlight=False, soft_wrap=True).print(Text.assemble(("error:", "bold red"), " ", message))
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
    from rich.console import Console

    return Console(highlight=False)
