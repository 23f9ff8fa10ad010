"""A minimal HTTP/1.1 streaming client on asyncio protocols: the load generator's fast path.

Why not aiohttp: profiling a closed loop against an instant fake server showed most of the
client's time in aiohttp's per-request machinery, and every SSE chunk went through a stream
reader and a task wake-up before it was timestamped, so at high concurrency a chunk's time
included its wait in the event loop's ready queue. Here the clock is read first thing in
``data_received`` (the socket read callback), the chunked framing and the SSE events are decoded
in that same callback, and a request is one ``write`` of prebuilt bytes on a kept-alive connection.

It speaks just what an OpenAI-compatible server answers with: a status line, headers, then a
body framed by ``Transfer-Encoding: chunked``, ``Content-Length`` or connection close. TLS via
the event loop's SSL support. No proxies, redirects or compression (a benchmark must not follow
them silently). Errors are values: ``post`` returns a ``StreamResult`` whose status says what
went wrong, with the same classes as the aiohttp and httpx transports.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from urllib.parse import urlsplit

from inferctl.config import Target
from inferctl.server.auth import auth_headers
from inferctl.server.stream import SSEParser, StreamResult, _error_message

_HEAD, _CHUNKED, _LENGTH, _UNTIL_CLOSE, _IDLE = range(5)
_MAX_ERROR_BODY = 64 * 1024


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

    # -- protocol callbacks -------------------------------------------------------------------

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()  # first: the arrival time of these bytes
        if self.state == _IDLE:
            return  # bytes nobody asked for (a server closing an idle connection); ignore
        buf = self.buf + data if self.buf else data
        self.buf = b""
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
        self.timer = loop.call_at(deadline, self._timeout)
        # send: now, or when post() began opening the connection this request needed (like aiohttp).
        result.send_time = time.perf_counter() if send is None else send
        assert self.transport is not None
        self.transport.write(request)

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
            self.state, self.left = _LENGTH, length
            if length == 0:
                self._complete()
                return False
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
            result.error = _error_message(b"".join(self.err_body).decode("utf-8", "replace"))
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
        self.state, self.future, self.result, self.parser, self.buf = _IDLE, None, None, None, b""
        if reusable:
            self.pool._idle.append(self)
        else:
            self.closed = True
            if self.transport is not None:
                self.transport.abort()
        if fut is not None and not fut.done():
            fut.set_result(result)


def _why(text: str, exc: BaseException | None) -> str:
    return f"{text}: {exc}" if exc else text


class RawTransport:
    """Kept-alive connections to one server; ``post`` streams one request (see the module docstring)."""

    def __init__(self, target: Target, *, concurrency: int = 0, timeout: float = 600.0,
                 connect_timeout: float = 10.0) -> None:
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

    def _request(self, path: str, body: bytes) -> bytes:
        line = self._lines.get(path)
        if line is None:
            line = self._lines[path] = f"POST {self.base_path}{path} HTTP/1.1\r\n".encode() + self._head_tail
        return b"%s%d\r\n\r\n%s" % (line, len(body), body)

    async def post(self, path: str, body: bytes) -> StreamResult:
        loop = asyncio.get_running_loop()
        request = self._request(path, body)
        conn = None
        idle = self._idle
        while idle:
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
                    _, conn = await loop.create_connection(lambda: _Conn(self), self.host, self.port, ssl=self.ssl,
                                                           server_hostname=self.host if self.ssl else None)
            except TimeoutError:
                result.send_time = send
                result.status, result.error = "timeout", f"connect timed out after {self.connect_timeout:g} s"
                return result
            except (OSError, ssl.SSLError) as exc:
                result.send_time = send
                result.status, result.error = "connection_error", (str(exc) or type(exc).__name__)[:300]
                return result
            self._all.add(conn)
        future = loop.create_future()
        conn.start(request, result, future, loop.time() + self.timeout, loop, send)
        if conn.future is None:  # answered synchronously (cannot happen with real sockets)
            return future.result()
        try:
            return await future
        except asyncio.CancelledError:
            conn._fail("connection_error", "cancelled")
            raise

    async def aclose(self) -> None:
        for c in self._all:
            if c.transport is not None and not c.closed:
                c.transport.close()
        self._all.clear()
        self._idle.clear()
        await asyncio.sleep(0)
