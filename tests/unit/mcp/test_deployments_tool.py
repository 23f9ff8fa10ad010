"""describe_deployment without a profile lists everything with an accelerator (the `deployments` command folded
into an existing tool: the 25-tool budget stays)."""

from __future__ import annotations

import pytest
from tests.unit.mcp.conftest import client, text

pytestmark = pytest.mark.anyio
FOREIGN = "projects/test-proj/zones/europe-west4-a/instances/someones-a100"


async def test_describe_deployment_without_a_profile_lists_what_you_pay_for(gcp):
    gcp.state.instances[FOREIGN] = {"name": "someones-a100", "status": "RUNNING", "labels": {},
                                    "machineType": "zones/europe-west4-a/machineTypes/a2-highgpu-1g"}
    async with client() as c:
        hidden = await c.call_tool("describe_deployment", {})
        shown = await c.call_tool("describe_deployment", {"unmanaged": True})
        bad = await c.call_tool("describe_deployment", {"include_plan": True})
    assert not hidden.is_error, text(hidden)
    assert hidden.structured_content["deployments"]["rows"] == []
    assert "did not create are not shown" in text(hidden)
    rows = shown.structured_content["deployments"]["rows"]
    assert [r["resource"]["name"] for r in rows] == [FOREIGN] and rows[0]["resource"]["managed"] is False
    assert "NOT created by inferctl (not touched)" in text(shown)
    assert bad.is_error and "include_plan needs a profile" in text(bad)
    assert not [r for r in gcp.state.requests if r.method != "GET"]


def answering(action: str, asked: list[str]):
    from mcp.types import ElicitResult

    async def callback(context, params):
        asked.append(params.message)
        return ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)

    return callback


async def test_stop_and_start_through_scale_deployment_need_confirmation(gcp):
    import asyncio

    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.deploy import apply_plan, build_plan
    from inferctl.profiles.profile import load_profile

    p = load_profile("gce-g2-48-31b").with_project()
    await asyncio.to_thread(lambda: asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01,
                                                           timeout=20)))
    vm = "projects/test-proj/zones/us-central1-a/instances/gce-g2-48-31b"
    asked: list[str] = []
    async with client(allow_write=True) as c:
        dry = await c.call_tool("scale_deployment", {"profile": "gce-g2-48-31b", "power": "stop"})
        mixed = await c.call_tool("scale_deployment", {"profile": "gce-g2-48-31b", "power": "stop",
                                                       "min_instances": 1})
    assert "Dry run: would stop the VM" in text(dry) and mixed.is_error
    async with client(allow_write=True) as c:  # a client that cannot be asked: refused (as for destroy)
        refused = await c.call_tool("scale_deployment", {"profile": "gce-g2-48-31b", "power": "stop",
                                                         "dry_run": False})
    assert refused.is_error and gcp.state.instances[vm]["status"] == "RUNNING"
    async with client(allow_write=True, elicitation_callback=answering("accept", asked)) as c:
        stopped = await c.call_tool("scale_deployment", {"profile": "gce-g2-48-31b", "power": "stop",
                                                         "dry_run": False})
    assert not stopped.is_error, text(stopped)
    assert gcp.state.instances[vm]["status"] == "TERMINATED" and "Stop the Google Cloud resource" in asked[0]
