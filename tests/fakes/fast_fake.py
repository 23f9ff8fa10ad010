"""A minimal, fast vLLM-like HTTP/1.1 server on raw asyncio (uvloop) for client benchmarks.

The uvicorn fake (fake_vllm.py) is right for behaviour tests but would itself be the bottleneck
when measuring a load generator. This one parses just enough HTTP/1.1 (keep-alive,
Content-Length bodies), answers the endpoints a benchmark client touches (/v1/models, /tokenize,
/detokenize, /health, /version, /metrics, /v1/completions, /v1/chat/completions) and streams:

- ``--ttft-ms 0`` (instant): the whole SSE body in one write;
- ``--ttft-ms D``: headers and the role chunk at once, the first token D ms after the request
  arrived, the rest at once (``--itl-ms 0``) or one token every ``--itl-ms`` ms after that.

For TTFT accuracy it records the *server's* truth for each generation request: first-token write
time minus request arrival, served as JSON at GET /truth in order of request arrival (and reset by
DELETE /truth). Both ends
are on CLOCK_REALTIME and independent of when this process got a CPU: the arrival is the kernel's
receive timestamp of the read that completed the request (``SO_TIMESTAMPNS`` via ``recvmsg``;
Linux, else the clock right after the read), and the write time is read immediately before the
``send`` call that puts the first token on the wire. The injected delay counts from the kernel's
arrival too, so the fake's own scheduling lag is inside the truth, not hidden from it. Sockets are
raw non-blocking ones on ``loop.add_reader`` (asyncio transports do not expose ancillary data).
GET /cpu reports the fake's own CPU seconds, so a benchmark can show the fake was not the
bottleneck. Tokenization is one token per character, like fake_vllm.

    python -m tests.fakes.fast_fake --port 0 --ttft-ms 50 --itl-ms 20   # prints READY <url>
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import socket
import struct
import sys
import time

MODEL = "fake-model"
MAX_MODEL_LEN = 1 << 20


class State:
    def __init__(self, ttft_ms: float, chat_overhead: int, itl_ms: float = 0.0) -> None:
        self.ttft = ttft_ms / 1000.0
        self.itl = itl_ms / 1000.0
        self.chat_overhead = chat_overhead
        self.truth: list[tuple[int, float]] = []  # (request arrival ns, first-token write − arrival s)
        self.requests = 0


def _sse(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _response(status: str, body: bytes, ctype: bytes = b"application/json") -> bytes:
    return (b"HTTP/1.1 " + status.encode() + b"\r\ncontent-type: " + ctype + b"\r\ncontent-length: "
            + str(len(body)).encode() + b"\r\n\r\n" + body)


STREAM_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _chunked(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


# SO_TIMESTAMPNS_NEW / _OLD (asm-generic numbering; kept independent of the client's code under test).
_TS = ((64, struct.Struct("qq")), (35, struct.Struct("@ll")))
_ARCH_OK = platform.machine().lower() in {"x86_64", "amd64", "aarch64", "arm64", "riscv64", "s390x", "ppc64le"}


def _stamping(sock: socket.socket) -> tuple[int, struct.Struct] | None:
    if sys.platform != "linux" or not _ARCH_OK:
        return None
    for opt, layout in _TS:
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, 1)
        except OSError:
            continue
        return opt, layout
    return None


class Conn:
    """A non-blocking socket with just what Proto needs from a transport: write, is_closing."""

    def __init__(self, sock: socket.socket, loop: asyncio.AbstractEventLoop, proto: Proto) -> None:
        self.sock, self.loop, self.proto = sock, loop, proto
        self.fd = sock.fileno()
        self.stamping = _stamping(sock)
        self.anc = socket.CMSG_SPACE(16) if self.stamping else 0
        self.wbuf = b""
        self.closed = False
        proto.transport = self
        loop.add_reader(self.fd, self.readable)

    def readable(self) -> None:
        try:
            data, anc, _, _ = self.sock.recvmsg(262144, self.anc)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self.close()
            return
        arrived = time.time_ns()
        if not data:
            self.close()
            return
        if self.stamping:
            for level, kind, raw in anc:
                if level == socket.SOL_SOCKET and kind == self.stamping[0]:
                    sec, nsec = self.stamping[1].unpack_from(raw)
                    arrived = min(arrived, sec * 1_000_000_000 + nsec)
        self.proto.data_received(data, arrived)

    def write(self, data: bytes) -> int:
        """Send now (or queue behind unsent bytes); returns CLOCK_REALTIME ns read right before the send."""
        now = time.time_ns()
        if self.closed:
            return now
        if self.wbuf:
            self.wbuf += data
            return now
        try:
            n = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError:
            self.close()
            return now
        if n < len(data):
            self.wbuf = data[n:]
            self.loop.add_writer(self.fd, self.writable)
        return now

    def writable(self) -> None:
        data, self.wbuf = self.wbuf, b""
        self.loop.remove_writer(self.fd)
        self.write(data)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.loop.remove_reader(self.fd)
        if self.wbuf:
            self.loop.remove_writer(self.fd)
        self.sock.close()


class Proto:
    def __init__(self, state: State) -> None:
        self.state = state
        self.buf = b""
        self.transport: Conn | None = None

    def data_received(self, data: bytes, arrived: int) -> None:
        """Bytes that arrived at ``arrived`` (CLOCK_REALTIME ns, the kernel's stamp where available)."""
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
            self.handle(method, path, body, arrived)

    def handle(self, method: str, path: str, body: bytes, arrived: int) -> None:
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
            # In request-arrival order, so a benchmark can drop exactly the first wave (its warm-up).
            t.write(_response("200 OK", json.dumps([v for _, v in sorted(st.truth)]).encode()))
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

    def generate(self, chat: bool, req: dict, arrived: int) -> None:
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
            wrote = t.write(STREAM_HEAD + _chunked(b"".join(head + tokens + tail)) + b"0\r\n\r\n")
            st.truth.append((arrived, (wrote - arrived) * 1e-9))
            return
        t.write(STREAM_HEAD + (_chunked(b"".join(head)) if head else b""))
        loop = asyncio.get_running_loop()

        itl = st.itl

        def first() -> None:
            if t.is_closing():
                return
            wrote = t.write(_chunked(tokens[0]))
            st.truth.append((arrived, (wrote - arrived) * 1e-9))
            if itl <= 0 or n == 1:
                t.write(_chunked(b"".join(tokens[1:] + tail)) + b"0\r\n\r\n")
                return
            # Token i at first + i × ITL, the last one with the usage and [DONE]. One timer chain per stream,
            # each write arming the next: never one call_at per token. uvloop turns an overdue call_at into
            # call_soon, which runs after the due timers of the next iteration, so a stall while scheduling
            # reordered a stream (its terminating chunk before a token: the client's "bad status line b'8a'").
            pieces = [_chunked(tok) for tok in tokens[1:n - 1]] + [_chunked(b"".join(tokens[n - 1:] + tail))
                                                                   + b"0\r\n\r\n"]
            start = loop.time()

            def step(i: int) -> None:  # piece i is due: write it and any later ones due by now, re-arm
                if t.is_closing():
                    return
                t.write(pieces[i])
                i += 1
                now = loop.time()
                while i < len(pieces) and start + (i + 1) * itl <= now + 0.0005:
                    t.write(pieces[i])
                    i += 1
                if i < len(pieces):
                    loop.call_at(start + (i + 1) * itl, step, i)

            loop.call_at(start + itl, step, 0)

        # The delay counts from the kernel's arrival; call_at keeps it exact up to loop scheduling.
        loop.call_at(loop.time() + st.ttft - (time.time_ns() - arrived) * 1e-9, first)


async def serve(host: str, port: int, state: State) -> None:
    loop = asyncio.get_running_loop()
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(4096)
    listener.setblocking(False)

    def accept() -> None:
        while True:
            try:
                sock, _ = listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            sock.setblocking(False)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            Conn(sock, loop, Proto(state))

    loop.add_reader(listener.fileno(), accept)
    name = listener.getsockname()
    print(f"READY http://{name[0]}:{name[1]}", flush=True)
    await asyncio.Event().wait()


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
