"""`inferctl sim serve`: the OpenAI/vLLM HTTP API in front of the live simulated engine.

Endpoints as vLLM serves them (reference/vllm.md §2): /health, /version, /v1/models, /tokenize,
/detokenize, /v1/completions and /v1/chat/completions (streaming with ``stream_options.include_usage``,
or not), and /metrics with vLLM's metric names. Text is placeholder words; timings are the simulator's.

Tokenization is by words: every whitespace-led word is one token (so a benchmark can build exact-length
prompts through /tokenize, as it does against vLLM); a chat request adds a fixed template overhead.
"""

from __future__ import annotations

import json
import re
import time
import uuid
import zlib

from inferctl.plan.cells import SimEngine
from inferctl.plan.fit import require_fit
from inferctl.plan.perf import PerfParams
from inferctl.profiles.serving import ServingConfig
from inferctl.sim.engine import E2E_BUCKETS, ITL_BUCKETS, TTFT_BUCKETS, LiveEngine, bucket_counts

_WORD = re.compile(r"\s*\S+|\s+$")
CHAT_OVERHEAD_TOKENS = 6  # <bos><start_of_turn>user\n ... <end_of_turn>\n<start_of_turn>model\n
_WORDS = ["the", "model", "serves", "tokens", "fast", "and", "well", "on", "every", "device"]


def count_tokens(text: str) -> int:
    """Word-level token count: ' the' is one token, as is 'the'."""
    return len(_WORD.findall(text))


def token_ids(text: str) -> list[int]:
    """One id per word, the same word always the same id (a stable hash), so distinct words are distinct tokens
    as in a real vocabulary (the benchmark refuses a tokenizer under which they are not)."""
    return [zlib.crc32(w.strip().encode()) % 1_000_003 + 16 for w in _WORD.findall(text)]


def _chat_tokens(messages: list[dict]) -> int:
    text = "".join(str(m.get("content", "")) if not isinstance(m.get("content"), list) else
                   "".join(p.get("text", "") for p in m["content"]) for m in messages)  # fmt: skip
    return count_tokens(text) + CHAT_OVERHEAD_TOKENS


def build_app(cfg: ServingConfig, params: PerfParams | None = None, *, speed: float = 1.0,
              served_model_name: str | None = None):  # fmt: skip
    """The Starlette app (also used by tests with an in-process transport)."""
    from contextlib import asynccontextmanager

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
    from starlette.routing import Route

    sim = SimEngine(cfg, params)
    r = sim.resolved
    require_fit(cfg, sim.memory)  # the same refusal as `plan` and `simulate`
    _ = sim.memory, sim.step  # plan up front: the first request should not pay for it
    name = served_model_name or r.model.name.rstrip("/").rsplit("/", 1)[-1]
    live = LiveEngine(sim, speed=speed)
    created = int(time.time())

    @asynccontextmanager
    async def lifespan(app):
        live.start()
        yield
        await live.stop()

    def error(message: str, code: int, kind: str = "BadRequestError") -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": kind, "param": None, "code": code}},
                            status_code=code)

    async def health(request: Request) -> Response:
        return Response(status_code=200)

    async def version(request: Request) -> Response:
        return JSONResponse({"version": "inferctl-sim"})

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{
            "id": name, "object": "model", "created": created, "owned_by": "vllm", "root": r.model.hf_id or name,
            "parent": None, "max_model_len": r.max_model_len, "permission": []}]})

    async def tokenize(request: Request) -> Response:
        body = await request.json()
        if "messages" in body:  # the template's tokens (ids below 16), then the words'
            text = "".join(str(m.get("content", "")) if not isinstance(m.get("content"), list) else
                           "".join(p.get("text", "") for p in m["content"]) for m in body["messages"])  # fmt: skip
            ids = list(range(CHAT_OVERHEAD_TOKENS)) + token_ids(text)
        else:
            ids = token_ids(str(body.get("prompt", "")))
        return JSONResponse({"count": len(ids), "max_model_len": r.max_model_len, "tokens": ids, "token_strs": None})

    async def detokenize(request: Request) -> Response:
        body = await request.json()
        return JSONResponse({"prompt": "".join(" " + _WORDS[t % len(_WORDS)] for t in body.get("tokens", []))})

    def metrics_text() -> str:
        lab = f'engine="0",model_name="{name}"'
        lines = []

        def metric(mname: str, kind: str, value: float, help_: str, labels: str = lab) -> None:
            lines.extend([f"# HELP {mname} {help_}", f"# TYPE {mname} {kind}", f"{mname}{{{labels}}} {float(value)}"])

        def hist(mname: str, values: list[float], buckets: list[float], help_: str) -> None:
            lines.extend([f"# HELP {mname} {help_}", f"# TYPE {mname} histogram"])
            for b, n in zip([*buckets, "+Inf"], bucket_counts(values, buckets), strict=True):
                lines.append(f'{mname}_bucket{{{lab},le="{b}"}} {float(n)}')
            lines.append(f"{mname}_count{{{lab}}} {float(len(values))}")
            lines.append(f"{mname}_sum{{{lab}}} {float(sum(values))}")

        metric("vllm:num_requests_running", "gauge", len(live.running),
               "Number of requests in model execution batches.")
        metric("vllm:num_requests_waiting", "gauge", len(live.waiting), "Number of requests waiting to be processed.")
        metric("vllm:kv_cache_usage_perc", "gauge", live.kv_usage, "KV-cache usage. 1 means 100 percent usage.")
        metric("vllm:num_preemptions_total", "counter", live.preemptions_total, "Cumulative number of preemption.")
        metric("vllm:prompt_tokens_total", "counter", live.prompt_tokens_total, "Number of prefill tokens processed.")
        metric("vllm:generation_tokens_total", "counter", live.generation_tokens_total,
               "Number of generation tokens processed.")
        metric("vllm:request_success_total", "counter", live.success_total,
               "Count of successfully processed requests.", f'{lab},finished_reason="length"')
        hist("vllm:time_to_first_token_seconds", live.ttft, TTFT_BUCKETS,
             "Histogram of time to first token in seconds.")
        hist("vllm:inter_token_latency_seconds", live.itl, ITL_BUCKETS, "Histogram of inter-token latency in seconds.")
        hist("vllm:e2e_request_latency_seconds", live.e2e, E2E_BUCKETS, "Histogram of e2e request latency in seconds.")
        info = (f'{lab},block_size="{r.block_size}",cache_dtype="{r.config.kv_dtype}",'
                f'num_gpu_blocks="{sim.memory.kv.num_blocks}",gpu_memory_utilization="{r.config.gpu_mem_util}"')
        metric("vllm:cache_config_info", "gauge", 1, "Information of the LLMEngine CacheConfig", info)
        return "\n".join(lines) + "\n"

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(metrics_text(), media_type="text/plain; version=0.0.4; charset=utf-8")

    async def generate(request: Request, chat: bool) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return error("The request body is not valid JSON.", 400)
        if body.get("model") not in (name, None):
            return error(f"The model `{body.get('model')}` does not exist.", 404, "NotFoundError")
        prompt = _chat_tokens(body.get("messages") or []) if chat else count_tokens(str(body.get("prompt", "")))
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        if prompt + max_tokens > r.max_model_len:
            return error(f"This model's maximum context length is {r.max_model_len} tokens. However, you requested "
                         f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the completion). "
                         f"Please reduce the length of the messages or completion.", 400)
        req = live.submit(prompt, max_tokens)
        rid = ("chatcmpl-" if chat else "cmpl-") + uuid.uuid4().hex[:24]
        obj = "chat.completion.chunk" if chat else "text_completion"
        usage = {"prompt_tokens": prompt, "total_tokens": prompt + max_tokens, "completion_tokens": max_tokens}

        def text(n: int, offset: int) -> str:
            return "".join(" " + _WORDS[(offset + i) % len(_WORDS)] for i in range(n))

        if not body.get("stream"):
            produced = 0
            while (n := await req.queue.get()) is not None:
                produced += n
            content = text(produced, 0)
            choice = ({"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "length"}
                      if chat else {"index": 0, "text": content, "finish_reason": "length"})  # fmt: skip
            return JSONResponse({"id": rid, "object": "chat.completion" if chat else "text_completion",
                                 "created": int(time.time()), "model": name, "choices": [choice], "usage": usage})
        include_usage = (body.get("stream_options") or {}).get("include_usage", False)

        def chunk(content: str | None, finish: str | None = None, role: bool = False) -> bytes:
            if chat:
                delta = {"role": "assistant", "content": ""} if role else {"content": content}
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": content or "", "logprobs": None, "finish_reason": finish}
            return f"data: {json.dumps({'id': rid, 'object': obj, 'model': name, 'choices': [choice]})}\n\n".encode()

        async def stream():
            produced = 0
            try:
                if chat:
                    yield chunk(None, role=True)
                while (n := await req.queue.get()) is not None:
                    done = produced + n >= max_tokens
                    yield chunk(text(n, produced), "length" if done else None)
                    produced += n
                if include_usage:
                    yield f"data: {json.dumps({'id': rid, 'object': obj, 'choices': [], 'usage': usage})}\n\n".encode()
                yield b"data: [DONE]\n\n"
            finally:
                req.cancelled = req.generated < max_tokens

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def chat_endpoint(request: Request) -> Response:
        return await generate(request, chat=True)

    async def completions_endpoint(request: Request) -> Response:
        return await generate(request, chat=False)

    return Starlette(routes=[
        Route("/health", health), Route("/version", version), Route("/v1/models", models),
        Route("/metrics", metrics), Route("/tokenize", tokenize, methods=["POST"]),
        Route("/detokenize", detokenize, methods=["POST"]),
        Route("/v1/chat/completions", chat_endpoint, methods=["POST"]),
        Route("/v1/completions", completions_endpoint, methods=["POST"]),
    ], lifespan=lifespan)  # fmt: skip


def serve(cfg: ServingConfig, *, params: PerfParams | None = None, host: str = "127.0.0.1", port: int = 8100,
          speed: float = 1.0, served_model_name: str | None = None) -> None:  # fmt: skip
    """Run the simulated server until interrupted."""
    import uvicorn

    app = build_app(cfg, params, speed=speed, served_model_name=served_model_name)
    uvicorn.run(app, host=host, port=port, log_level="warning")
