"""A minimal HTTP/1.1 streaming client on asyncio: the load generator's fast path.

Why not aiohttp: profiling a closed loop against an instant fake server showed most of the
client's time in aiohttp's per-request machinery, and every SSE chunk went through a stream
reader and a task wake-up before it was timestamped. Here the chunked framing and the SSE events
are decoded in the socket's read callback, and a request is one write of prebuilt bytes on a
kept-alive connection.

**Arrival times are the kernel's.** On Linux, plain-HTTP connections are non-blocking sockets
read with ``loop.add_reader`` + ``recvmsg``, with ``SO_TIMESTAMPNS`` on: every read carries the
time the kernel received the data (``SCM_TIMESTAMPNS``, CLOCK_REALTIME), so a chunk's time does
not include how long this process waited for a CPU or for its turn in the event loop. Several
SSE events in one read share that read's stamp. The kernel merges data that queued up unread
into one buffer and keeps the *newest* arrival time for it, so a stamp is exact while the client
reads each connection before its next packet arrives, and otherwise at most the read's lag late
(still never later than the userland time). Elsewhere (TLS, other systems, a kernel refusing the
option) the time is ``perf_counter()`` read first thing in the read callback, as before.

Clocks: the send time is read from CLOCK_REALTIME (``time.time_ns()``) immediately before the
single ``send`` of the request, so TTFT, E2E and ITL are differences on one clock (the kernel's).
Both are then placed on the ``perf_counter`` timeline the rest of the engine uses with one offset
(REALTIME − perf_counter, the best of a few adjacent reads, re-measured every second; a request
keeps the offset it was sent with, so a clock step mid-request cannot bend its intervals). NTP
slewing moves both clocks alike; a step (settimeofday) is the one thing that moves the offset.
A converted stamp is clamped to be no later than the userland read time and no earlier than the
previous one on the connection; ``RawTransport.clamped`` counts clamps (zero unless the clock stepped).

It speaks just what an OpenAI-compatible server answers with: a status line, headers, then a
body framed by ``Transfer-Encoding: chunked``, ``Content-Length`` or connection close. TLS via
the event loop's SSL support. No proxies, redirects or compression (a benchmark must not follow
them silently). Errors are values: ``post`` returns a ``StreamResult`` whose status says what
went wrong, with the same classes as the aiohttp and httpx transports.

**Connections stay in step.** The client never pipelines, so every byte on a connection belongs to the
one request in flight. A connection is not reused after bytes no request asked for: bytes after a
response's end (in the same read or later, while idle) retire it. A request on a *reused* connection
that was never answered (the server closed an idle keep-alive connection as the request went out, or
the first bytes are not a status line but leftovers of an earlier exchange) is sent again, once, on a
new connection: not an error of the server's answer, counted in ``RawTransport.retried``.
"""

from __future__ import annotations

import asyncio
import platform
import socket
import ssl
import struct
import sys
import time
from urllib.parse import urlsplit

from inferctl.config import Target
from inferctl.server.auth import auth_headers
from inferctl.server.errors import error_message
from inferctl.server.stream import SSEParser, StreamResult

_HEAD, _CHUNKED, _LENGTH, _UNTIL_CLOSE, _IDLE = range(5)
_MAX_ERROR_BODY = 64 * 1024
_READ_SIZE = 256 * 1024

# Kernel receive timestamps. SO_TIMESTAMPNS_NEW (Linux >= 5.1) stamps with a 64-bit timespec on every
# architecture; SO_TIMESTAMPNS (old) with the native ``struct timespec``. The numbers are the
# asm-generic ones (Python 3.11's socket module has no constants for them); architectures with their
# own numbering (alpha, mips, parisc, sparc) fall back to userland stamps.
_GENERIC_ARCH = {"x86_64", "amd64", "aarch64", "arm64", "i386", "i686", "riscv64", "s390x", "ppc64le",
                 "ppc64", "loongarch64"} | {f"armv{v}l" for v in (6, 7, 8)}
_TS_OPTIONS = ((64, struct.Struct("qq")), (35, struct.Struct("@ll")))  # (SO_TIMESTAMPNS_NEW, _OLD)
_ANC_SIZE = socket.CMSG_SPACE(16) if hasattr(socket, "CMSG_SPACE") else 0


def kernel_timestamps_possible() -> bool:
    """Linux with a known socket-option numbering and ``recvmsg`` ancillary data."""
    return sys.platform == "linux" and platform.machine().lower() in _GENERIC_ARCH and _ANC_SIZE > 0


def enable_rx_timestamps(sock: socket.socket) -> tuple[int, struct.Struct] | None:
    """Turn on SO_TIMESTAMPNS; returns (control-message type, timespec layout), or None if unavailable."""
    if not kernel_timestamps_possible():
        return None
    for opt, layout in _TS_OPTIONS:
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, 1)
        except OSError:
            continue
        return opt, layout
    return None


class _Clock:
    """The offset from CLOCK_REALTIME (kernel stamps, ``time_ns``) to ``perf_counter``, in ns."""

    __slots__ = ("checked", "offset_ns")

    def __init__(self) -> None:
        self.offset_ns = 0
        self.checked = -1e300
        self.refresh()

    def refresh(self) -> int:
        """Best of five adjacent (perf, realtime, perf) reads: the narrowest pair brackets realtime best."""
        pns, tns = time.perf_counter_ns, time.time_ns
        best_gap, best = 1 << 62, 0
        for _ in range(5):
            a = pns()
            r = tns()
            b = pns()
            if b - a < best_gap:
                best_gap, best = b - a, r - (a + b) // 2
        self.offset_ns = best
        self.checked = time.perf_counter()
        return best

    def current(self) -> int:
        if time.perf_counter() - self.checked > 1.0:
            return self.refresh()
        return self.offset_ns


_clock: _Clock | None = None


def _the_clock() -> _Clock:
    global _clock
    if _clock is None:
        _clock = _Clock()
    return _clock


class _Conn(asyncio.Protocol):
    """One kept-alive connection; at most one request at a time."""

    def __init__(self, pool: RawTransport) -> None:
        self.pool = pool
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.state = _IDLE
        self.buf = b""
        self.result: StreamResult | None = None
        self.parser: SSEParser | None = None
        self.future: asyncio.Future | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.left = 0  # bytes left in the current chunk (chunked) or the body (content-length)
        self.ok = False  # the status was 200: the body is an event stream
        self.err_body: list[bytes] = []
        self.keep_alive = True
        self.reused = False  # the connection served a request before the one in flight
        self.answered = False  # a byte of the response to the request in flight has arrived
        self.unanswered = False  # the request in flight failed before any answer (set on failure)

    # -- protocol callbacks -------------------------------------------------------------------

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()  # first: the arrival time of these bytes
        if self.pool.trace is not None:
            self.pool.trace.append((now, now))
        self._feed(data, now)

    def _feed(self, data: bytes, now: float) -> None:
        """Bytes that arrived at ``now`` (perf_counter seconds)."""
        if self.state == _IDLE:  # bytes nobody asked for: this connection is out of step, never reuse it
            self.pool.stray += 1
            self.closed = True
            self._abort()
            return
        buf = self.buf + data if self.buf else data
        self.buf = b""
        if not self.answered:
            self.answered = True
            if self.reused and not buf.startswith(b"HTTP/"[:len(buf)]):
                # Not a status line: leftovers of an earlier exchange arrived after our request went out.
                # Our request was not answered (its answer would follow them): retry it on a new connection.
                self.pool.stray += 1
                self.unanswered = True
                first = buf.split(b"\r\n", 1)[0][:80]
                self._fail("stream_broken", f"bad status line {first!r} (bytes of an earlier response on a "
                                            "reused connection)")
                return
        while self.state == _HEAD:  # a loop: informational (1xx) responses precede the real one
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                if len(buf) > 65536:
                    self._fail("stream_broken", "response headers too long")
                else:
                    self.buf = buf
                return
            if not self._head(buf[:end]):
                return
            buf = buf[end + 4:]
        if self.state == _CHUNKED:
            self._chunked(buf, now)
        elif self.state == _LENGTH:
            piece = buf[:self.left]
            if len(buf) > self.left:
                self.keep_alive = False  # bytes after the body: not an answer to anything
            self.left -= len(piece)
            self._body(piece, now)
            if self.left <= 0 and self.state == _LENGTH:
                self._complete()
        elif self.state == _UNTIL_CLOSE:
            self._body(buf, now)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        state = self.state
        if state == _IDLE or self.future is None:
            return
        if state == _UNTIL_CLOSE:
            self._complete()
        elif state == _HEAD:
            self.unanswered = not self.answered  # e.g. a server closing an idle connection as we reused it
            self._fail("connection_error", _why("connection closed before the response", exc))
        else:
            self._fail("stream_broken", _why("connection closed mid-response", exc))

    # -- request lifecycle --------------------------------------------------------------------

    def start(self, request: bytes, result: StreamResult, future: asyncio.Future, deadline: float,
              loop: asyncio.AbstractEventLoop, send: float | None = None) -> None:
        self.state = _HEAD
        self.result, self.future = result, future
        self.parser = SSEParser(result, keep_text=False)
        self.ok, self.left, self.err_body, self.keep_alive = False, 0, [], True
        self.answered = self.unanswered = False
        self.timer = loop.call_at(deadline, self._timeout)
        # send: now, or when post() began opening the connection this request needed (like aiohttp).
        result.send_time = time.perf_counter() if send is None else send
        assert self.transport is not None
        self.transport.write(request)

    def _abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def close(self) -> None:
        if self.transport is not None and not self.closed:
            self.transport.close()

    def _head(self, head: bytes) -> bool:
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ", 2)
        try:
            code = int(parts[1])
        except (IndexError, ValueError):
            self._fail("stream_broken", f"bad status line {lines[0][:80]!r}")
            return False
        chunked, length = False, None
        for line in lines[1:]:
            k, _, v = line.partition(b":")
            k = k.strip().lower()
            if k == b"transfer-encoding":
                chunked = b"chunked" in v.lower()
            elif k == b"content-length":
                try:
                    length = int(v)
                except ValueError:
                    self._fail("stream_broken", "bad content-length")
                    return False
            elif k == b"connection" and b"close" in v.lower():
                self.keep_alive = False
        if lines[0].startswith(b"HTTP/1.0"):
            self.keep_alive = False
        assert self.result is not None
        self.result.http_status = code
        self.ok = code == 200
        if code in (100, 101, 102, 103):
            self.state = _HEAD  # an informational response precedes the real one
            return True
        if chunked:
            self.state, self.left = _CHUNKED, -1
        elif length is not None:
            self.state, self.left = _LENGTH, length  # an empty body completes in _feed
        else:
            self.state, self.keep_alive = _UNTIL_CLOSE, False
        return True

    def _chunked(self, buf: bytes, now: float) -> None:
        """Decode chunked framing; feed the payload of this read in one piece."""
        out: list[bytes] = []
        pos, n = 0, len(buf)
        while pos < n:
            left = self.left
            if left > 0:  # inside a chunk's data
                take = buf[pos:pos + left]
                out.append(take)
                pos += len(take)
                self.left = left - len(take)
                if self.left == 0:
                    self.left = -2  # expect the CRLF after the data
                continue
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                self.buf = buf[pos:]
                break
            line = buf[pos:eol]
            pos = eol + 2
            if left == -2:  # the CRLF that ends a chunk's data
                if line:
                    self._fail("stream_broken", "bad chunked framing")
                    return
                self.left = -1
                continue
            if left == -3:  # trailers after the last chunk; an empty line ends the body
                if not line:
                    if pos < n:
                        self.keep_alive = False  # bytes after the body: not an answer to anything
                    if out:
                        self._body(b"".join(out), now)
                    if self.state == _CHUNKED:
                        self._complete()
                    return
                continue
            try:
                size = int(line.split(b";", 1)[0], 16)
            except ValueError:
                self._fail("stream_broken", f"bad chunk size {line[:40]!r}")
                return
            self.left = size if size else -3
        if out:
            self._body(b"".join(out), now)

    def _body(self, data: bytes, now: float) -> None:
        if not data:
            return
        if self.ok:
            assert self.parser is not None
            if not self.parser.feed(data, now):
                self.keep_alive = False
                self._resolve()
        elif sum(map(len, self.err_body)) < _MAX_ERROR_BODY:
            self.err_body.append(data)

    def _complete(self) -> None:
        """The body ended as framed."""
        result = self.result
        if result is None:
            return
        if self.ok:
            assert self.parser is not None
            self.parser.finish()
        else:
            result.status = "http_error"
            result.error = error_message(b"".join(self.err_body).decode("utf-8", "replace"))
        self._resolve()

    def _fail(self, status: str, error: str) -> None:
        if self.result is None:
            return
        self.result.status, self.result.error = status, error  # type: ignore[assignment]
        self.keep_alive = False
        self._resolve()

    def _timeout(self) -> None:
        self.timer = None
        self._fail("timeout", f"timed out (no complete response within {self.pool.timeout:g} s)")

    def _resolve(self) -> None:
        """Hand the result over and return the connection to the pool (or close it)."""
        fut, result = self.future, self.result
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        reusable = self.keep_alive and not self.closed and not self.buf and self.state != _UNTIL_CLOSE
        retry = self.unanswered and self.reused  # post() sends it again on a new connection
        self.state, self.future, self.result, self.parser, self.buf = _IDLE, None, None, None, b""
        if reusable:
            self.reused = True
            self.pool._idle.append(self)
        else:
            self.closed = True
            self._abort()
        if fut is not None and not fut.done():
            fut.set_result((result, retry))


def _why(text: str, exc: BaseException | None) -> str:
    return f"{text}: {exc}" if exc else text


class _SockConn(_Conn):
    """A connection on a raw non-blocking socket: ``recvmsg`` with the kernel's receive timestamps."""

    def __init__(self, pool: RawTransport, sock: socket.socket, loop: asyncio.AbstractEventLoop,
                 stamping: tuple[int, struct.Struct] | None) -> None:
        super().__init__(pool)
        self.sock, self.loop = sock, loop
        self.fd = sock.fileno()
        self.ts_type, self.ts_layout = stamping if stamping else (-1, None)
        self.anc = _ANC_SIZE if stamping else 0
        self.offset_ns = _the_clock().current()  # REALTIME − perf_counter for this request's stamps
        self.last = 0.0  # the latest chunk time on this connection: stamps never go backwards
        self.wbuf = b""
        self.sock_open = True
        loop.add_reader(self.fd, self._readable)

    def start(self, request: bytes, result: StreamResult, future: asyncio.Future, deadline: float,
              loop: asyncio.AbstractEventLoop, send: float | None = None) -> None:
        self.state = _HEAD
        self.result, self.future = result, future
        self.parser = SSEParser(result, keep_text=False)
        self.ok, self.left, self.err_body, self.keep_alive = False, 0, [], True
        self.answered = self.unanswered = False
        self.timer = loop.call_at(deadline, self._timeout)
        off = self.offset_ns = _the_clock().current()
        rt = time.time_ns()  # CLOCK_REALTIME, the kernel stamps' clock, right before the one send
        self._write(request)
        # send: now, or when post() began opening the connection this request needed (like aiohttp).
        result.send_time = (rt - off) * 1e-9 if send is None else send
        self.last = result.send_time

    def _write(self, data: bytes) -> None:
        if self.wbuf:
            self.wbuf += data
            return
        try:
            n = self.sock.send(data)
        except (BlockingIOError, InterruptedError):
            n = 0
        except OSError as exc:
            self._lost(exc)
            return
        if n < len(data):  # the socket buffer is full: send the rest when it drains
            self.wbuf = data[n:]
            self.loop.add_writer(self.fd, self._writable)

    def _writable(self) -> None:
        data, self.wbuf = self.wbuf, b""
        self.loop.remove_writer(self.fd)
        if data and not self.closed:
            self._write(data)

    def _readable(self) -> None:
        try:
            data, anc, _, _ = self.sock.recvmsg(_READ_SIZE, self.anc)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._lost(exc)
            return
        now = time.perf_counter()  # the userland read time: an upper bound for the kernel's stamp
        if not data:
            self._lost(None)
            return
        t = now
        pool = self.pool
        for level, kind, raw in anc:
            if level == socket.SOL_SOCKET and kind == self.ts_type and self.ts_layout is not None:
                sec, nsec = self.ts_layout.unpack_from(raw)
                k = (sec * 1_000_000_000 + nsec - self.offset_ns) * 1e-9
                pool.kernel_stamps += 1
                if pool.trace is not None:
                    pool.trace.append((k, now))
                if k > now:  # cannot happen unless REALTIME stepped: keep the userland time
                    pool.clamped += 1
                else:
                    t = k
        if t < self.last:  # stamps are per read and only move forward (a clock step could say otherwise)
            if t < self.last - 1e-6:
                pool.clamped += 1
            t = self.last
        self.last = t
        self._feed(data, t)

    def _lost(self, exc: Exception | None) -> None:
        if self.closed:
            return
        self._close_socket()
        self.connection_lost(exc)

    def _close_socket(self) -> None:
        self.closed = True
        if self.sock_open is False:
            return  # once: after close() the fd number may already belong to another socket
        self.sock_open = False
        try:
            self.loop.remove_reader(self.fd)
            if self.wbuf:
                self.loop.remove_writer(self.fd)
        except (ValueError, RuntimeError):  # a closed loop
            pass
        self.wbuf = b""
        self.sock.close()

    def _abort(self) -> None:
        self._close_socket()

    def close(self) -> None:
        self._close_socket()


class RawTransport:
    """Kept-alive connections to one server; ``post`` streams one request (see the module docstring)."""

    def __init__(self, target: Target, *, concurrency: int = 0, timeout: float = 600.0,
                 connect_timeout: float = 10.0, kernel_timestamps: bool | None = None) -> None:
        u = urlsplit(target.url)
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.ssl = ssl.create_default_context() if u.scheme == "https" else None
        self.base_path = u.path.rstrip("/")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        host_header = self.host if u.port is None else f"{self.host}:{u.port}"
        extra = "".join(f"{k}: {v}\r\n" for k, v in auth_headers(target).items())
        self._head_tail = (f"Host: {host_header}\r\nContent-Type: application/json\r\nAccept: */*\r\n{extra}"
                           "Content-Length: ").encode()
        self._lines: dict[str, bytes] = {}
        self._idle: list[_Conn] = []
        self._all: set[_Conn] = set()
        # Raw sockets with kernel receive stamps for plain HTTP on Linux (None: when possible; False: the
        # asyncio-transport path with userland stamps, which TLS always takes).
        want = kernel_timestamps_possible() if kernel_timestamps is None else kernel_timestamps
        self.raw_sockets = bool(want) and self.ssl is None
        self.kernel_stamps = 0  # reads whose time is the kernel's
        self.clamped = 0  # kernel stamps later than the userland read time or behind the previous one
        self.trace: list[tuple[float, float]] | None = None  # tests: (stamp used, userland time) per read
        self.stray = 0  # reads of bytes no request asked for (the connection was retired)
        self.retried = 0  # requests sent again on a new connection: a reused one never answered them
        self._addrs: list | None = None

    def _request(self, path: str, body: bytes) -> bytes:
        line = self._lines.get(path)
        if line is None:
            line = self._lines[path] = f"POST {self.base_path}{path} HTTP/1.1\r\n".encode() + self._head_tail
        return b"%s%d\r\n\r\n%s" % (line, len(body), body)

    async def post(self, path: str, body: bytes) -> StreamResult:
        request = self._request(path, body)
        result, retry = await self._post(request, reuse=True)
        if retry:
            # A reused connection that never answered (closed by the server while idle, or out of step):
            # the request goes again, once, on a new connection.
            self.retried += 1
            result, _ = await self._post(request, reuse=False)
        return result

    async def _post(self, request: bytes, reuse: bool) -> tuple[StreamResult, bool]:
        """One attempt: the result, and whether a reused connection left the request unanswered."""
        loop = asyncio.get_running_loop()
        conn = None
        idle = self._idle
        while reuse and idle:
            c = idle.pop()
            if not c.closed:
                conn = c
                break
        result = StreamResult()
        send = None
        if conn is None:
            send = time.perf_counter()
            try:
                async with asyncio.timeout(self.connect_timeout):
                    if self.raw_sockets:
                        conn = await self._connect(loop)
                    else:
                        _, conn = await loop.create_connection(lambda: _Conn(self), self.host, self.port,
                                                               ssl=self.ssl,
                                                               server_hostname=self.host if self.ssl else None)
            except TimeoutError:
                result.send_time = send
                result.status, result.error = "timeout", f"connect timed out after {self.connect_timeout:g} s"
                return result, False
            except (OSError, ssl.SSLError) as exc:
                result.send_time = send
                result.status, result.error = "connection_error", (str(exc) or type(exc).__name__)[:300]
                return result, False
            self._all.add(conn)
        future = loop.create_future()
        conn.start(request, result, future, loop.time() + self.timeout, loop, send)
        if conn.future is None:  # answered synchronously (e.g. the send failed at once)
            return future.result()
        try:
            return await future
        except asyncio.CancelledError:
            if conn.future is future:  # still ours: after it resolved, the connection may serve another request
                conn._fail("connection_error", "cancelled")
            raise

    async def _connect(self, loop: asyncio.AbstractEventLoop) -> _SockConn:
        if self._addrs is None:
            self._addrs = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        if not self._addrs:
            raise OSError(f"cannot resolve {self.host}")
        err: OSError | None = None
        for family, kind, proto, _, addr in self._addrs:
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                stamping = enable_rx_timestamps(sock)
                await loop.sock_connect(sock, addr)
            except OSError as exc:
                sock.close()
                err = exc
                continue
            except BaseException:  # cancelled (the connect timeout): do not leak the socket
                sock.close()
                raise
            return _SockConn(self, sock, loop, stamping)
        assert err is not None
        raise err

    async def aclose(self) -> None:
        for c in self._all:
            c.close()
        self._all.clear()
        self._idle.clear()
        await asyncio.sleep(0)
