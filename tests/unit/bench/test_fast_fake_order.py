"""The fast fake writes one stream's chunks in order even when its event loop stalls (the 8a failure's cause).

"bad status line b'8a'" (one of 1,024 requests in the TTFT benchmark at load ~7) was a token chunk of an
earlier response (0x8a bytes: one completions token event) arriving after that response's terminating
chunk. The fake scheduled every token with ``loop.call_at(start + i × ITL)``; uvloop turns an already
overdue ``call_at`` into ``call_soon``, and in the next loop iteration the due timers run *before* the
``call_soon`` queue. So when the fake was descheduled while scheduling token 1 (token 1 overdue: queued
with ``call_soon``) and the rest of that iteration outlasted the stream (other streams' work), the last
chunk, ``0\\r\\n\\r\\n`` included, went out before token 1. The client read the response's end, sent its next
request on the kept-alive connection, then read token 1's chunk as that request's status line.

Here the stall is made on purpose (a descheduled process: ``time.sleep`` while the fake builds a chunk),
on the fake's real classes over a socket pair, on uvloop like the benchmark runs it.
"""

from __future__ import annotations

import json
import socket
import time

import pytest
from tests.fakes import fast_fake

uvloop = pytest.importorskip("uvloop")


def _read_all(sock: socket.socket, deadline: float) -> bytes:
    sock.setblocking(False)
    out = b""
    while time.monotonic() < deadline:
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            time.sleep(0.005)
            continue
        if not data:
            break
        out += data
        if out.endswith(b"0\r\n\r\n"):
            break
    return out


def test_token_chunks_stay_in_order_when_the_loop_stalls(monkeypatch: pytest.MonkeyPatch) -> None:
    n, itl_ms = 3, 40
    real_chunked = fast_fake._chunked
    stalled: list[int] = []

    def descheduled_while_building(data: bytes) -> bytes:
        # Each stream's token 1 ("b") is built 60 ms late: it is overdue (due at +40 ms) when scheduled,
        # and the other stream's stall keeps this loop iteration going past the last chunk's time (+80 ms).
        if b'"text":"b"' in data and len(stalled) < 2:
            stalled.append(1)
            time.sleep(0.06)
        return real_chunked(data)

    monkeypatch.setattr(fast_fake, "_chunked", descheduled_while_building)
    state = fast_fake.State(ttft_ms=0.001, chat_overhead=0, itl_ms=itl_ms)
    body = json.dumps({"model": fast_fake.MODEL, "prompt": "abcd", "max_tokens": n, "stream": True}).encode()
    request = b"POST /v1/completions HTTP/1.1\r\nhost: x\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    pairs = [socket.socketpair() for _ in range(2)]
    for client, _ in pairs:
        client.sendall(request)  # both requests wait before the loop starts: read in one loop iteration
    got: list[bytes] = []

    async def main() -> None:
        import asyncio

        loop = asyncio.get_running_loop()
        for _, server in pairs:
            server.setblocking(False)
            fast_fake.Conn(server, loop, fast_fake.Proto(state))
        await asyncio.sleep(0.6)

    uvloop.run(main())
    for client, server in pairs:
        got.append(_read_all(client, time.monotonic() + 2))
        client.close()
        server.close()
    for data in got:
        head, _, body_bytes = data.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200")
        # The body ends with the terminating chunk, and nothing follows it.
        assert body_bytes.endswith(b"0\r\n\r\n")
        assert body_bytes.count(b"0\r\n\r\n") == 1
        texts = [json.loads(line[6:])["choices"][0]["text"]
                 for line in body_bytes.split(b"\n") if line.startswith(b"data: {") and b'"text"' in line
                 and b'"choices":[]' not in line]
        assert texts == ["a", "b", "a"][:n], texts
