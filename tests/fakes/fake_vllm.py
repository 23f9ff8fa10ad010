"""A fake vLLM/OpenAI server on 127.0.0.1 for tests that need controlled behaviour.

The real engine is what integration tests use; this fake exists for what the real engine cannot
be made to do on demand: a fixed TTFT and inter-token latency, 401s, a dead engine (503), errors
mid-stream, a slow server. It speaks real HTTP (uvicorn in a thread), so the client under test
runs unchanged.

    with FakeVLLM(FakeConfig(ttft_ms=20, itl_ms=5)) as fake:
        target = Target(name="url", url=fake.url)

Tokenization is one token per character (the fake has no tokenizer), so a prompt of N
characters is N prompt tokens; chat messages add ``chat_overhead_tokens``.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"

DEEP = 10_000  # nesting depth of the "deep" malformed bodies: past Python's recursion limit
# Fault kinds that replace the second token chunk with a data line of the wrong shape (then [DONE]).
MALFORMED_CHUNKS: dict[str, bytes] = {
    "choices_number": b'{"id":"x","object":"chat.completion.chunk","choices":[5]}',
    "content_number": b'{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":5},'
                      b'"finish_reason":null}]}',
    "usage_list": b'{"id":"x","object":"chat.completion.chunk","choices":[],"usage":[1,2,3]}',
    "deep": b'{"id":"x","choices":' + b"[" * DEEP + b"]" * DEEP + b"}",
}
# Raw /v1/models bodies a hostile or broken server might send (FakeConfig.models_body).
MALFORMED_MODELS: dict[str, str] = {
    "huge_max_model_len": '{"object":"list","data":[{"id":"m","object":"model","max_model_len":1e400}]}',
    "deep": '{"object":"list","data":' + "[" * DEEP + "]" * DEEP + "}",
    "id_number": '{"object":"list","data":[{"id":5,"object":"model"}]}',
}


@dataclass
class FakeConfig:
    model: str = "fake-model"
    max_model_len: int = 4096
    version: str = "0.32.0"
    ttft_ms: float = 5.0
    itl_ms: float = 1.0
    default_max_tokens: int = 16
    chat_overhead_tokens: int = 8
    health_status: int = 200
    require_token: str | None = None
    fail_every: int = 0  # every Nth generation request answers 500
    break_stream_after: int | None = None  # emit this many tokens, then an error event
    metrics_text: str | None = None
    served: list[str] = field(default_factory=list)
    # Fault injection for the load generator. Generation request n (1-based) gets
    # faults.get(n) or fault_cycle[(n - 1) % len(fault_cycle)]; "" is a normal answer. Kinds:
    # "429" / "500" / "503" (HTTP error, no stream), "reset" (connection dropped mid-stream),
    # "stall" (first token, then silence for stall_s), "malformed" (a non-JSON data line),
    # "no_usage" (no usage chunk), "no_done" (the body ends cleanly after the first token: no finish reason, no
    # [DONE] - cut off), "finish_no_done" (finish reason and usage, then the body ends without [DONE], as
    # `transformers serve` does - complete).
    # Every MALFORMED_CHUNKS key is also a fault kind (a well-formed JSON data line of the wrong shape).
    faults: dict[int, str] = field(default_factory=dict)
    fault_cycle: list[str] = field(default_factory=list)
    stall_s: float = 30.0
    instant: bool = False  # every chunk in one write, no sleeps (for throughput tests)
    chat_template: bool = True  # False: /tokenize with messages fails like vLLM for a model without one
    # "chars": one token per character (ids = code point % 512). "unk_words": a tokenizer that lacks the
    # words it is given: every whitespace-led word is one token, all the same id 3 (`<unk>`), as seen on a GPU
    # with a test tokenizer whose vocabulary had no English words.
    tokenizer: str = "chars"
    # Streams whose tokens decode to no text (a random-weights model emitting `<pad>`): every content delta is
    # "" while usage still counts the tokens. With `return_token_ids` in the request, chunks carry token_ids
    # (and are sent even though their text is empty), as vLLM >= 0.10.2 does.
    empty_text: bool = False
    # Prefix-cache counters for /metrics: hits = this fraction of the prompt tokens served (None: not exposed).
    prefix_cache_hit_rate: float | None = None
    # Latency histograms for /metrics with vLLM's names and TTFT buckets, observed by the fake itself (arrival to
    # first token, per-token decode time, arrival to end). histogram_shift_ms is subtracted from every TTFT and E2E
    # observation: a server whose own clock disagrees with what its clients see.
    histograms: bool = False
    # An OpenAI-compatible server that is not vLLM (as `transformers serve` is): no /tokenize, /detokenize,
    # /metrics or /version (404), and streams end after the finish chunk without [DONE].
    openai_only: bool = False
    models_status: int = 200  # 500: /v1/models fails (transformers serve without a hub cache does)
    histogram_shift_ms: float = 0.0
    models_body: str | None = None  # a raw JSON body for /v1/models (e.g. a MALFORMED_MODELS value)


class _State:
    def __init__(self, cfg: FakeConfig) -> None:
        self.cfg = cfg
        self.requests = 0
        self.running = 0
        self.max_running = 0
        self.seen_payloads: list[dict] = []
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.finished: dict[str, int] = {}
        self.faults_served: dict[str, int] = {}
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.observed: dict[str, list[float]] = {"ttft": [], "tpot": [], "e2e": []}

    def fault_for(self, n: int) -> str:
        kind = self.cfg.faults.get(n)
        if kind is None and self.cfg.fault_cycle:
            kind = self.cfg.fault_cycle[(n - 1) % len(self.cfg.fault_cycle)]
        if kind:
            self.faults_served[kind] = self.faults_served.get(kind, 0) + 1
        return kind or ""


def build_app(cfg: FakeConfig) -> tuple[Starlette, _State]:
    state = _State(cfg)

    def unauthorized(request: Request) -> Response | None:
        if cfg.require_token and request.headers.get("authorization") != f"Bearer {cfg.require_token}":
            return JSONResponse({"error": "Unauthorized"}, status_code=401)
        return None

    def error(message: str, code: int, type_: str = "BadRequestError") -> JSONResponse:
        return JSONResponse({"error": {"message": message, "type": type_, "param": None, "code": code}},
                            status_code=code)

    async def health(request: Request) -> Response:
        return Response(status_code=cfg.health_status)

    async def version(request: Request) -> Response:
        return JSONResponse({"version": cfg.version})

    async def models(request: Request) -> Response:
        if (r := unauthorized(request)) is not None:
            return r
        if cfg.models_status != 200:
            return PlainTextResponse("Internal Server Error", status_code=cfg.models_status)
        if cfg.models_body is not None:
            return Response(cfg.models_body, media_type="application/json")
        names = cfg.served or [cfg.model]
        data = [{"id": n, "object": "model", "created": 1763772000, "owned_by": "vllm", "root": f"/models/{n}",
                 "parent": None, "max_model_len": cfg.max_model_len, "permission": []} for n in names]
        return JSONResponse({"object": "list", "data": data})

    async def metrics(request: Request) -> Response:
        text = cfg.metrics_text
        if text is None:
            text = (
                "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
                "# TYPE vllm:num_requests_running gauge\n"
                f'vllm:num_requests_running{{engine="0",model_name="{cfg.model}"}} {float(state.running)}\n'
                "# TYPE vllm:num_requests_waiting gauge\n"
                f'vllm:num_requests_waiting{{engine="0",model_name="{cfg.model}"}} 0.0\n'
                "# TYPE vllm:kv_cache_usage_perc gauge\n"
                f'vllm:kv_cache_usage_perc{{engine="0",model_name="{cfg.model}"}} {min(1.0, state.running / 64):.4f}\n'
                "# TYPE vllm:prompt_tokens_total counter\n"
                f'vllm:prompt_tokens_total{{engine="0",model_name="{cfg.model}"}} {float(state.prompt_tokens)}\n'
                "# TYPE vllm:generation_tokens_total counter\n"
                f'vllm:generation_tokens_total{{engine="0",model_name="{cfg.model}"}} '
                f"{float(state.generation_tokens)}\n"
                + (
                    "# TYPE vllm:prefix_cache_queries counter\n"
                    f'vllm:prefix_cache_queries_total{{engine="0",model_name="{cfg.model}"}} '
                    f"{float(state.prefix_queries)}\n"
                    "# TYPE vllm:prefix_cache_hits counter\n"
                    f'vllm:prefix_cache_hits_total{{engine="0",model_name="{cfg.model}"}} {float(state.prefix_hits)}\n'
                    if cfg.prefix_cache_hit_rate is not None else ""
                )
                + (_histograms(state.observed) if cfg.histograms else "")
                + "# TYPE vllm:request_success_total counter\n"
                + "".join(
                    f'vllm:request_success_total{{engine="0",finished_reason="{r}",model_name="{cfg.model}"}} '
                    f"{float(state.finished.get(r, 0))}\n" for r in ("length", "stop")
                )
            )
        return PlainTextResponse(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def tokenize(request: Request) -> Response:
        body = await request.json()
        if "messages" in body and not cfg.chat_template:
            return error("As of transformers v4.44, default chat template is no longer allowed, so you must "
                         "provide a chat template if the tokenizer does not define one.", 400)
        if "messages" in body:
            text = "".join(str(m.get("content", "")) for m in body["messages"])
            tokens = _tokens(text) + [1] * cfg.chat_overhead_tokens
        else:
            tokens = _tokens(body.get("prompt", ""))
        return JSONResponse({"count": len(tokens), "max_model_len": cfg.max_model_len, "tokens": tokens,
                             "token_strs": None})

    def _tokens(text: str) -> list[int]:
        if cfg.tokenizer == "unk_words":
            return [3 for _ in re.findall(r"\s*\S+", text)]
        return [ord(c) % 512 for c in text]

    def _count(text: str) -> int:
        return len(_tokens(text))

    async def detokenize(request: Request) -> Response:
        body = await request.json()
        return JSONResponse({"prompt": "".join(chr(97 + t % 26) for t in body.get("tokens", []))})

    async def generate(request: Request, chat: bool) -> Response:
        if (r := unauthorized(request)) is not None:
            return r
        body = await request.json()
        state.seen_payloads.append(body)
        state.requests += 1
        if body.get("model") not in (cfg.served or [cfg.model]):
            return error(f"The model `{body.get('model')}` does not exist.", 404, "NotFoundError")
        if cfg.fail_every and state.requests % cfg.fail_every == 0:
            return error("injected failure", 500, "InternalServerError")
        fault = state.fault_for(state.requests)
        if fault in ("429", "500", "503"):
            names = {"429": "TooManyRequests", "500": "InternalServerError", "503": "ServiceUnavailable"}
            return error(f"injected {fault}", int(fault), names[fault])
        if chat:
            prompt_tokens = sum(_count(str(m.get("content", ""))) for m in body["messages"]) + cfg.chat_overhead_tokens
        else:
            p = body.get("prompt", "")
            prompt_tokens = _count(p)
        max_tokens = body.get("max_tokens") or cfg.default_max_tokens
        if prompt_tokens >= cfg.max_model_len:
            return error(f"This model's maximum context length is {cfg.max_model_len} tokens. However, your "
                         f"prompt contains {prompt_tokens} input tokens.", 400)
        n_out = min(max_tokens, cfg.max_model_len - prompt_tokens)
        if not body.get("stream"):
            return error("the fake only streams", 400)
        include_usage = (body.get("stream_options") or {}).get("include_usage", False)
        obj = "chat.completion.chunk" if chat else "text_completion"
        token_ids = bool(body.get("return_token_ids"))
        if cfg.prefix_cache_hit_rate is not None:
            state.prefix_queries += prompt_tokens
            state.prefix_hits += round(prompt_tokens * cfg.prefix_cache_hit_rate)

        def chunk(text: str | None, finish: str | None = None, role: bool = False) -> bytes:
            if cfg.empty_text and text is not None:
                text = ""
            if chat:
                delta = {"role": "assistant", "content": ""} if role else {"content": text}
                choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}
            if token_ids and not role:
                choice["token_ids"] = [0]
            data = {"id": "x", "object": obj, "model": cfg.model, "choices": [choice]}
            return f"data: {json.dumps(data)}\n\n".encode()

        arrived = time.perf_counter()

        async def gen():
            first: float | None = None
            state.running += 1
            state.max_running = max(state.max_running, state.running)
            try:
                if cfg.instant:
                    parts = [chunk(None, role=True)] if chat else []
                    parts += [chunk("ab"[i % 2], "length" if i == n_out - 1 else None) for i in range(n_out)]
                    usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + n_out,
                             "completion_tokens": n_out}
                    parts.append(f"data: {json.dumps({'id': 'x', 'object': obj, 'choices': [], 'usage': usage})}\n\n"
                                 .encode())
                    parts.append(b"data: [DONE]\n\n")
                    state.prompt_tokens += prompt_tokens
                    state.generation_tokens += n_out
                    state.finished["length"] = state.finished.get("length", 0) + 1
                    yield b"".join(parts)
                    return
                if chat:
                    yield chunk(None, role=True)
                await asyncio.sleep(cfg.ttft_ms / 1000)
                state.prompt_tokens += prompt_tokens
                for i in range(n_out):
                    if cfg.break_stream_after is not None and i == cfg.break_stream_after:
                        yield b'data: {"error": {"message": "engine crashed", "code": 500}}\n\n'
                        yield b"data: [DONE]\n\n"
                        return
                    if i:
                        await asyncio.sleep(cfg.itl_ms / 1000)
                    if fault == "malformed" and i == 1:
                        yield b"data: {not json\n\n"
                        return
                    if fault in MALFORMED_CHUNKS and i == 1:
                        yield b"data: " + MALFORMED_CHUNKS[fault] + b"\n\n"
                        yield b"data: [DONE]\n\n"
                        return
                    if fault == "reset" and i == 1:
                        raise ConnectionResetError("injected reset mid-stream")
                    if fault == "no_done" and i == 1:
                        return
                    yield chunk("ab"[i % 2], "length" if i == n_out - 1 else None)
                    if first is None:
                        first = time.perf_counter()
                    state.generation_tokens += 1
                    if fault == "stall":
                        await asyncio.sleep(cfg.stall_s)
                        return
                if include_usage and fault != "no_usage":
                    usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens + n_out,
                             "completion_tokens": n_out}
                    yield f"data: {json.dumps({'id': 'x', 'object': obj, 'choices': [], 'usage': usage})}\n\n".encode()
                state.finished["length"] = state.finished.get("length", 0) + 1
                if first is not None:
                    shift, end = cfg.histogram_shift_ms / 1000, time.perf_counter()
                    state.observed["ttft"].append(max(0.0, first - arrived - shift))
                    state.observed["e2e"].append(max(0.0, end - arrived - shift))
                    if n_out > 1:
                        state.observed["tpot"].append((end - first) / (n_out - 1))
                if fault != "finish_no_done" and not cfg.openai_only:
                    yield b"data: [DONE]\n\n"
            finally:
                state.running -= 1

        return StreamingResponse(gen(), media_type="text/event-stream")

    async def chat(request: Request) -> Response:
        return await generate(request, chat=True)

    async def completions(request: Request) -> Response:
        return await generate(request, chat=False)

    vllm_only = [Route("/version", version), Route("/metrics", metrics), Route("/tokenize", tokenize, methods=["POST"]),
                 Route("/detokenize", detokenize, methods=["POST"])]
    app = Starlette(routes=[
        Route("/health", health), Route("/v1/models", models),
        *([] if cfg.openai_only else vllm_only),
        Route("/v1/chat/completions", chat, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
    ])
    return app, state


# vLLM's buckets (vllm/v1/metrics/loggers.py): TTFT, per-output-token time, request latency.
_BUCKETS = {
    "vllm:time_to_first_token_seconds": ("ttft", [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                                  1.0, 2.5, 5.0, 7.5, 10.0]),
    "vllm:request_time_per_output_token_seconds": ("tpot", [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4,
                                                            0.5, 0.75, 1.0, 2.5]),
    "vllm:e2e_request_latency_seconds": ("e2e", [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0]),
}


def _histograms(observed: dict[str, list[float]]) -> str:
    out = []
    for name, (key, bounds) in _BUCKETS.items():
        values = observed[key]
        out.append(f"# TYPE {name} histogram\n")
        for le in bounds:
            out.append(f'{name}_bucket{{engine="0",le="{le}",model_name="m"}} {float(sum(v <= le for v in values))}\n')
        out.append(f'{name}_bucket{{engine="0",le="+Inf",model_name="m"}} {float(len(values))}\n')
        out.append(f'{name}_count{{engine="0",model_name="m"}} {float(len(values))}\n')
        out.append(f'{name}_sum{{engine="0",model_name="m"}} {sum(values)}\n')
    return "".join(out)


def html_app() -> Starlette:
    """A web server that is not vLLM: every path is an HTML page or a 404."""

    async def page(request: Request) -> Response:
        if request.url.path == "/":
            return HTMLResponse("<!doctype html><html><body>Welcome to nginx!</body></html>")
        return HTMLResponse("<html><body><h1>404 Not Found</h1></body></html>", status_code=404)

    return Starlette(routes=[Route("/{path:path}", page, methods=["GET", "POST"])])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerThread:
    """Runs an ASGI app with uvicorn on 127.0.0.1 in a daemon thread."""

    def __init__(self, app: Starlette) -> None:
        self.port = free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="error", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)


class FakeVLLM(ServerThread):
    def __init__(self, cfg: FakeConfig | None = None) -> None:
        self.cfg = cfg or FakeConfig()
        app, self.state = build_app(self.cfg)
        super().__init__(app)
