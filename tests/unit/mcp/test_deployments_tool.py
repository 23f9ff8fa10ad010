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
