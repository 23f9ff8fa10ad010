"""Who may do what through the MCP server: read-only by default, writes on request, destructive on confirmation.

Three access levels, each tool declares one::

    read         observe only (status, metrics, logs, runs, plans). Always listed.
    write        changes something outside this process: creates cloud resources, stores a secret, starts or
                 stops the local engine, puts benchmark load on an endpoint. Listed only with --allow-write.
    destructive  a write that can lose data or break a running service (destroy, scale). Listed only with
                 --allow-write, and each real (not dry-run) call is confirmed by the user through elicitation.

``deploy`` is a write, not destructive, but it spends money until destroyed, so a real deploy is confirmed
the same way.

Why ``start_benchmark`` is a write: a sweep sends up to thousands of concurrent requests to the target, which
on a production endpoint is an outage; ``query_model`` sends one request and stays read. ``simulate_sweep``
is read: it computes, and writes only a new result directory in inferctl's own store.

The gate is a registration filter (a tool that is not listed cannot be called) and is checked again inside
every write tool (``require``), because annotations are hints and a server is sometimes built by hand.
When the client cannot ask the user (no elicitation capability), ``confirm_fallback`` decides: ``deny``
(default) refuses with a sentence saying how to proceed; ``allow`` proceeds (for unattended automation that
was started with --allow-write on purpose).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

Access = Literal["read", "write", "destructive"]
ConfirmFallback = Literal["deny", "allow"]


@dataclass(frozen=True)
class Policy:
    """What this server instance lets a client do."""

    allow_write: bool = False
    confirm_fallback: ConfirmFallback = "deny"

    def permits(self, access: Access) -> bool:
        return access == "read" or self.allow_write

    def require(self, access: Access, tool: str) -> None:
        """Refuse a write on a read-only server (defence in depth behind the registration filter)."""
        if not self.permits(access):
            raise ToolError(f"{tool} changes things and this server is read-only; restart it with "
                            "`inferctl mcp --allow-write` to enable it.")

    @property
    def mode(self) -> str:
        return "read-write" if self.allow_write else "read-only"


@dataclass(frozen=True)
class ToolSpec:
    """A tool and its safety facts; ``annotations`` derives the MCP hints from them."""

    fn: Callable[..., Any]
    access: Access
    idempotent: bool
    open_world: bool
    title: str
    # A "read" tool that still adds a file to inferctl's own store (simulate_sweep) is honest about it.
    writes_local_store: bool = False

    @property
    def name(self) -> str:
        return self.fn.__name__

    @property
    def annotations(self) -> ToolAnnotations:
        return annotations(self.access, idempotent=self.idempotent, open_world=self.open_world, title=self.title,
                           read_only=self.access == "read" and not self.writes_local_store)


def annotations(access: Access, *, idempotent: bool, open_world: bool, title: str,
                read_only: bool | None = None) -> ToolAnnotations:
    """Every hint set explicitly: an unset destructive_hint means "destructive" to clients."""
    read = access == "read" if read_only is None else read_only
    return ToolAnnotations(
        title=title,
        read_only_hint=read,
        destructive_hint=access == "destructive",
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


def can_ask(ctx) -> bool:
    """True when the client declared form elicitation (it can put a question to the user)."""
    caps = ctx.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def cannot_ask(action: str) -> ToolError:
    return ToolError(f"{action} needs the user's confirmation, and this MCP client cannot ask (no elicitation "
                     "support); nothing was changed. Run the equivalent `inferctl` command in a terminal, or "
                     "restart the server with `--confirm-fallback allow` to skip confirmation.")
