"""Framing fuzz for the raw HTTP/1.1 transport (bench/rawhttp.py), against a real socket server.

The server is an asyncio server on 127.0.0.1 that answers each request with scripted bytes: it writes
one piece, waits until the client has read it (the transport's own read trace), then writes the next, so
every split the test asks for is a split the client's parser sees. Cases: a response split at every
offset, one byte per read, chunk extensions and trailers, a 1xx (100 Continue, 103 Early Hints) before
the response, ``Connection: close`` mid-run, a server that closes an idle kept-alive connection, bytes
after a response's end (in the same read as the end or later), and the one failure seen in the TTFT
benchmark, "bad status line b'8a'" (a token chunk of an earlier response read as a status line).
Every case runs on both of the transport's paths: raw sockets with kernel stamps, asyncio transports.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable

import pytest

from inferctl.bench import rawhttp
from inferctl.bench.rawhttp import RawTransport
from inferctl.config import Target

PATHS = [pytest.param(False, id="asyncio-transport"),
         pytest.param(True, id="kernel-stamps", marks=pytest.mark.skipif(
             not rawhttp.kernel_timestamps_possible(), reason="raw sockets with SO_TIMESTAMPNS are Linux-only"))]

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def event(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def token(i: int) -> bytes:
    """A completions token event like the fast fake's (its chunk is 0x8a bytes, as in the reported failure)."""
    return event({"id": "x", "object": "text_completion", "model": "fake-model",
                  "choices": [{"index": 0, "text": "ab"[i % 2], "logprobs": None, "finish_reason": None}]})


def tail(n: int) -> bytes:
    return (event({"id": "x", "object": "text_completion", "model": "fake-model", "choices": [],
                   "usage": {"prompt_tokens": 4, "completion_tokens": n, "total_tokens": 4 + n}})
            + b"data: [DONE]\n\n")


def chunk(data: bytes, ext: bytes = b"") -> bytes:
    return f"{len(data):x}".encode() + ext + b"\r\n" + data + b"\r\n"


def sse_response(n: int = 3, *, ext: bool = False, trailers: bool = False, head: bytes = HEAD) -> bytes:
    """A streamed completion of ``n`` tokens, one chunk per token, usage and [DONE] in the last chunk."""
    x = b";name=value;q=\"quoted\"" if ext else b""
    body = b"".join(chunk(token(i), x) for i in range(n)) + chunk(tail(n), x)
    end = b"0" + x + b"\r\n" + (b"x-trailer: 1\r\nserver-timing: total;dur=5\r\n" if trailers else b"") + b"\r\n"
    return head + body + end


CLOSE = object()  # a step: the server closes the connection


class Server:
    """Answers request k (over all connections, in arrival order) with ``script(k)``: byte pieces and CLOSE.

    Each piece is written, then the server waits until the client has read it, so pieces arrive as separate
    reads. Counts connections and requests; ``fail`` keeps the first error of the server's own.
    """

    def __init__(self, script: Callable[[int], list], tr_box: list) -> None:
        self.script = script
        self.tr_box = tr_box
        self.requests = 0
        self.connections = 0
        self.server: asyncio.AbstractServer | None = None
        self.writers: list[asyncio.StreamWriter] = []

    async def start(self) -> int:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return self.server.sockets[0].getsockname()[1]

    async def settle(self, before: int) -> None:
        """Wait until the client has read again (or a moment, when it will not: e.g. it closed)."""
        tr = self.tr_box[0]
        for _ in range(200):
            await asyncio.sleep(0)
            if len(tr.trace) > before:
                return
        for _ in range(200):  # a loaded machine: up to ~1 s
            if len(tr.trace) > before:
                return
            await asyncio.sleep(0.005)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                length = 0
                for line in head.split(b"\r\n"):
                    k, _, v = line.partition(b":")
                    if k.strip().lower() == b"content-length":
                        length = int(v)
                await reader.readexactly(length)
                k = self.requests
                self.requests += 1
                for step in self.script(k):
                    if step is CLOSE:
                        writer.close()
                        return
                    before = len(self.tr_box[0].trace)
                    writer.write(step)
                    await writer.drain()
                    await self.settle(before)
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.writers:
            w.close()


def run(script: Callable[[int], list], n: int, kernel: bool, *, concurrency: int = 1,
        between: Callable[[int], object] | None = None) -> tuple[list, Server]:
    """Send ``n`` requests (``concurrency`` at a time, each worker sequentially) and return the results."""

    async def main():
        box: list = []
        server = Server(script, box)
        port = await server.start()
        tr = RawTransport(Target(name="t", url=f"http://127.0.0.1:{port}"), timeout=5, kernel_timestamps=kernel)
        tr.trace = []
        box.append(tr)
        results: list = [None] * n
        counter = iter(range(n))

        async def worker():
            for i in counter:
                results[i] = await tr.post("/v1/completions", b'{"prompt":"abcd"}')
                if between is not None:
                    w = between(i)
                    if w is not None:
                        await w

        try:
            await asyncio.wait_for(asyncio.gather(*(worker() for _ in range(concurrency))), 60)
        finally:
            await tr.aclose()
            await server.stop()
        return results, server

    return asyncio.run(main())


def assert_ok(results: list, n_tokens: int = 3) -> None:
    bad = [(i, r.status, r.error) for i, r in enumerate(results) if r.status != "ok"]
    assert not bad, bad[:5]
    for r in results:
        assert r.completion_tokens == n_tokens
        assert len(r.chunk_times) == n_tokens


# -- splits ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", PATHS)
def test_split_at_every_offset_on_one_kept_alive_connection(kernel: bool) -> None:
    resp = sse_response(3, ext=True, trailers=True)
    offsets = list(range(1, len(resp)))
    results, server = run(lambda k: [resp[:offsets[k]], resp[offsets[k]:]], len(offsets), kernel)
    assert_ok(results)
    assert server.connections == 1  # every response ended exactly where it should: the connection was reused
    # Each piece was a read of its own (a very loaded machine may still merge a rare pair: allow 1%).
    assert len(server.tr_box[0].trace) >= 2 * len(offsets) * 0.99


@pytest.mark.parametrize("kernel", PATHS)
def test_one_byte_per_read(kernel: bool) -> None:
    resp = b"HTTP/1.1 100 Continue\r\n\r\n" + sse_response(2, ext=True, trailers=True)
    results, server = run(lambda k: [resp[i:i + 1] for i in range(len(resp))], 2, kernel)
    assert_ok(results, 2)
    assert server.connections == 1


@pytest.mark.parametrize("kernel", PATHS)
def test_random_multi_way_splits(kernel: bool) -> None:
    rng = random.Random(13)
    variants = [sse_response(1), sse_response(4, ext=True), sse_response(4, trailers=True),
                b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n" + sse_response(4)]
    scripts = []
    for k in range(300):
        resp = variants[k % len(variants)]
        cuts = sorted(rng.sample(range(1, len(resp)), rng.randint(2, 12)))
        scripts.append([resp[a:b] for a, b in zip([0, *cuts], [*cuts, len(resp)], strict=True)])
    results, server = run(lambda k: scripts[k], len(scripts), kernel)
    for k, r in enumerate(results):
        assert r.status == "ok", (k, r.error)
        assert r.completion_tokens == (1 if k % 4 == 0 else 4)
        assert r.http_status == 200
    assert server.connections == 1


@pytest.mark.parametrize("kernel", PATHS)
def test_final_chunk_split_inside_its_crlfs(kernel: bool) -> None:
    resp = sse_response(2)
    end = len(resp) - len(b"0\r\n\r\n")
    splits = [end + 1, end + 2, end + 3, end + 4]  # 0|\r\n\r\n, 0\r|\n\r\n, 0\r\n|\r\n, 0\r\n\r|\n
    results, server = run(lambda k: [resp[:splits[k % 4]], resp[splits[k % 4]:]], 8, kernel)
    assert_ok(results, 2)
    assert server.connections == 1


# -- informational responses, errors -----------------------------------------------------------------------


@pytest.mark.parametrize("kernel", PATHS)
def test_1xx_before_the_response_in_one_read_and_apart(kernel: bool) -> None:
    early = b"HTTP/1.1 103 Early Hints\r\nlink: </a.js>; rel=preload\r\n\r\n"
    cont = b"HTTP/1.1 100 Continue\r\n\r\n"
    resp = sse_response(3)
    scripts = [[cont + resp], [cont, resp], [early + cont + resp], [early, cont, resp[:5], resp[5:]]]
    results, server = run(lambda k: scripts[k], len(scripts), kernel)
    assert_ok(results)
    assert all(r.http_status == 200 for r in results)
    assert server.connections == 1


@pytest.mark.parametrize("kernel", PATHS)
def test_error_responses_keep_the_connection_in_step(kernel: bool) -> None:
    body = b'{"error":{"message":"bad request"}}'
    err_len = b"HTTP/1.1 400 Bad Request\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    err_chunked = b"HTTP/1.1 503 Service Unavailable\r\ntransfer-encoding: chunked\r\n\r\n" + chunk(body) + b"0\r\n\r\n"
    ok = sse_response(3)
    scripts = [[err_len[:30], err_len[30:]], [ok], [err_chunked[:50], err_chunked[50:]], [ok]]
    results, server = run(lambda k: scripts[k], 4, kernel)
    assert [r.status for r in results] == ["http_error", "ok", "http_error", "ok"]
    assert [r.http_status for r in results] == [400, 200, 503, 200]
    assert results[0].error == "bad request"
    assert server.connections == 1


# -- connection lifetime -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", PATHS)
def test_connection_close_mid_run(kernel: bool) -> None:
    closing = sse_response(3, head=HEAD.replace(b"\r\n\r\n", b"\r\nconnection: close\r\n\r\n"))
    ok = sse_response(3)
    # Every third response says Connection: close and the server closes after it.
    results, server = run(lambda k: [closing, CLOSE] if k % 3 == 2 else [ok], 30, kernel, concurrency=4)
    assert_ok(results)
    assert server.requests == 30


@pytest.mark.parametrize("kernel", PATHS)
def test_server_closing_idle_connections_costs_no_request(kernel: bool) -> None:
    """A server with a short keep-alive timeout closes the connection right after a response (no header says
    so); the next request on that connection is never answered, and must be retried on a new one."""
    ok = sse_response(3)
    results, server = run(lambda k: [ok, CLOSE] if k % 2 == 0 else [ok], 40, kernel)
    assert_ok(results)
    tr = server.tr_box[0]
    assert 1 <= tr.retried <= 20  # requests that met a connection the server had just closed went again
    assert server.requests == 40  # each was answered once: on the new connection


@pytest.mark.parametrize("kernel", PATHS)
def test_server_closing_idle_connections_while_the_client_waits(kernel: bool) -> None:
    """The idle close arrives while the client is idle (it reads the FIN first), and concurrently."""
    ok = sse_response(3)
    results, server = run(lambda k: [ok, CLOSE] if k % 3 else [ok], 60, kernel, concurrency=6,
                          between=lambda i: asyncio.sleep(0.002))
    assert_ok(results)


# -- bytes after a response's end --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", PATHS)
def test_bytes_after_the_end_in_the_same_read_retire_the_connection(kernel: bool) -> None:
    """Back-to-back: the end of a response and more bytes in one read. The client never pipelines, so the
    extra bytes are not an answer to anything: that request is complete, the connection is not reused."""
    ok = sse_response(3)
    stray = chunk(token(7))  # b"8a\r\n..."
    results, server = run(lambda k: [ok + stray] if k % 2 == 0 else [ok], 10, kernel)
    assert_ok(results)
    # Requests 0, 2, 4, 6, 8 each end their connection (request k + 1 opens the next): six in all.
    assert server.connections == 6


@pytest.mark.parametrize("kernel", PATHS)
def test_bad_status_line_8a_reproduced(kernel: bool) -> None:
    """The TTFT benchmark's one failure: "bad status line b'8a'". A token chunk of an earlier response (0x8a
    bytes) arrives on the kept-alive connection after that response's terminating chunk (the fast fake wrote
    it late: tests/unit/bench/test_fast_fake_order.py), here just after the client sent its next request on
    the same connection. It must not be taken for that request's status line: the request was not answered
    and goes again on a new connection; the connection that is out of step is not used again."""
    ok = sse_response(3)
    stray = chunk(token(7))
    half = len(stray) // 2

    def script(k: int) -> list:
        return [ok, stray[:half]] if k % 2 == 0 else [stray[half:] + ok]

    results, server = run(script, 10, kernel)
    errors = [r.error for r in results if r.status != "ok"]
    assert not errors, errors
    assert_ok(results)
    assert server.tr_box[0].retried >= 1 and server.tr_box[0].stray >= 1  # the leftovers were seen, not hidden


@pytest.mark.parametrize("kernel", PATHS)
def test_late_bytes_while_idle_retire_the_connection(kernel: bool) -> None:
    """A late chunk that arrives while the connection is idle: that connection is not used again."""
    ok = sse_response(3)
    stray = chunk(token(7))

    async def wait_idle() -> None:
        await asyncio.sleep(0.02)  # the stray bytes arrive and are read while nothing is in flight

    results, server = run(lambda k: [ok, stray], 4, kernel, between=lambda i: wait_idle())
    assert_ok(results)
    assert server.connections == 4


@pytest.mark.parametrize("kernel", PATHS)
def test_a_cancelled_request_does_not_fail_the_next_one_on_its_connection(kernel: bool) -> None:
    """A task cancelled after its response resolved (but before it resumed) must not fail the request that
    reused its connection in the meantime."""
    ok = sse_response(3)

    async def main():
        box: list = []
        server = Server(lambda k: [ok], box)
        port = await server.start()
        tr = RawTransport(Target(name="t", url=f"http://127.0.0.1:{port}"), timeout=5, kernel_timestamps=kernel)
        tr.trace = []
        box.append(tr)
        try:
            first = asyncio.create_task(tr.post("/v1/completions", b"{}"))
            while not tr._idle:  # noqa: ASYNC110 - the response resolved; `first` has not resumed yet
                await asyncio.sleep(0)
            assert not first.done()
            first.cancel()
            # Awaited directly: post() takes the idle connection and sends before `first` resumes.
            second = await tr.post("/v1/completions", b"{}")
            with pytest.raises(asyncio.CancelledError):
                await first
            return second, server
        finally:
            await tr.aclose()
            await server.stop()

    result, server = asyncio.run(main())
    assert result.status == "ok", result.error
    assert server.connections == 1
