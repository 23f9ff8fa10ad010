"""A minimal, fast vLLM-like HTTP/1.1 server on raw asyncio (uvloop) for client benchmarks.

The uvicorn fake (fake_vllm.py) is right for behaviour tests but would itself be the bottleneck
when measuring a load generator. This one parses just enough HTTP/1.1 (keep-alive,
Content-Length bodies), answers the endpoints a benchmark client touches (/v1/models, /tokenize,
/detokenize, /health, /version, /metrics, /v1/completions, /v1/chat/completions) and streams:

- ``--ttft-ms 0`` (instant): the whole SSE body in one write;
- ``--ttft-ms D``: headers and the role chunk at once, the first token D ms after the request
  arrived, the rest at once (``--itl-ms 0``) or one token every ``--itl-ms`` ms after that.

For TTFT accuracy it records the *server's* truth for each generation request: first-token write
time minus request arrival (``perf_counter``), served as JSON at GET /truth (and reset by
DELETE /truth). GET /cpu reports the fake's own CPU seconds, so a benchmark can show the fake was
not the bottleneck. Tokenization is one token per character, like fake_vllm.

    python -m tests.fakes.fast_fake --port 0 --ttft-ms 50 --itl-ms 20   # prints READY <url>
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

MODEL = "fake-model"
MAX_MODEL_LEN = 1 << 20


class State:
    def __init__(self, ttft_ms: float, chat_overhead: int, itl_ms: float = 0.0) -> None:
        self.ttft = ttft_ms / 1000.0
        self.itl = itl_ms / 1000.0
        self.chat_overhead = chat_overhead
        self.truth: list[float] = []
        self.requests = 0


def _sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _response(status: str, body: bytes, ctype: bytes = b"application/json") -> bytes:
    return (b"HTTP/1.1 " + status.encode() + b"\r\ncontent-type: " + ctype + b"\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


class Proto(asyncio.Protocol):
    def __init__(self, state: State) -> None:
        self.state = state
        self.buf = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buf += data
        while True:
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buf[:end].decode("latin-1")
            lines = head.split("\r\n")
            method, path, _ = lines[0].split(" ", 2)
            length = 0
            for line in lines[1:]:
                k, _, v = line.partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v.strip())
            if len(self.buf) < end + 4 + length:
                return
            body = self.buf[end + 4:end + 4 + length]
            self.buf = self.buf[end + 4 + length:]
            self.handle(method, path, body, time.perf_counter())

    def handle(self, method: str, path: str, body: bytes, arrived: float) -> None:
        t = self.transport
        assert t is not None
        st = self.state
        if path == "/health":
            t.write(_response("200 OK", b""))
        elif path == "/version":
            t.write(_response("200 OK", b'{"version":"0.32.0"}'))
        elif path == "/v1/models":
            data = {"object": "list", "data": [{"id": MODEL, "object": "model", "root": MODEL, "owned_by": "vllm",
                                                "max_model_len": MAX_MODEL_LEN}]}
            t.write(_response("200 OK", json.dumps(data).encode()))
        elif path == "/metrics":
            text = f'vllm:num_requests_running{{engine="0",model_name="{MODEL}"}} 0.0\n'
            t.write(_response("200 OK", text.encode(), b"text/plain; version=0.0.4"))
        elif path == "/cpu":
            t.write(_response("200 OK", json.dumps({"cpu_seconds": time.process_time(), "requests": st.requests})
                              .encode()))
        elif path == "/truth":
            if method == "DELETE":
                st.truth.clear()
            t.write(_response("200 OK", json.dumps(st.truth).encode()))
        elif path == "/tokenize":
            req = json.loads(body)
            if "messages" in req:
                text = "".join(str(m.get("content", "")) for m in req["messages"])
                toks = [ord(c) % 512 for c in text] + [1] * st.chat_overhead
            else:
                toks = [ord(c) % 512 for c in req.get("prompt", "")]
            t.write(_response("200 OK", json.dumps({"count": len(toks), "tokens": toks,
                                                    "max_model_len": MAX_MODEL_LEN}).encode()))
        elif path == "/detokenize":
            req = json.loads(body)
            t.write(_response("200 OK", json.dumps({"prompt": "".join(chr(97 + x % 26) for x in req["tokens"])})
                              .encode()))
        elif path in ("/v1/completions", "/v1/chat/completions"):
            self.generate(path.endswith("chat/completions"), json.loads(body), arrived)
        else:
            t.write(_response("404 Not Found", b'{"error":"not found"}'))

    def generate(self, chat: bool, req: dict, arrived: float) -> None:
        st = self.state
        st.requests += 1
        if chat:
            prompt_tokens = sum(len(str(m.get("content", ""))) for m in req["messages"]) + st.chat_overhead
            obj = "chat.completion.chunk"
        else:
            p = req.get("prompt", "")
            prompt_tokens = len(p) if isinstance(p, str) else len(p)
            obj = "text_completion"
        n = int(req.get("max_tokens") or 16)

        def choice(text: str | None, finish: str | None = None, role: bool = False) -> dict:
            if chat:
                delta = {"role": "assistant", "content": ""} if role else {"content": text}
                return {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
            return {"index": 0, "text": text or "", "logprobs": None, "finish_reason": finish}

        head = [_sse({"id": "x", "object": obj, "model": MODEL, "choices": [choice(None, role=True)]})] if chat else []
        tokens = [_sse({"id": "x", "object": obj, "model": MODEL,
                        "choices": [choice("ab"[i % 2], "length" if i == n - 1 else None)]}) for i in range(n)]
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n}
        tail = [_sse({"id": "x", "object": obj, "model": MODEL, "choices": [], "usage": usage}), b"data: [DONE]\n\n"]
        t = self.transport
        assert t is not None
        if st.ttft <= 0:
            t.write(STREAM_HEAD + _chunked(b"".join(head + tokens + tail)) + b"0\r\n\r\n")
            st.truth.append(time.perf_counter() - arrived)
            return
        t.write(STREAM_HEAD + (_chunked(b"".join(head)) if head else b""))
        loop = asyncio.get_running_loop()

        itl = st.itl

        def first() -> None:
            if t.is_closing():
                return
            t.write(_chunked(tokens[0]))
            st.truth.append(time.perf_counter() - arrived)
            if itl <= 0 or n == 1:
                t.write(_chunked(b"".join(tokens[1:] + tail)) + b"0\r\n\r\n")
                return
            start = loop.time()
            for i in range(1, n):  # token i at first + i × ITL, the last one with the usage and [DONE]
                data = _chunked(tokens[i]) if i < n - 1 else _chunked(b"".join(tokens[i:] + tail)) + b"0\r\n\r\n"
                loop.call_at(start + i * itl, _write_if_open, t, data)

        # call_at on the loop's clock keeps the injected delay exact up to loop scheduling.
        loop.call_at(loop.time() + st.ttft - (time.perf_counter() - arrived), first)


def _write_if_open(t: asyncio.Transport, data: bytes) -> None:
    if not t.is_closing():
        t.write(data)


async def serve(host: str, port: int, state: State) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Proto(state), host, port, backlog=4096)
    sock = server.sockets[0].getsockname()
    print(f"READY http://{sock[0]}:{sock[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--ttft-ms", type=float, default=0.0)
    p.add_argument("--itl-ms", type=float, default=0.0)
    p.add_argument("--chat-overhead", type=int, default=8)
    args = p.parse_args(argv)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(serve(args.host, args.port, State(args.ttft_ms, args.chat_overhead, args.itl_ms)))


if __name__ == "__main__":
    main()
