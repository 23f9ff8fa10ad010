"""Observe tools against the fake vLLM server: structured results, summaries, and one-sentence errors."""

from __future__ import annotations

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM, free_port
from tests.unit.mcp.conftest import client, text

pytestmark = pytest.mark.anyio


@pytest.fixture
def fake():
    with FakeVLLM(FakeConfig(model="gemma-4-12b", ttft_ms=5, itl_ms=1)) as f:
        yield f


async def test_status_health_models_metrics_and_query_by_url(fake):
    async with client() as c:
        status = await c.call_tool("get_status", {"target": fake.url})
        assert not status.is_error, text(status)
        assert status.structured_content["healthy"] is True
        assert status.structured_content["models"][0]["id"] == "gemma-4-12b"
        assert "healthy" in status.content[0].text

        health = await c.call_tool("verify_health", {"target": fake.url})
        assert health.structured_content["healthy"] is True and health.structured_content["completion_tokens"]

        info = await c.call_tool("get_model_info", {"target": fake.url})
        assert not info.is_error, text(info)
        assert info.structured_content["models"]["models"][0]["id"] == "gemma-4-12b"
        assert info.structured_content["memory"]["log_available"] is False  # a URL serves no startup log

        metrics = await c.call_tool("get_metrics", {"target": fake.url})
        assert not metrics.is_error, text(metrics)
        assert "snapshot" in metrics.structured_content

        answer = await c.call_tool("query_model", {"target": fake.url, "prompt": "What is Gemma?", "max_tokens": 8})
        assert not answer.is_error, text(answer)
        out = answer.structured_content
        assert out["completion_tokens"] == 8 and out["ttft_ms"] > 0 and "TTFT" in answer.content[0].text


async def test_configured_bearer_target_never_shows_its_token(isolated, monkeypatch):
    token = "lab-token-0123456789abcdef"
    monkeypatch.setenv("LAB_TOKEN", token)
    with FakeVLLM(FakeConfig(require_token=token)) as f:
        (isolated / "config.toml").write_text(
            f'[targets.lab]\nurl = "{f.url}"\nauth = "bearer"\ntoken_env = "LAB_TOKEN"\n', encoding="utf-8")
        async with client() as c:
            targets = await c.call_tool("list_targets", {})
            assert {"local", "lab"} <= {t["name"] for t in targets.structured_content["targets"]}
            health = await c.call_tool("verify_health", {"target": "lab"})
            assert health.structured_content["healthy"] is True
            # A URL target gets no credentials: the server must not send the lab's token to a URL the model chose.
            anon = await c.call_tool("verify_health", {"target": f.url})
            assert anon.structured_content["healthy"] is False
    for result in (targets, health, anon):
        assert token not in text(result) and token not in str(result.structured_content)


async def test_expected_failures_are_one_actionable_sentence():
    dead = f"http://127.0.0.1:{free_port()}"
    async with client() as c:
        unknown = await c.call_tool("get_model_info", {"target": "nope"})
        assert unknown.is_error and "Unknown target 'nope'" in text(unknown)
        down = await c.call_tool("query_model", {"target": dead, "prompt": "hi"})
        assert down.is_error
        message = text(down)
        assert dead.split("//")[1] in message or "connect" in message.lower()
        assert "Traceback" not in message and message.strip() != "Error executing tool query_model"
        bad = await c.call_tool("query_model", {"target": dead, "prompt": ""})
        assert bad.is_error and "validation error" in text(bad)
        status = await c.call_tool("get_status", {"target": dead})  # status reports, never raises
        assert not status.is_error and status.structured_content["reachable"] is False


async def test_local_logs_need_a_started_engine():
    async with client() as c:
        r = await c.call_tool("fetch_logs", {"target": "local"})
        assert r.is_error and "inferctl local up" in text(r)


async def test_remediation_asks_a_configured_target_and_keeps_facts_when_none_answers(fake, isolated):
    (isolated / "config.toml").write_text(f'[targets.lab]\nurl = "{fake.url}"\n', encoding="utf-8")
    error = "torch.OutOfMemoryError: CUDA out of memory"
    async with client() as c:
        r = await c.call_tool("suggest_remediation", {"error": error, "target": "lab"})
        assert not r.is_error, text(r)
        assert any("GPU memory" in cause for cause in r.structured_content["known_causes"])
        assert r.structured_content["plan"] and r.structured_content["asked"] == "lab"
        r = await c.call_tool("suggest_remediation", {"error": error, "target": "nope"})
        assert not r.is_error and r.structured_content["plan"] is None
        assert "Unknown target 'nope'" in r.structured_content["note"]


async def test_local_engine_tool_is_a_write_and_hidden_by_default(monkeypatch):
    from inferctl.ops import local
    from inferctl.ops.local import LocalDownResult

    monkeypatch.setattr(local, "down", lambda: LocalDownResult(stopped=False, message="nothing to stop"))
    async with client() as c:
        r = await c.call_tool("manage_local_engine", {"action": "down"})
        assert r.is_error and "Unknown tool" in text(r)
    async with client(allow_write=True) as c:
        r = await c.call_tool("manage_local_engine", {"action": "down"})
        assert not r.is_error and r.structured_content["down"]["message"] == "nothing to stop"
