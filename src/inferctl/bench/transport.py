"""How the load generator puts a request on the wire.

Three transports share one SSE parser (``server.stream.SSEParser``), so they measure the same
thing: ``raw`` (bench/rawhttp.py, the default: a minimal HTTP/1.1 client on asyncio whose chunk times
are the kernel's receive timestamps on Linux; see docs/metrics.md), aiohttp, and httpx (the test
seam with ``MockTransport``). All are tested against the same faults.

A transport never raises for a request failure: it returns a ``StreamResult`` with a status.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from inferctl.config import Target
from inferctl.server.auth import auth_headers
from inferctl.server.errors import error_message
from inferctl.server.stream import SSEParser, StreamResult, stream


class Transport(Protocol):
    async def post(self, path: str, body: bytes) -> StreamResult: ...

    async def aclose(self) -> None: ...


def _have_aiohttp() -> bool:
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def make_transport(target: Target, *, concurrency: int, timeout: float, connect_timeout: float = 10.0,
                   kind: str = "auto") -> Transport:
    """``raw`` (rawhttp.py, the default: fastest, kernel timestamps), or aiohttp, or httpx."""
    if kind in ("auto", "raw"):
        from inferctl.bench.rawhttp import RawTransport

        return RawTransport(target, concurrency=concurrency, timeout=timeout, connect_timeout=connect_timeout)
    if kind == "aiohttp" and _have_aiohttp():
        return AiohttpTransport(target, concurrency=concurrency, timeout=timeout, connect_timeout=connect_timeout)
    return HttpxTransport(target, concurrency=concurrency, timeout=timeout, connect_timeout=connect_timeout)


class AiohttpTransport:
    """One aiohttp session with a connection pool sized to the concurrency."""

    def __init__(self, target: Target, *, concurrency: int, timeout: float, connect_timeout: float) -> None:
        import aiohttp

        self._aiohttp = aiohttp
        self.base = target.url
        self.headers = {"Content-Type": "application/json", **auth_headers(target)}
        # A stalled stream is a timeout: sock_read bounds every gap, total bounds the request.
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=connect_timeout, sock_read=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._limit = max(0, concurrency)  # 0: unlimited (open loop without a cap)

    def _get_session(self):
        if self._session is None:
            aiohttp = self._aiohttp
            conn = aiohttp.TCPConnector(limit=self._limit, limit_per_host=0, ttl_dns_cache=300,
                                        enable_cleanup_closed=False)
            self._session = aiohttp.ClientSession(connector=conn, timeout=self.timeout, auto_decompress=False,
                                                  trust_env=False, skip_auto_headers=("User-Agent",))
        return self._session

    async def post(self, path: str, body: bytes) -> StreamResult:
        aiohttp = self._aiohttp
        session = self._get_session()
        result = StreamResult()
        parser = SSEParser(result, keep_text=False)
        got_headers = False
        perf = time.perf_counter
        result.send_time = perf()
        try:
            async with session.post(self.base + path, data=body, headers=self.headers) as resp:
                got_headers = True
                if resp.status != 200:
                    text = (await resp.read()).decode("utf-8", "replace")
                    result.status, result.http_status = "http_error", resp.status
                    result.error = error_message(text)
                    return result
                result.http_status = 200
                feed = parser.feed
                async for data in resp.content.iter_any():
                    if not feed(data, perf()):
                        return result
        except (TimeoutError, asyncio.TimeoutError) as exc:  # noqa: UP041 - aiohttp raises either
            result.status, result.error = "timeout", f"timed out ({type(exc).__name__})"
            return result
        except aiohttp.ClientConnectorError as exc:
            result.status, result.error = "connection_error", str(exc) or type(exc).__name__
            return result
        except (aiohttp.ClientError, OSError) as exc:
            # Before the status line: the connection failed; after it: the stream broke.
            result.status = "stream_broken" if got_headers else "connection_error"
            result.error = (str(exc) or type(exc).__name__)[:300]
            return result
        return parser.finish()

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()


class HttpxTransport:
    """The same over httpx (``transport`` injects an httpx test transport)."""

    def __init__(self, target: Target, *, concurrency: int, timeout: float, connect_timeout: float,
                 transport=None) -> None:
        import httpx

        self.client = httpx.AsyncClient(
            base_url=target.url, headers={"Content-Type": "application/json", **auth_headers(target)},
            timeout=httpx.Timeout(timeout, connect=connect_timeout), transport=transport, trust_env=False,
            limits=httpx.Limits(max_connections=concurrency or None, max_keepalive_connections=concurrency or None),
        )

    async def post(self, path: str, body: bytes) -> StreamResult:
        return await stream(self.client, path, content=body, keep_text=False)

    async def aclose(self) -> None:
        await self.client.aclose()
