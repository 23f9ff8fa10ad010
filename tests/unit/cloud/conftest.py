"""Every cloud test runs the official clients against the fake REST server, never real Google Cloud."""

from __future__ import annotations

import pytest
from tests.fakes.fake_gcp import FakeGCP, GcpState

HF_TOKEN = "hf_SeCrEtTokenValue1234567890abcdef"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-proj")
    for var in ("INFERCTL_TARGET", "INFERCTL_DEBUG", "INFERCTL_GCP_ENDPOINT", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


@pytest.fixture
def gcp(monkeypatch):
    state = GcpState(project="test-proj")
    state.service_ready_after = 2
    with FakeGCP(state) as fake:
        monkeypatch.setenv("INFERCTL_GCP_ENDPOINT", fake.url)
        yield fake


@pytest.fixture
def fast_poll(monkeypatch):
    """Waits poll every few milliseconds instead of every 10 s."""
    from inferctl.cloud import deploy

    original = deploy.wait_ready

    async def quick(ctx, profile, *, progress=None, timeout=3600.0, poll=10.0, **kw):
        return await original(ctx, profile, progress=progress, timeout=min(timeout, 20), poll=0.01, **kw)

    monkeypatch.setattr(deploy, "wait_ready", quick)


def write_config(tmp_path, text: str) -> None:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
