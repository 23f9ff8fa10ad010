"""ASGI middleware that puts every route of a VM's vLLM server behind its API key.

vLLM's ``--api-key`` guards only ``/v1`` (and a few other prefixes); ``/metrics``, ``/tokenize``,
``/invocations`` and the rest answer anyone. The VM / TPU startup script (startup.py) writes this file,
as is, next to the server and starts vLLM with ``--middleware inferctl_vm_auth.RequireKey``: every HTTP
request then needs ``Authorization: Bearer $VLLM_API_KEY`` (compared in constant time), except
``GET /health`` for load balancers and probes. The key is read from the server's environment, never
written here. Standard library only: it runs inside the vLLM image.
"""

import hmac
import json
import os

OPEN_PATHS = ("/health",)


class RequireKey:
    """Every HTTP request needs the bearer key, except the liveness paths in ``OPEN_PATHS``."""

    def __init__(self, app, key=None):
        self.app = app
        self.key = (key if key is not None else os.environ.get("VLLM_API_KEY", "")).encode()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or (scope.get("path") in OPEN_PATHS and scope.get("method") in ("GET", "HEAD")):
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if self.key and given[:7].lower() == b"bearer " and hmac.compare_digest(given[7:].strip(), self.key):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "Unauthorized: send Authorization: Bearer <API key>"}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
