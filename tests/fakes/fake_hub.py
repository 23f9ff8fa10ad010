"""A local stand-in for the Hugging Face hub's two file endpoints, on 127.0.0.1 (the staging copier's seam).

- ``GET /api/models/{org}/{name}/tree/{revision}?recursive=true``: the file listing, one JSON page per
  ``page_size`` entries, the next page linked by ``Link: <...>; rel="next"`` as the hub does; LFS files carry
  ``lfs.size``.
- ``GET /{org}/{name}/resolve/{revision}/{path}``: small files directly; ``.safetensors`` with a 302 to
  ``/cdn/...`` (the hub redirects large files to its CDN), which must arrive WITHOUT the Authorization header.

A gated repo answers 401 without ``Authorization: Bearer <token>``. Every request is recorded with its headers.
This mimics the documented behaviour; it was never compared with the real hub from this machine (no network).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.fakes.fake_vllm import ServerThread


@dataclass
class HubState:
    repo: str = "google/gemma-4-12b-it"
    token: str | None = None  # gated: this token is required
    files: dict[str, bytes] = field(default_factory=dict)
    page_size: int = 2
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)


def build_hub(state: HubState) -> Starlette:
    def authorised(request: Request) -> bool:
        return state.token is None or request.headers.get("authorization") == f"Bearer {state.token}"

    async def tree(request: Request) -> Response:
        state.requests.append((str(request.url), dict(request.headers)))
        if f"{request.path_params['org']}/{request.path_params['name']}" != state.repo:
            return JSONResponse({"error": "Repository not found"}, status_code=404)
        if not authorised(request):
            return JSONResponse({"error": "Access to model is restricted."}, status_code=401)
        entries = []
        for path, data in sorted(state.files.items()):
            entry = {"type": "file", "path": path, "size": len(data), "oid": "0" * 40}
            if path.endswith(".safetensors"):
                entry["lfs"] = {"size": len(data), "oid": "f" * 64, "pointerSize": 134}
                entry["size"] = 134
            entries.append(entry)
        start = int(request.query_params.get("cursor", "0"))
        page = entries[start:start + state.page_size]
        headers = {}
        if start + state.page_size < len(entries):
            nxt = request.url.include_query_params(cursor=str(start + state.page_size))
            headers["Link"] = f'<{nxt}>; rel="next"'
        return Response(json.dumps(page), media_type="application/json", headers=headers)

    async def resolve(request: Request) -> Response:
        state.requests.append((str(request.url), dict(request.headers)))
        if not authorised(request):
            return JSONResponse({"error": "Access to model is restricted."}, status_code=401)
        path = request.path_params["path"]
        if path not in state.files:
            return JSONResponse({"error": "Entry not found"}, status_code=404)
        if path.endswith(".safetensors"):
            return RedirectResponse(f"/cdn/{path}?Expires=1&Signature=x", status_code=302)
        return Response(state.files[path])

    async def cdn(request: Request) -> Response:
        state.requests.append((str(request.url), dict(request.headers)))
        return Response(state.files[request.path_params["path"]], media_type="application/octet-stream")

    return Starlette(routes=[
        Route("/api/models/{org}/{name}/tree/{revision}", tree),
        Route("/cdn/{path:path}", cdn),
        Route("/{org}/{name}/resolve/{revision}/{path:path}", resolve),
    ])


class FakeHub(ServerThread):
    def __init__(self, state: HubState | None = None) -> None:
        self.state = state or HubState()
        super().__init__(build_hub(self.state))
