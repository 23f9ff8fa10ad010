"""The vLLM client against real HTTP servers that misbehave in known ways."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM, ServerThread, free_port, html_app

from inferctl.config import Target
from inferctl.errors import (
    AuthFailed,
    ConfigError,
    EndpointTimeout,
    EngineDead,
    ModelNotServed,
    NotVLLM,
    Unreachable,
)
from inferctl.server.client import VLLMClient


def run(coro):
    return asyncio.run(coro)


async def _with(target: Target, fn, **kw):
    async with VLLMClient(target, **kw) as c:
        return await fn(c)


@pytest.fixture(scope="module")
def fake():
    with FakeVLLM(FakeConfig(model="tiny", max_model_len=2048, ttft_ms=20, itl_ms=2)) as f:
        yield f


def test_models_version_health(fake):
    t = Target(name="url", url=fake.url)
    models = run(_with(t, lambda c: c.models()))
    assert [m.id for m in models] == ["tiny"]
    assert models[0].max_model_len == 2048
    assert run(_with(t, lambda c: c.version())) == "0.32.0"
    assert run(_with(t, lambda c: c.health())) > 0


def test_chat_stream_timing_and_usage(fake):
    t = Target(name="url", url=fake.url)
    r = run(_with(t, lambda c: c.chat([{"role": "user", "content": "hello"}], model="tiny", max_tokens=10)))
    assert r.ok, r.error
    assert r.completion_tokens == 10
    assert r.prompt_tokens == 5 + 8  # characters + the fake's chat overhead
    assert len(r.chunk_times) == 10
    assert r.ttft is not None and r.ttft >= 0.019  # the fake sleeps 20 ms before the first token
    assert r.tpot is not None and r.tpot >= 0.0019
    assert r.finish_reason == "length"


def test_completion_stream_and_deltas(fake):
    t = Target(name="url", url=fake.url)
    pieces: list[str] = []
    r = run(_with(t, lambda c: c.complete("abc", model="tiny", max_tokens=4, on_delta=pieces.append)))
    assert r.ok and r.text == "abab" and pieces == ["a", "b", "a", "b"]
    assert r.prompt_tokens == 3


def test_unknown_model(fake):
    t = Target(name="url", url=fake.url)
    with pytest.raises(ModelNotServed, match="'nope' is not served.*tiny"):
        run(_with(t, lambda c: c.resolve_model("nope")))
    r = run(_with(t, lambda c: c.chat([{"role": "user", "content": "x"}], model="nope", max_tokens=2)))
    assert r.status == "http_error" and r.http_status == 404
    with pytest.raises(ModelNotServed):
        r.raise_for_status(fake.url)


def test_unreachable_is_one_clear_error():
    t = Target(name="url", url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(Unreachable, match="Cannot connect"):
        run(_with(t, lambda c: c.models()))


def test_local_target_unreachable_says_how_to_start():
    t = Target(name="local", url=f"http://127.0.0.1:{free_port()}", local=True)
    with pytest.raises(Unreachable, match="inferctl local up"):
        run(_with(t, lambda c: c.health()))


def test_html_server_is_not_vllm():
    with ServerThread(html_app()) as srv:
        t = Target(name="url", url=srv.url)
        with pytest.raises(NotVLLM, match="not as an OpenAI-compatible server.*HTML"):
            run(_with(t, lambda c: c.models()))
        with pytest.raises(NotVLLM):
            run(_with(t, lambda c: c.health()))


def test_401_and_bearer_token(monkeypatch):
    with FakeVLLM(FakeConfig(require_token="s3cret")) as f:
        t = Target(name="url", url=f.url)
        with pytest.raises(AuthFailed, match="401 Unauthorized") as info:
            run(_with(t, lambda c: c.models()))
        assert "s3cret" not in str(info.value)
        monkeypatch.setenv("MY_TOKEN", "s3cret")
        t = Target(name="url", url=f.url, auth="bearer", token_env="MY_TOKEN")
        assert [m.id for m in run(_with(t, lambda c: c.models()))] == ["fake-model"]


def test_bearer_without_token_is_a_config_error(monkeypatch):
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    t = Target(name="lab", url="http://127.0.0.1:1", auth="bearer", token_env="NO_SUCH_TOKEN")
    with pytest.raises(ConfigError, match=r"\$NO_SUCH_TOKEN"):
        VLLMClient(t)


def test_503_health_is_engine_dead():
    with FakeVLLM(FakeConfig(health_status=503)) as f, pytest.raises(EngineDead, match="503"):
        run(_with(Target(name="url", url=f.url), lambda c: c.health()))


def test_timeout_is_told_apart():
    def slow(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("read timed out", request=request)

    t = Target(name="url", url="http://vllm.invalid")
    with pytest.raises(EndpointTimeout, match="did not answer within"):
        run(_with(t, lambda c: c.models(), transport=httpx.MockTransport(slow)))


def test_stream_broken_mid_way_is_data():
    with FakeVLLM(FakeConfig(break_stream_after=3)) as f:
        t = Target(name="url", url=f.url)
        r = run(_with(t, lambda c: c.chat([{"role": "user", "content": "x"}], model="fake-model", max_tokens=8)))
        assert r.status == "stream_broken" and "engine crashed" in r.error
        assert len(r.chunk_times) == 3
