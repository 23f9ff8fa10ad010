"""The client on bytes recorded from a real vLLM 0.32 CPU engine (tests/fixtures/vllm-0.32-cpu)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from inferctl.config import Target
from inferctl.errors import ModelNotServed, RequestRejected
from inferctl.server.client import VLLMClient

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "vllm-0.32-cpu"
MANIFEST = json.loads((REAL / "manifest.json").read_text(encoding="utf-8"))


def replay(name: str, chunk_size: int = 37) -> httpx.MockTransport:
    """A transport answering every request with one recorded response, cut into small pieces."""
    entry = MANIFEST[name]
    body = (REAL / name).read_bytes()

    async def pieces():
        for i in range(0, len(body), chunk_size):  # split mid-event: the parser must reassemble
            yield body[i : i + chunk_size]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(entry["status"], headers={"content-type": entry["content_type"]}, content=pieces())

    return httpx.MockTransport(handler)


def call(name: str, fn):
    async def go():
        async with VLLMClient(Target(name="url", url="http://vllm.test"), transport=replay(name)) as c:
            return await fn(c)

    return asyncio.run(go())


def recorded_deltas(name: str, key: str) -> str:
    text = ""
    for line in (REAL / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:]).get("choices", []):
                text += (choice.get("delta") or {}).get(key, "") if key == "content" else choice.get("text", "")
    return text


def test_recorded_chat_stream():
    r = call("chat_stream.sse", lambda c: c.chat([{"role": "user", "content": "Hello!"}], model="tiny-gemma4",
                                                  max_tokens=12))
    assert r.ok, r.error
    assert (r.prompt_tokens, r.completion_tokens, r.finish_reason) == (15, 12, "length")
    assert r.text == recorded_deltas("chat_stream.sse", "content")
    assert r.first_token_time is not None and r.tpot is not None
    assert 1 <= len(r.chunk_times) <= 12  # content chunks; an incomplete UTF-8 char can make one empty


def test_recorded_completion_stream():
    r = call("completion_stream.sse", lambda c: c.complete("x", model="tiny-gemma4", max_tokens=12))
    assert r.ok, r.error
    assert r.completion_tokens == json.loads(
        [ln for ln in (REAL / "completion_stream.sse").read_text().splitlines() if '"usage"' in ln][-1][6:]
    )["usage"]["completion_tokens"]
    assert r.text == recorded_deltas("completion_stream.sse", "text")


def test_recorded_models_and_version():
    models = call("models.json", lambda c: c.models())
    assert [(m.id, m.max_model_len) for m in models] == [("tiny-gemma4", 2048)]
    assert call("version.json", lambda c: c.version()) == "0.32.0"


def test_recorded_unknown_model_error():
    r = call("error_unknown_model.json", lambda c: c.chat([], model="no-such-model"))
    assert r.status == "http_error" and r.http_status == 404
    with pytest.raises(ModelNotServed, match="`no-such-model` does not exist. Valid aliases: tiny-gemma4"):
        r.raise_for_status("http://vllm.test")


def test_recorded_prompt_too_long_error():
    r = call("error_prompt_too_long.json", lambda c: c.complete("x", model="tiny-gemma4"))
    with pytest.raises(RequestRejected, match="HTTP 400: This model's maximum context length is 2048 tokens"):
        r.raise_for_status("http://vllm.test")
