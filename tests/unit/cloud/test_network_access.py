"""No open doors on a VM: no external IP unless the profile asks (network_access = external), and every route
but GET /health behind the API key (the middleware the startup script installs), shown by plan and describe."""

from __future__ import annotations

import asyncio
import re
import shlex

import httpx
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from inferctl.cloud import gce, tpu
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.cloud.startup import startup_script
from inferctl.ops.lifecycle import describe_deployment
from inferctl.profiles.profile import load_profile

KEY = "k3y-for-the-test-only"


def profile(name: str, **update):
    return load_profile(name).model_copy(update=update).with_project()


def test_vms_get_no_external_ip_by_default():
    for name in ("gce-g2-48-31b",):
        p = profile(name)
        assert p.network_access == "tunnel"
        assert "accessConfigs" not in gce.instance_body(p)["networkInterfaces"][0]
        assert "--no-address" in " ".join(gce.gcloud(p))
    for name in ("tpu-v6e-1-12b", "tpu-v6e-4-26b-moe"):
        p = profile(name)
        node = tpu.queued_resource_body(p)["tpu"]["nodeSpec"][0]["node"]
        assert node["networkConfig"]["enableExternalIps"] is False
        assert "--internal-ips" in " ".join(tpu.gcloud(p))


def test_an_external_ip_only_when_the_profile_asks():
    p = profile("gce-g2-48-31b", network_access="external", allowed_source_ranges=["203.0.113.0/24"])
    assert gce.instance_body(p)["networkInterfaces"][0]["accessConfigs"][0]["type"] == "ONE_TO_ONE_NAT"
    assert "--no-address" not in " ".join(gce.gcloud(p))
    t = profile("tpu-v6e-1-12b", network_access="external")
    assert tpu.queued_resource_body(t)["tpu"]["nodeSpec"][0]["node"]["networkConfig"]["enableExternalIps"] is True


def test_the_plan_gives_the_tunnel_command():
    plan = build_plan(profile("gce-g2-48-31b"))
    hint = next(w for w in plan.warnings if w.startswith("network_access = tunnel"))
    assert "gcloud compute start-iap-tunnel gce-g2-48-31b 8000" in hint and "35.235.240.0/20" in hint
    tpu_plan = build_plan(profile("tpu-v6e-1-12b"))
    assert any("--tunnel-through-iap" in w for w in tpu_plan.warnings)


@pytest.mark.parametrize("name", ["gce-g2-48-31b", "tpu-v6e-1-12b"])
def test_describe_shows_the_access_mode(gcp, name):
    p = profile(name)
    asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))
    st = asyncio.run(describe_deployment(name))
    assert st.network_access == "tunnel" and "tunnel" in (st.access_hint or "")
    assert st.url is None and st.internal_url  # nothing listens on a public address


def _middleware_from_the_startup_script(p) -> type:
    """The exact module text the VM writes, loaded as the VM's Python would."""
    script = startup_script(p)
    m = re.search(r"<<'INFERCTL_AUTH_EOF'\n(.*?)\nINFERCTL_AUTH_EOF\n", script, re.S)
    assert m, "the startup script writes the auth middleware"
    namespace: dict = {}
    exec(compile(m.group(1), "inferctl_vm_auth.py", "exec"), namespace)  # noqa: S102 - our own module text
    return namespace["RequireKey"]


@pytest.mark.parametrize("name", ["gce-g2-48-31b", "tpu-v6e-1-12b"])
def test_the_startup_script_puts_the_middleware_in_front_of_vllm(name):
    p = profile(name)
    script = startup_script(p)
    argv = shlex.split(script.strip().splitlines()[-1])
    assert argv[-2:] == ["--middleware", "inferctl_vm_auth.RequireKey"]
    assert "PYTHONPATH=/opt/inferctl" in argv and "/opt/inferctl:/opt/inferctl:ro" in argv
    assert KEY not in script and "fetch_secret VLLM_API_KEY " in script


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_every_route_but_health_needs_the_key(anyio_backend, monkeypatch):
    monkeypatch.setenv("VLLM_API_KEY", KEY)
    RequireKey = _middleware_from_the_startup_script(profile("gce-g2-48-31b"))  # noqa: N806

    async def ok(request):
        return PlainTextResponse("ok")

    paths = ["/health", "/metrics", "/tokenize", "/detokenize", "/invocations", "/v1/models", "/version", "/docs"]
    app = Starlette(routes=[Route(p, ok, methods=["GET", "POST"]) for p in paths])
    app.add_middleware(RequireKey)  # what vLLM does with --middleware
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://vm") as c:
        assert (await c.get("/health")).status_code == 200
        for path in paths[1:]:
            for method in ("GET", "POST"):
                r = await c.request(method, path)
                assert r.status_code == 401, (method, path)
                assert (await c.request(method, path, headers={"Authorization": "Bearer wrong"})).status_code == 401
                good = await c.request(method, path, headers={"Authorization": f"Bearer {KEY}"})
                assert good.status_code == 200, (method, path)
        assert (await c.post("/health")).status_code == 401
    monkeypatch.setenv("VLLM_API_KEY", "")
    closed = Starlette(routes=[Route("/metrics", ok)])
    closed.add_middleware(RequireKey)  # no key in the environment: nothing opens (fails closed)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=closed), base_url="http://vm") as c:
        assert (await c.get("/metrics", headers={"Authorization": "Bearer "})).status_code == 401
