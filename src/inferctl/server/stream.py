"""Streaming one OpenAI-compatible request and timing it.

This is the measurement core shared by ``inferctl query --stats`` and the load generator, so the
definitions live here, next to the code that computes them (docs/metrics.md repeats them):

- **send**: the clock read just before the request is handed to the network (``perf_counter()`` here;
  the load generator's raw transport reads it immediately before its single ``sock.send``).
- **TTFT**: first *content* chunk minus send. The role-only chunk vLLM sends first (empty
  ``content``) is not a token; a reasoning delta is, and so is a chunk carrying ``token_ids``
  (vLLM's ``return_token_ids``), whose tokens may decode to no text. A stream whose usage counts
  tokens but where no chunk carried any is ``no_text``: well formed, but untimeable.
- **chunk times**: the arrival time of every chunk that carries content: when the read that delivered
  it returned here; the kernel's receive timestamp in the load generator's raw transport on Linux
  (bench/rawhttp.py), so a busy event loop does not inflate TTFT. ITL is the gaps between
  them; several tokens may share a chunk (speculative decoding), so ITL is per chunk, not per token.
- **end**: the last content chunk (the trailing usage-only chunk and ``[DONE]`` do not move it).
- **TPOT**: (end - first token) / (completion_tokens - 1), per request, with ``completion_tokens``
  from the server's ``usage`` (never counted from chunks).

Failures are data: ``stream()`` never raises for a request-level failure. It returns a
``StreamResult`` whose ``status`` says what happened; ``raise_for_status()`` turns that into the
exception a CLI user should see.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

from inferctl.server import shape
from inferctl.server.errors import error_for_status, error_message, short_text

try:  # msgspec decodes a chunk ~5x faster than json; it matters at thousands of chunks per second
    import msgspec

    _decode = msgspec.json.Decoder().decode
    # RecursionError: JSON nested thousands deep (a hostile or broken server) must not escape.
    _DecodeError: tuple[type[Exception], ...] = (ValueError, msgspec.DecodeError, RecursionError)

    class _Delta(msgspec.Struct):
        content: str | None = None
        reasoning: str | None = None
        reasoning_content: str | None = None

    class _Choice(msgspec.Struct):
        delta: _Delta | None = None
        text: str | None = None
        finish_reason: str | None = None
        token_ids: list[int] | None = None

    class _Usage(msgspec.Struct):
        prompt_tokens: int | None = None
        completion_tokens: int | None = None

    class _Chunk(msgspec.Struct):
        """Only the fields a measurement needs; msgspec skips the rest without building dicts."""

        choices: list[_Choice] | None = None
        usage: _Usage | None = None
        error: Any = None

    _decode_typed = msgspec.json.Decoder(_Chunk).decode
except ImportError:  # pragma: no cover - msgspec is a dependency; the fallback keeps `query` alive without it
    _decode = json.loads
    _DecodeError = (ValueError, RecursionError)
    _decode_typed = None

Status = Literal["ok", "http_error", "timeout", "connection_error", "stream_broken", "no_text"]


def no_text_message(tokens: int) -> str:
    """Why a well-formed stream of ``tokens`` tokens could not be timed, and what to do about it."""
    return (f"the server generated {tokens} tokens but streamed no text (they decode to nothing, e.g. special "
            "tokens from a random-weights model), so no token arrival could be timed; ask for token ids with "
            "--extra-body '{\"return_token_ids\": true}' (vLLM >= 0.10.2) or serve a tokenizer whose tokens "
            "decode to text")


@dataclass(slots=True)
class StreamResult:
    """Everything measured about one streamed request (times are ``perf_counter`` seconds)."""

    status: Status = "ok"
    http_status: int | None = None
    error: str = ""
    send_time: float = 0.0
    first_token_time: float | None = None
    end_time: float | None = None
    chunk_times: list[float] = field(default_factory=list)
    text: str = ""
    reasoning: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def ttft(self) -> float | None:
        if self.first_token_time is None:
            return None
        return self.first_token_time - self.send_time

    @property
    def e2e(self) -> float | None:
        if self.end_time is None:
            return None
        return self.end_time - self.send_time

    @property
    def tpot(self) -> float | None:
        """Mean time per output token after the first; None with fewer than two tokens."""
        n = self.completion_tokens
        if n is None or n < 2 or self.first_token_time is None or self.end_time is None:
            return None
        return (self.end_time - self.first_token_time) / (n - 1)

    @property
    def itls(self) -> list[float]:
        t = self.chunk_times
        return [b - a for a, b in zip(t, t[1:], strict=False)]

    def raise_for_status(self, url: str = "") -> None:
        """Raise the EndpointError a user should see for a failed request."""
        if self.status == "ok":
            return
        raise error_for_status(self.status, url, self.error, self.http_status)


def _content_of(chunk: dict[str, Any]) -> tuple[str, str, str | None]:
    """(content, reasoning, finish_reason) of one chat or completions chunk.

    Raises ``shape.ShapeError`` naming the field when the chunk is not the documented shape.
    """
    choices = chunk.get("choices")
    if not choices:
        return "", "", None
    choice = shape.obj(shape.lst(choices, "choices")[0], "choices[0]")
    finish = shape.opt_str(choice.get("finish_reason"), "choices[0].finish_reason")
    if "delta" in choice:
        delta = shape.obj(choice.get("delta") or {}, "choices[0].delta")
        reasoning = (shape.opt_str(delta.get("reasoning"), "choices[0].delta.reasoning")
                     or shape.opt_str(delta.get("reasoning_content"), "choices[0].delta.reasoning_content") or "")
        return shape.opt_str(delta.get("content"), "choices[0].delta.content") or "", reasoning, finish
    return shape.opt_str(choice.get("text"), "choices[0].text") or "", "", finish


class SSEParser:
    """Incremental, transport-agnostic parser of an OpenAI streaming body into a ``StreamResult``.

    ``feed(data, now)`` takes whatever bytes the transport delivered and the time they arrived;
    it returns False once the stream is decided broken (the result then says why). ``finish()``
    applies the end-of-stream checks. httpx (``stream()``) and the load generator's aiohttp path
    share it, so both measure with the same definitions.
    """

    __slots__ = ("_buf", "done", "keep_text", "on_delta", "result")

    def __init__(self, result: StreamResult, on_delta: Callable[[str], None] | None = None, *,
                 keep_text: bool = True) -> None:
        self.result = result
        self.on_delta = on_delta
        self.keep_text = keep_text or on_delta is not None  # the load generator needs times, not text
        self._buf = b""
        self.done = False

    def feed(self, data: bytes, now: float) -> bool:
        """Take bytes that arrived at ``now`` (read the clock *before* calling, as early as possible)."""
        buf = self._buf + data if self._buf else data
        if b"\n\n" not in buf:
            self._buf = buf
            return True
        # SSE events end with a blank line; keep an incomplete tail for the next read.
        *events, self._buf = buf.split(b"\n\n")
        for event in events:
            if event.startswith(b"data: ") and b"\n" not in event:  # the usual one-line event
                if not self._payload(event[6:].strip(), now):
                    return False
                continue
            for line in event.split(b"\n"):
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue  # comments (":") and other SSE fields
                if not self._payload(line[5:].strip(), now):
                    return False
        return True

    def _payload(self, payload: bytes, now: float) -> bool:
        result = self.result
        if payload == b"[DONE]":
            self.done = True
            return True
        if not self.keep_text and _decode_typed is not None:
            try:
                return self._absorb_typed(_decode_typed(payload), now)
            except _DecodeError:
                pass  # not our schema (or not JSON): the generic path below decides
        try:
            chunk = _decode(payload)
        except RecursionError:
            result.status, result.error = "stream_broken", "malformed chunk: the JSON is nested too deeply to read"
            return False
        except _DecodeError:
            result.status, result.error = "stream_broken", f"unparseable chunk: {payload[:120]!r}"
            return False
        if not isinstance(chunk, dict):
            result.status, result.error = "stream_broken", f"unexpected chunk: {payload[:120]!r}"
            return False
        if "error" in chunk:
            result.status, result.error = "stream_broken", _stream_error(chunk["error"])
            return False
        try:
            piece = _absorb(result, chunk, now, self.keep_text)
        except shape.ShapeError as exc:
            result.status, result.error = "stream_broken", f"malformed chunk: {exc}"
            return False
        if piece and self.on_delta is not None:
            self.on_delta(piece)
        return True

    def _absorb_typed(self, chunk: _Chunk, now: float) -> bool:
        """``_absorb`` for the typed chunk (same rules; no text kept)."""
        result = self.result
        if chunk.error is not None:
            result.status, result.error = "stream_broken", _stream_error(chunk.error)
            return False
        if chunk.choices:
            choice = chunk.choices[0]
            d = choice.delta
            has = (d.content or d.reasoning or d.reasoning_content) if d is not None else choice.text
            if has or choice.token_ids:
                if result.first_token_time is None:
                    result.first_token_time = now
                result.chunk_times.append(now)
                result.end_time = now
            if choice.finish_reason is not None:
                result.finish_reason = choice.finish_reason
                if result.end_time is None:
                    result.end_time = now
        u = chunk.usage
        if u is not None:
            result.prompt_tokens = u.prompt_tokens
            result.completion_tokens = u.completion_tokens
        return True

    def finish(self) -> StreamResult:
        """End-of-body checks: a stream must end with [DONE] and carry content if it claims tokens.

        Some OpenAI-compatible servers (``transformers serve``) end the body after the chunk with the
        finish reason and never send ``[DONE]``: a body that ended cleanly after a finish reason, with no
        half event left over, is complete. Without a finish reason it was cut off.
        """
        result = self.result
        if result.status != "ok":
            return result
        if not self.done and (result.finish_reason is None or self._buf.strip()):
            result.status, result.error = "stream_broken", "stream ended before [DONE]"
        elif result.first_token_time is None and (result.completion_tokens or 0) > 0:
            # Well formed (usage counts the tokens, [DONE] came) but nothing carried text: not a broken stream.
            result.status, result.error = "no_text", no_text_message(result.completion_tokens or 0)
        return result


async def stream(
    client: httpx.AsyncClient,
    path: str,
    payload: dict[str, Any] | None = None,
    *,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: httpx.Timeout | None = None,
    on_delta: Callable[[str], None] | None = None,
    keep_text: bool = True,
) -> StreamResult:
    """POST a streaming request and time every chunk. Never raises for request failures.

    The body is ``payload`` (encoded here) or ``content`` (already encoded: the load generator builds
    its bodies ahead of time). ``on_delta`` receives each piece of content as it arrives (for showing
    the answer live); ``keep_text=False`` keeps only timings and counts (the load generator's case).
    """
    result = StreamResult()
    parser = SSEParser(result, on_delta, keep_text=keep_text)
    got_headers = False
    kwargs: dict[str, Any] = {"timeout": timeout} if timeout is not None else {}
    if content is not None:
        kwargs["content"] = content
    else:
        kwargs["json"] = payload
    result.send_time = time.perf_counter()
    try:
        async with client.stream("POST", path, headers=headers, **kwargs) as resp:
            got_headers = True
            if resp.status_code != 200:
                body = (await resp.aread()).decode("utf-8", "replace")
                result.status, result.http_status = "http_error", resp.status_code
                result.error = error_message(body)
                return result
            result.http_status = 200
            async for raw in resp.aiter_bytes():
                if not parser.feed(raw, time.perf_counter()):
                    return result
    except httpx.TimeoutException as exc:
        result.status, result.error = "timeout", f"timed out ({type(exc).__name__})"
        return result
    except httpx.ConnectError as exc:
        result.status, result.error = "connection_error", str(exc) or type(exc).__name__
        return result
    except (httpx.HTTPError, OSError) as exc:
        # Before the status line the connection failed; after it, the stream broke.
        result.status = "stream_broken" if got_headers else "connection_error"
        result.error = (str(exc) or type(exc).__name__)[:300]
        return result
    return parser.finish()


def _stream_error(err: Any) -> str:
    """The text of an ``error`` event (an object with a message, or anything else), kept short."""
    return short_text(err.get("message", err) if isinstance(err, dict) else err)


def _absorb(result: StreamResult, chunk: dict[str, Any], now: float, keep_text: bool = True) -> str:
    """Fold one chunk into the result; returns the new content text (``ShapeError`` on a bad chunk).

    The chunk is read completely before the result changes, so a malformed chunk leaves no half-update.
    """
    content, reasoning, finish = _content_of(chunk)
    usage = chunk.get("usage")
    if usage:
        usage = shape.obj(usage, "usage")
        prompt_tokens = shape.opt_int(usage.get("prompt_tokens"), "usage.prompt_tokens")
        completion_tokens = shape.opt_int(usage.get("completion_tokens"), "usage.completion_tokens")
    if content or reasoning or _has_token_ids(chunk):
        if result.first_token_time is None:
            result.first_token_time = now
        result.chunk_times.append(now)
        result.end_time = now
        if keep_text:
            result.text += content
            result.reasoning += reasoning
    if finish is not None:
        result.finish_reason = finish
        if result.end_time is None:
            result.end_time = now
    if usage:
        result.prompt_tokens, result.completion_tokens = prompt_tokens, completion_tokens
    return content


def _has_token_ids(chunk: dict[str, Any]) -> bool:
    """A chunk that carries token ids (vLLM's ``return_token_ids``) is a token arrival, text or not."""
    choices = chunk.get("choices")
    return bool(choices) and isinstance(choices[0], dict) and bool(choices[0].get("token_ids"))

