"""The raw transport's chunk times: the kernel's receive stamps on Linux, monotone, never after the userland read.

The server here is a plain socket driven by the test, so the order of events is fixed by the test, not by
timing: the response is written, then the event loop is blocked before the client can read it. The
kernel stamped the bytes when they were written; the userland read comes after the block.
"""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time

import pytest

from inferctl.bench import rawhttp
from inferctl.bench.rawhttp import RawTransport
from inferctl.config import Target

linux_only = pytest.mark.skipif(not rawhttp.kernel_timestamps_possible(), reason="SO_TIMESTAMPNS is Linux-only")

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _event(text: str | None = None, usage: dict | None = None) -> bytes:
    obj: dict = {"choices": [{"index": 0, "text": text, "finish_reason": None}]} if text is not None else {}
    if usage is not None:
        obj = {"choices": [], "usage": usage}
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


async def _accept(listener: socket.socket) -> socket.socket:
    while True:
        try:
            conn, _ = listener.accept()
        except BlockingIOError:
            await asyncio.sleep(0.001)
            continue
        conn.setblocking(False)
        return conn


async def _read_request(conn: socket.socket) -> bytes:
    buf = b""
    while b"\r\n\r\n" not in buf or not buf.endswith(b"{}"):
        try:
            buf += conn.recv(65536)
        except BlockingIOError:
            await asyncio.sleep(0.001)
    return buf


async def _reads(tr: RawTransport, n: int) -> None:
    """Let the client's loop run until it has read ``n`` times (each packet then is read on its own)."""
    assert tr.trace is not None
    while len(tr.trace) < n:  # noqa: ASYNC110 - polling the transport's own trace, no event to wait on
        await asyncio.sleep(0.001)


async def _late_read(kernel_timestamps: bool | None, block: float = 0.05):
    """One streamed request; the first token is written, then the loop is blocked for ``block`` seconds."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    port = listener.getsockname()[1]
    tr = RawTransport(Target(name="t", url=f"http://127.0.0.1:{port}"), timeout=30,
                      kernel_timestamps=kernel_timestamps)
    tr.trace = []
    task = asyncio.create_task(tr.post("/v1/completions", b"{}"))
    conn = await _accept(listener)
    try:
        await _read_request(conn)
        conn.setblocking(True)
        conn.sendall(HEAD + _chunk(_event("a")))
        written = time.perf_counter()  # the kernel stamped the bytes before send returned (loopback)
        time.sleep(block)  # noqa: ASYNC251 - deliberately block the loop: the client cannot read
        await _reads(tr, 1)
        conn.sendall(_chunk(_event("b")))
        await _reads(tr, 2)
        conn.sendall(_chunk(_event("c") + _event(usage={"prompt_tokens": 1, "completion_tokens": 3})
                            + b"data: [DONE]\n\n") + b"0\r\n\r\n")
        result = await task
    finally:
        conn.close()
        listener.close()
        await tr.aclose()
    return tr, result, written


@linux_only
def test_kernel_stamps_are_used_and_precede_the_userland_read() -> None:
    tr, r, written = asyncio.run(_late_read(None, block=0.05))
    assert tr.raw_sockets
    assert r.ok, r.error
    assert tr.kernel_stamps >= 1
    assert tr.clamped == 0
    # The first token's time is the kernel's arrival, not the read after the blocked loop.
    first_read_kernel, first_read_user = tr.trace[0]
    assert first_read_user >= written + 0.05
    assert r.first_token_time == first_read_kernel
    assert r.first_token_time <= written + 0.001  # stamped while send() ran (1 ms slack for the clock offset)
    assert r.send_time <= r.first_token_time


@linux_only
def test_chunk_times_are_kernel_stamps_monotone_and_never_after_the_read() -> None:
    tr, r, _ = asyncio.run(_late_read(None, block=0.01))
    assert r.ok, r.error
    assert len(r.chunk_times) == 3
    assert r.chunk_times == sorted(r.chunk_times)
    assert r.send_time <= r.chunk_times[0]
    stamps = {k for k, _ in tr.trace}
    assert set(r.chunk_times) <= stamps  # every chunk time is a kernel stamp of a read
    for k, user in tr.trace:
        assert k <= user  # never later than the userland read time
    ks = [k for k, _ in tr.trace]
    assert ks == sorted(ks)  # one connection: the kernel's stamps only move forward
    assert tr.clamped == 0


def test_userland_fallback_path() -> None:
    """kernel_timestamps=False (what TLS and non-Linux take): asyncio transport, the read callback's time."""
    tr, r, written = asyncio.run(_late_read(False, block=0.02))
    assert not tr.raw_sockets
    assert r.ok, r.error
    assert tr.kernel_stamps == 0
    assert r.first_token_time is not None and r.first_token_time >= written + 0.02  # read after the block
    assert r.chunk_times == sorted(r.chunk_times)


@linux_only
def test_enable_rx_timestamps_on_a_tcp_socket() -> None:
    s = socket.socket()
    try:
        stamping = rawhttp.enable_rx_timestamps(s)
    finally:
        s.close()
    assert stamping is not None
    assert stamping[0] in (35, 64)


def test_no_kernel_stamps_off_linux(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert not rawhttp.kernel_timestamps_possible()
    s = socket.socket()
    try:
        assert rawhttp.enable_rx_timestamps(s) is None
    finally:
        s.close()
    assert not RawTransport(Target(name="t", url="http://127.0.0.1:1")).raw_sockets


def test_https_takes_the_transport_path() -> None:
    assert not RawTransport(Target(name="t", url="https://127.0.0.1:1"), kernel_timestamps=True).raw_sockets


def test_clock_offset_maps_realtime_onto_perf_counter() -> None:
    off = rawhttp._Clock().refresh()
    a = time.perf_counter()
    mapped = (time.time_ns() - off) * 1e-9
    b = time.perf_counter()
    assert a - 0.001 <= mapped <= b + 0.001
