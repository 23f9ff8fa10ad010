"""`sim serve`: the vLLM API shapes, with the simulator behind them (in-process, lifespan included)."""

from __future__ import annotations

import json

import pytest
from starlette.testclient import TestClient

from inferctl.profiles.serving import ServingConfig
from inferctl.server.metrics import parse_metrics
from inferctl.sim.server import CHAT_OVERHEAD_TOKENS, build_app, count_tokens

CFG = ServingConfig(model="gemma-4-e2b", accelerator="h100", max_model_len=4096)


@pytest.fixture
def client():
    # speed 50: the simulated H100 steps (~5 ms) pass in ~0.1 ms of wall time
    with TestClient(build_app(CFG, speed=50.0)) as c:
        yield c


def test_word_tokenizer():
    assert count_tokens(" the the cat") == 3
    assert count_tokens("hello") == 1
    assert count_tokens("") == 0


def test_models_and_health(client):
    assert client.get("/health").status_code == 200
    data = client.get("/v1/models").json()["data"]
    assert data[0]["id"] == "gemma-4-e2b" and data[0]["max_model_len"] == 4096


def test_tokenize_prompt_and_chat(client):
    assert client.post("/tokenize", json={"model": "gemma-4-e2b", "prompt": " a b c d"}).json()["count"] == 4
    chat = client.post("/tokenize", json={"model": "gemma-4-e2b", "messages": [{"role": "user", "content": " a b"}]})
    assert chat.json()["count"] == 2 + CHAT_OVERHEAD_TOKENS


def _stream(client, body):
    lines = []
    with client.stream("POST", "/v1/chat/completions", json=body) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                lines.append(line[6:])
    assert lines[-1] == "[DONE]"
    return [json.loads(x) for x in lines[:-1]]


def test_streaming_chat_counts_tokens_and_reports_usage(client):
    chunks = _stream(client, {"model": "gemma-4-e2b", "messages": [{"role": "user", "content": " hi there"}],
                              "max_tokens": 12, "stream": True, "stream_options": {"include_usage": True}})
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert count_tokens(text) == 12
    assert chunks[-1]["usage"] == {"prompt_tokens": 2 + CHAT_OVERHEAD_TOKENS, "completion_tokens": 12,
                                   "total_tokens": 14 + CHAT_OVERHEAD_TOKENS}
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finishes[-1] == "length" and finishes.count("length") == 1


def test_completion_non_streaming(client):
    r = client.post("/v1/completions", json={"model": "gemma-4-e2b", "prompt": " x y z", "max_tokens": 5})
    body = r.json()
    assert body["usage"]["completion_tokens"] == 5 and count_tokens(body["choices"][0]["text"]) == 5


def test_context_too_long_is_vllms_400(client):
    r = client.post("/v1/completions", json={"model": "gemma-4-e2b", "prompt": " a" * 4000, "max_tokens": 200})
    assert r.status_code == 400
    assert "maximum context length is 4096 tokens" in r.json()["error"]["message"]


def test_unknown_model_is_404(client):
    r = client.post("/v1/completions", json={"model": "other", "prompt": "x", "max_tokens": 1})
    assert r.status_code == 404


def test_metrics_parse_with_vllm_names(client):
    client.post("/v1/completions", json={"model": "gemma-4-e2b", "prompt": " a b", "max_tokens": 4})
    snap = parse_metrics(client.get("/metrics").text)
    dump = snap.model_dump()
    flat = json.dumps(dump)
    assert snap is not None and "gemma-4-e2b" in flat
    text = client.get("/metrics").text
    for name in ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                 "vllm:generation_tokens_total", "vllm:time_to_first_token_seconds_bucket",
                 "vllm:inter_token_latency_seconds_bucket", "vllm:request_success_total", "vllm:cache_config_info"):
        assert name in text
    assert 'vllm:generation_tokens_total{engine="0",model_name="gemma-4-e2b"} 4.0' in text


def test_distinct_words_are_distinct_tokens(client):
    """The benchmark refuses a tokenizer that gives different words one id (<unk>): sim serve's must not."""
    words = [" the", " of", " and", " to", " in", " is", " was", " for"]
    ids = [client.post("/tokenize", json={"model": "gemma-4-e2b", "prompt": w}).json()["tokens"] for w in words]
    assert all(len(i) == 1 for i in ids) and len({i[0] for i in ids}) == len(words)
    again = client.post("/tokenize", json={"model": "gemma-4-e2b", "prompt": "".join(words)}).json()["tokens"]
    assert again == [i[0] for i in ids]  # the same word is always the same id
