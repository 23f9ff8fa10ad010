"""What every tool shares: expected errors become ToolError, calls are bounded, results carry a summary.

In mcp 2.3 only a ``ToolError`` message reaches the model; any other exception is masked as "Error
executing tool NAME" and logged with its traceback on stderr. So ``guard`` turns every ``InferctlError``
(the project's "one actionable sentence" errors) into a ``ToolError`` with the same sentence, scrubbed of
anything token-shaped, and bounds the call so no tool holds a client past its timeout.
"""

import functools
import logging
import re
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import anyio
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from inferctl.errors import InferctlError
from inferctl.redact import redact_text

log = logging.getLogger("inferctl.mcp")

# Clients commonly give up on a call after ~60 s; stay well inside that.
TOOL_TIMEOUT_S = 45.0

P = ParamSpec("P")
R = TypeVar("R")

_SECRET_PATTERNS = [
    re.compile(r"hf_[A-Za-z0-9]{8,}"),  # Hugging Face tokens
    re.compile(r"ya29\.[A-Za-z0-9._-]+"),  # Google OAuth access tokens
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"),
    re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+"),  # JWTs (ID tokens)
]


def scrub(text: str) -> str:
    """Replace anything that looks like a credential; error text is written for people, not secrets."""
    text = redact_text(text)  # credentials inside URLs
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.re.groups else "") + "[redacted]", text)
    return text


# The use cases' error sentences are written for the CLI and name its flags; a tool speaks its own argument
# names. A flag becomes the tool's argument of the same name (--price-per-hour -> price_per_hour), or its
# counterpart below; a hint only the CLI can follow is written "(CLI: ...)" at the source and dropped here.
FLAG_ALIASES = {"concurrency": "concurrencies", "context": "contexts", "label": "labels", "slo": "slos",
                "tp": "count", "min": "min_instances", "max": "max_instances", "run": "run_id"}
_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9-]*)(?:/--([a-z][a-z0-9-]*))?")
_CLI_ONLY = re.compile(r"\s*\(CLI: [^()]*\)")


def speak_tool(message: str, params: set[str]) -> str:
    """``message`` with CLI flags rewritten as the tool's argument names, CLI-only hints removed."""

    def name(flag: str) -> str | None:
        for cand in (flag.replace("-", "_"), FLAG_ALIASES.get(flag)):
            if cand in params:
                return cand
        return None

    def sub(m: re.Match) -> str:
        first, second = name(m.group(1)), name(m.group(2)) if m.group(2) else None
        if first and (second or not m.group(2)):
            return first + (f"/{second}" if second else "")
        return m.group(0)

    text = _FLAG.sub(sub, _CLI_ONLY.sub("", message))
    # "--count 4 --tp 4" both map to `count`: say it once.
    return re.sub(r"\b(\w+ \d+) \1\b", r"\1", text)


def guard(timeout: float = TOOL_TIMEOUT_S) -> Callable[[Callable[P, Awaitable[R]]], Callable[P, Awaitable[R]]]:
    """Decorate a tool: InferctlError -> ToolError (same sentence), and a hard time limit."""

    def decorate(fn: Callable[P, Awaitable[R]]) -> Callable[P, Awaitable[R]]:
        import inspect

        params = set(inspect.signature(fn).parameters)

        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                with anyio.fail_after(timeout):
                    return await fn(*args, **kwargs)
            except InferctlError as exc:
                raise ToolError(scrub(speak_tool(str(exc), params))) from None
            except ValidationError as exc:  # arguments that pass the schema but not a model deeper down
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "input"
                raise ToolError(f"Invalid {where}: {first['msg']}.") from None
            except TimeoutError:
                raise ToolError(f"{fn.__name__} did not finish within {timeout:.0f} s and was stopped; try a "
                                "smaller request (fewer tokens, a shorter window) or check the target with "
                                "get_status.") from None

        return wrapper

    return decorate


async def in_thread(fn: Callable[[], R]) -> R:
    """Run blocking work (Google clients, file scans, the simulator) off the event loop.

    Abandoned on cancellation so the call's time limit holds even when the work itself cannot be stopped.
    """
    return await anyio.to_thread.run_sync(fn, abandon_on_cancel=True)


async def in_thread_stoppable(fn: Callable[[Callable[[], None]], R], *, seconds: float, what: str) -> R:
    """Run ``fn(check)`` off the event loop; ``check()`` raises once the call is cancelled or ``seconds`` pass.

    For long CPU work (the simulator) that calls ``check`` as it goes: an abandoned thread cannot be killed,
    so it stops itself, and a timed-out or cancelled call does not keep a core busy after it answered.
    """
    import threading
    import time

    cancelled = threading.Event()
    until = time.monotonic() + seconds

    def check() -> None:
        if cancelled.is_set():
            raise InferctlError(f"{what} was cancelled and stopped.")
        if time.monotonic() > until:
            raise InferctlError(f"{what} did not finish within {seconds:.0f} s and was stopped; ask for a smaller "
                                "grid (fewer or smaller concurrencies and contexts, fewer output_tokens).")

    try:
        return await in_thread(lambda: fn(check))
    finally:
        cancelled.set()


async def resolve(name: str | None, model: str | None = None):
    """A ``target`` argument -> Target: a configured name, 'local', a deployment profile, or an http(s) URL.

    A URL target gets no credentials, so nothing secret is ever sent to an address the model chose.
    Resolving a deployment profile asks Google Cloud where it runs (blocking), hence the thread.
    """
    from inferctl.ops.targets import resolve_target

    name = (name or "").strip() or None
    if name and name.startswith(("http://", "https://")):
        return resolve_target(url=name, model=model)
    return await in_thread(lambda: resolve_target(name, model=model))


def result(model: BaseModel, summary: str) -> CallToolResult:
    """Structured content (the pydantic model) plus a short markdown summary for the model to read.

    The summary replaces the SDK's JSON mirror of the structured content, so the payload is not sent twice;
    the compact JSON (no nulls) follows the summary for clients that ignore structured content.
    """
    compact = model.model_dump_json(exclude_none=True)
    return CallToolResult(
        content=[TextContent(type="text", text=summary.strip()), TextContent(type="text", text=compact)],
        structured_content=model.model_dump(mode="json"),
    )


def fmt(value: Any, unit: str = "", digits: int = 1) -> str:
    """A number for a summary line; '-' when unknown."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}{unit}"
    return f"{value}{unit}"
