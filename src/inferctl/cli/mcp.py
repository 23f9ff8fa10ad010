"""`inferctl mcp`: serve inferctl's tools to an agent over MCP (stdio by default, or streamable HTTP)."""

from __future__ import annotations

import os
from typing import Annotated

import typer

from inferctl.cli.common import fail


def mcp(
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP at http://HOST:PORT/mcp instead of "
                                       "stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP bind address; anything but loopback, and "
                                      "--allow-write anywhere, needs --token-env.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.", min=1, max=65535)] = 8765,
    allow_write: Annotated[bool, typer.Option("--allow-write", help="List the tools that change things (deploy, "
                                              "scale, destroy, start_benchmark, set_hf_token, local engine).")] = False,
    confirm_fallback: Annotated[str, typer.Option("--confirm-fallback", help="When the client cannot ask the user "
                                                  "to confirm a destructive call: deny or allow.")] = "deny",
    token_env: Annotated[str | None, typer.Option("--token-env", help="Environment variable holding the bearer "
                                                  "token HTTP clients must send.", show_default=False)] = None,
) -> None:
    """Serve inferctl to an MCP client (Claude, Gemini CLI, Antigravity...). Read-only unless --allow-write."""
    from inferctl.mcp.policy import Policy

    if confirm_fallback not in ("deny", "allow"):
        raise fail("--confirm-fallback is deny or allow.", 2)
    policy = Policy(allow_write=allow_write, confirm_fallback=confirm_fallback)  # type: ignore[arg-type]
    if not http:
        from inferctl.mcp.server import serve_stdio

        serve_stdio(policy)
        return
    token = None
    if token_env:
        token = os.environ.get(token_env, "").strip()
        if not token:
            raise fail(f"${token_env} is empty or unset; it must hold the bearer token.", 2)
    from inferctl.errors import InferctlError
    from inferctl.mcp.server import serve_http

    try:
        serve_http(policy, host=host, port=port, token=token)
    except InferctlError as exc:
        raise fail(str(exc), 2) from None


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp)
