"""MCP tests drive the real server in process (mcp's ``Client(server)``), against the fakes, never real clouds."""

from __future__ import annotations

import pytest
from mcp.client import Client
from tests.fakes.fake_gcp import FakeGCP, GcpState

from inferctl.mcp.policy import Policy
from inferctl.mcp.server import build_server

HF_TOKEN = "hf_SeCrEtTokenValue1234567890abcdef"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-proj")
    for var in ("INFERCTL_TARGET", "INFERCTL_DEBUG", "INFERCTL_GCP_ENDPOINT", "GOOGLE_APPLICATION_CREDENTIALS",
                "INFERCTL_RUNS_DIR", "HF_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def gcp(monkeypatch):
    state = GcpState(project="test-proj")
    state.service_ready_after = 2
    with FakeGCP(state) as fake:
        monkeypatch.setenv("INFERCTL_GCP_ENDPOINT", fake.url)
        yield fake


def client(allow_write: bool = False, confirm_fallback: str = "deny", **kwargs) -> Client:
    """An in-process client of a freshly built server."""
    policy = Policy(allow_write=allow_write, confirm_fallback=confirm_fallback)  # type: ignore[arg-type]
    return Client(build_server(policy), **kwargs)


def text(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)
