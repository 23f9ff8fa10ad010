"""`inferctl mcp` over stdio (a real subprocess) and the HTTP app's bind and token rules."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters
from tests.unit.mcp.conftest import text

from inferctl.errors import ConfigError
from inferctl.mcp.policy import Policy
from inferctl.mcp.server import http_app, serve_http

pytestmark = pytest.mark.anyio
HEAVY = ("google", "matplotlib", "plotly", "vllm", "numpy", "torch")


async def test_stdio_initialize_list_and_call(isolated):
    script = Path(sys.executable).with_name("inferctl")  # the console script clients configure
    command, args = (str(script), ["mcp"]) if script.exists() else \
        (sys.executable, ["-c", "from inferctl.cli.app import main; main()", "mcp"])
    params = StdioServerParameters(command=command, args=args)
    async with Client(params, read_timeout_seconds=120) as c:
        assert c.server_info.name == "inferctl"
        names = {t.name for t in (await c.list_tools()).tools}
        assert "get_status" in names and "deploy" not in names  # read-only by default
        result = await c.call_tool("list_targets", {})
        assert not result.is_error, text(result)
        assert result.structured_content["server_mode"] == "read-only"


def test_startup_imports_nothing_heavy():
    """`inferctl mcp` must start fast: Google clients, charts and vLLM load only when a tool needs them."""
    import subprocess

    code = ("import sys; from inferctl.cli import app; from inferctl.mcp.server import build_server; "
            "build_server(); print(sorted({m.split('.')[0] for m in sys.modules} & set(sys.argv[1:])))")
    out = subprocess.run([sys.executable, "-c", code, *HEAVY], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_http_refuses_a_public_bind_without_a_token():
    with pytest.raises(ConfigError, match="without a bearer token"):
        serve_http(Policy(), host="0.0.0.0", port=0, token=None)


async def test_http_needs_the_bearer_token_and_then_serves_mcp():
    from mcp.client.streamable_http import streamable_http_client

    app = http_app(Policy(), host="127.0.0.1", token="s3cret-token")
    transport = httpx.ASGITransport(app=app)
    url = "http://127.0.0.1:8765/mcp"  # the SDK's loopback Host check wants host:port
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    inner = app.app  # the SDK's Starlette app behind BearerAuth; its lifespan starts the session manager
    async with inner.router.lifespan_context(inner):
        async with httpx.AsyncClient(transport=transport) as http:
            assert (await http.post(url, json=body)).status_code == 401
            wrong = await http.post(url, json=body, headers={"Authorization": "Bearer nope"})
            assert wrong.status_code == 401 and "s3cret" not in wrong.text
        authed = httpx.AsyncClient(transport=transport, headers={"Authorization": "Bearer s3cret-token"})
        async with Client(streamable_http_client(url, http_client=authed)) as c:
            assert "get_status" in {t.name for t in (await c.list_tools()).tools}
            result = await c.call_tool("list_targets", {})
            assert not result.is_error and result.structured_content["server_mode"] == "read-only"


def test_http_with_write_tools_needs_a_token_on_loopback_too():
    for host in ("127.0.0.1", "localhost", "::1"):
        with pytest.raises(ConfigError, match="--allow-write over HTTP needs a bearer token, on loopback too"):
            http_app(Policy(allow_write=True), host=host, token=None)
    assert http_app(Policy(allow_write=True), host="127.0.0.1", token="s3cret-token") is not None


def test_cli_refuses_to_start_writable_http_without_a_token(isolated):
    """The real command, in a subprocess: it must exit at once with the sentence, not serve."""
    import subprocess

    from tests.fakes.fake_vllm import free_port

    code = "from inferctl.cli.app import main; main()"
    args = [sys.executable, "-c", code, "mcp", "--http", "--host", "127.0.0.1", "--port", str(free_port()),
            "--allow-write"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0
    assert "needs a bearer token, on loopback too" in out.stderr and "--token-env" in out.stderr
    assert "Traceback" not in out.stderr
