"""An async client for vLLM's OpenAI-compatible HTTP server.

    async with VLLMClient(target) as c:
        await c.health()                 # seconds; raises EngineDead on 503
        models = await c.models()        # [ServedModel(id, root, max_model_len, ...)]
        await c.version()                # "0.32.0", or None when not vLLM
        text = await c.metrics_text()    # Prometheus exposition text
        ids = await c.tokenize("hello")  # the server's own tokenizer
        r = await c.chat([{"role": "user", "content": "hi"}], max_tokens=32)   # StreamResult

Every call has a timeout. Failures are told apart so the user learns what to fix:
``Unreachable`` (nothing listening, DNS), ``EndpointTimeout``, ``NotVLLM`` (something answered
but not an OpenAI-compatible server), ``AuthFailed`` (401/403), ``EngineDead`` (503 on /health),
``ModelNotServed``, ``RequestRejected`` (any other refusal, with the server's message),
``MalformedReply`` (a 2xx body of the wrong shape: wrong types, absurd nesting, out-of-range numbers).

``transport`` is the test seam (``httpx.MockTransport``); production uses a real socket.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx
from pydantic import BaseModel, Field, ValidationError

from inferctl.config import Target
from inferctl.errors import EndpointError, ModelNotServed, NotVLLM
from inferctl.server import errors, shape
from inferctl.server.auth import auth_headers
from inferctl.server.stream import StreamResult, stream

DEFAULT_TIMEOUT = 10.0
STREAM_TIMEOUT = 300.0


class ServedModel(BaseModel):
    """One entry of /v1/models."""

    id: str = Field(description="The served model name clients send as `model`.")
    root: str | None = Field(default=None, description="The checkpoint the server loaded (path or HF id).")
    max_model_len: int | None = Field(default=None, description="Context length the engine resolved.")
    owned_by: str | None = None
    parent: str | None = Field(default=None, description="Base model of a LoRA adapter.")
    created: int | None = None


class VLLMClient:
    """Talks to one target. Use as an async context manager."""

    def __init__(
        self,
        target: Target,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        stream_timeout: float = STREAM_TIMEOUT,
        transport: httpx.AsyncBaseTransport | None = None,
        max_connections: int = 100,
    ) -> None:
        self.target = target
        self.url = target.display_url  # for messages; the client itself connects to target.url
        self.timeout = timeout
        self.stream_timeout = stream_timeout
        self._http = httpx.AsyncClient(
            base_url=target.url,
            headers=auth_headers(target),
            timeout=httpx.Timeout(timeout),
            transport=transport,
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
            follow_redirects=False,
            trust_env=False,
        )

    async def __aenter__(self) -> VLLMClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    # -- plumbing -------------------------------------------------------------------------

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            return await self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise errors.timeout(self.url + path, self.timeout) from None
        except (httpx.ConnectError, httpx.UnsupportedProtocol) as exc:
            raise errors.unreachable(self.url, _short(exc), local=self.target.local) from None
        except httpx.HTTPError as exc:
            raise errors.unreachable(self.url, _short(exc), local=self.target.local) from None

    def _check(self, resp: httpx.Response, path: str) -> None:
        if resp.status_code >= 400:
            raise errors.http_error(self.url + path, resp.status_code, errors.error_message(resp.text))

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        resp = await self._request(method, path, **kwargs)
        self._check(resp, path)
        try:
            return shape.loads(resp.content)
        except shape.ShapeError as exc:
            raise errors.malformed(self.url + path, str(exc)) from None
        except ValueError:
            raise NotVLLM(
                f"{self.url}{path} did not answer with JSON; this does not look like a vLLM server.",
                url=self.url,
            ) from None

    # -- endpoints ------------------------------------------------------------------------

    async def health(self) -> float:
        """GET /health; returns the round-trip seconds. 503 means the engine is dead."""
        start = time.perf_counter()
        resp = await self._request("GET", "/health")
        elapsed = time.perf_counter() - start
        if resp.status_code == 404:
            raise NotVLLM(f"{self.url} has no /health endpoint; this does not look like a vLLM server.",
                          url=self.url, status=404)
        self._check(resp, "/health")
        return elapsed

    async def models(self) -> list[ServedModel]:
        """GET /v1/models. A 404, an HTML page or a JSON without ``data`` means: not vLLM."""
        resp = await self._request("GET", "/v1/models")
        if resp.status_code in (401, 403) or resp.status_code >= 500:
            self._check(resp, "/v1/models")
        not_vllm = NotVLLM(
            f"{self.url} answered, but not as an OpenAI-compatible server (GET /v1/models gave "
            f"{_describe(resp)}); check the URL points at vLLM.",
            url=self.url,
            status=resp.status_code,
        )
        if resp.status_code != 200:
            raise not_vllm
        try:
            data = shape.loads(resp.content)
        except shape.ShapeError as exc:
            raise errors.malformed(self.url + "/v1/models", str(exc)) from None
        except ValueError:
            raise not_vllm from None
        if not isinstance(data, dict) or not isinstance(data.get("data"), list):
            raise not_vllm
        out = []
        for i, m in enumerate(data["data"]):
            if not (isinstance(m, dict) and "id" in m):
                continue
            try:
                out.append(ServedModel.model_validate(m))
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise errors.malformed(self.url + "/v1/models",
                                       f"data[{i}].{where} is {shape.describe(m.get(where))}: {first['msg']}") from None
        return out

    async def version(self) -> str | None:
        """GET /version: vLLM's version string, or None when the server has no such endpoint."""
        resp = await self._request("GET", "/version")
        if resp.status_code != 200:
            return None
        try:
            data = shape.loads(resp.content)
        except ValueError:  # not JSON, or absurdly nested: a server that is not vLLM has no version
            return None
        value = data.get("version") if isinstance(data, dict) else None
        return str(value) if value and isinstance(value, str | int | float) else None

    async def metrics_text(self) -> str:
        """GET /metrics: the Prometheus exposition text."""
        resp = await self._request("GET", "/metrics")
        if resp.status_code == 404:
            raise NotVLLM(f"{self.url} has no /metrics endpoint; this does not look like a vLLM server.",
                          url=self.url, status=404)
        self._check(resp, "/metrics")
        return resp.text

    async def resolve_model(self, name: str | None = None) -> ServedModel:
        """The served model called ``name`` (default: the target's model, else the first served).

        A server that answers but cannot list its models (no /v1/models, or an error there, as
        ``transformers serve`` gives without a hub cache) is still usable when the name is given: the
        name is taken as is and the requests themselves will say if it is wrong.
        """
        wanted = name or self.target.model
        try:
            served = await self.models()
        except EndpointError as exc:
            if exc.status is None or exc.status in (401, 403):
                raise
            if wanted:
                return ServedModel(id=wanted)
            raise ModelNotServed(f"{self.url} could not list its models ({exc}); pass --model NAME with the name "
                                 "it serves.", url=self.url, status=exc.status) from None
        if not served:
            if wanted:  # a server that lists nothing (transformers serve pinned to one model) may still serve it
                return ServedModel(id=wanted)
            raise ModelNotServed(f"{self.url} lists no models; pass --model NAME with the name it serves.",
                                 url=self.url)
        if wanted is None:
            return served[0]
        for m in served:
            if m.id == wanted:
                return m
        names = ", ".join(m.id for m in served)
        raise ModelNotServed(f"Model '{wanted}' is not served by {self.url}; it serves: {names}.", url=self.url)

    async def tokenize(self, text: str, *, model: str | None = None, add_special_tokens: bool = False) -> list[int]:
        """POST /tokenize with the server's own tokenizer."""
        payload: dict[str, Any] = {"prompt": text, "add_special_tokens": add_special_tokens}
        if model:
            payload["model"] = model
        return self._tokens(await self._json("POST", "/tokenize", json=payload))

    async def tokenize_chat(self, messages: list[dict[str, Any]], *, model: str | None = None) -> list[int]:
        """POST /tokenize with chat messages: the tokens the server prefills, template included."""
        payload: dict[str, Any] = {"messages": messages, "add_generation_prompt": True}
        if model:
            payload["model"] = model
        return self._tokens(await self._json("POST", "/tokenize", json=payload))

    def _tokens(self, data: Any) -> list[int]:
        try:
            return list(shape.ints(shape.obj(data, "the reply").get("tokens"), "tokens"))
        except shape.ShapeError as exc:
            raise errors.malformed(self.url + "/tokenize", str(exc)) from None

    async def detokenize(self, tokens: list[int], *, model: str | None = None) -> str:
        """POST /detokenize."""
        payload: dict[str, Any] = {"tokens": tokens}
        if model:
            payload["model"] = model
        data = await self._json("POST", "/detokenize", json=payload)
        try:
            prompt = shape.obj(data, "the reply").get("prompt")
            if not isinstance(prompt, str):
                raise shape.ShapeError(f"prompt is {shape.describe(prompt)}, not a string")
        except shape.ShapeError as exc:
            raise errors.malformed(self.url + "/detokenize", str(exc)) from None
        return prompt

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        model: str,
        max_tokens: int | None = None,
        extra: dict[str, Any] | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> StreamResult:
        """Stream POST /v1/chat/completions with usage; never raises for request failures."""
        body = {"model": model, "messages": messages}
        return await self._stream("/v1/chat/completions", body, max_tokens, extra, on_delta)

    async def complete(
        self,
        prompt: str | list[int],
        *,
        model: str,
        max_tokens: int | None = None,
        extra: dict[str, Any] | None = None,
        on_delta: Callable[[str], None] | None = None,
    ) -> StreamResult:
        """Stream POST /v1/completions with usage; never raises for request failures."""
        body = {"model": model, "prompt": prompt}
        return await self._stream("/v1/completions", body, max_tokens, extra, on_delta)

    async def _stream(
        self,
        path: str,
        body: dict[str, Any],
        max_tokens: int | None,
        extra: dict[str, Any] | None,
        on_delta: Callable[[str], None] | None,
    ) -> StreamResult:
        # Usage is always asked for: token counts come from the server, never from counting chunks.
        payload: dict[str, Any] = {**body, "stream": True, "stream_options": {"include_usage": True}}
        if max_tokens is not None:
            payload["max_tokens"] = max_tokens
        payload.update(extra or {})
        # Streams may legitimately take minutes; only the connect phase keeps the short timeout.
        timeout = httpx.Timeout(self.stream_timeout, connect=self.timeout)
        return await stream(self._http, path, payload, timeout=timeout, on_delta=on_delta)


def _short(exc: Exception) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:160]


def _describe(resp: httpx.Response) -> str:
    ctype = resp.headers.get("content-type", "")
    if "html" in ctype or resp.text.lstrip().lower().startswith(("<!doctype", "<html")):
        return f"HTTP {resp.status_code} with an HTML page"
    return f"HTTP {resp.status_code}"
