"""find_capacity, plan_serving and estimate_cost accept the same accelerator names (through the fake Google
Cloud and the official clients, as the other cloud tool tests)."""

from __future__ import annotations

import pytest
from tests.unit.mcp.conftest import client, text

pytestmark = pytest.mark.anyio


async def test_find_capacity_takes_the_catalog_names(gcp):
    s = gcp.state
    s.gpu_zones = {"us-central1-a": ["nvidia-l4"]}
    s.region_quotas = {"us-central1": [{"metric": "NVIDIA_L4_GPUS", "limit": 8, "usage": 3}]}
    s.tpu_zones = {"us-east5-b": ["v6e-1", "v6e-4"]}
    async with client() as c:
        rows = {}
        for name in ("l4", "nvidia-l4", "tpu-v6e", "v6e", "v6e-4"):
            r = await c.call_tool("find_capacity", {"accelerator": name, "platforms": ["gce", "tpu"],
                                                    "regions": ["us-central1", "us-east5"]})
            assert not r.is_error, text(r)
            rows[name] = [(x["platform"], x["location"], x["offered"]) for x in r.structured_content["rows"]]
    assert rows["l4"] == rows["nvidia-l4"] and ("gce", "us-central1", True) in rows["l4"]
    assert rows["tpu-v6e"] == rows["v6e"] == rows["v6e-4"] and ("tpu", "us-east5-b", True) in rows["v6e"]


async def test_plan_serving_takes_a_slice_name():
    async with client() as c:
        a = await c.call_tool("plan_serving", {"model": "gemma-4-12b", "accelerator": "v6e-4"})
        b = await c.call_tool("plan_serving", {"model": "gemma-4-12b", "accelerator": "tpu-v6e", "count": 4})
    assert not a.is_error and not b.is_error, text(a) + text(b)
    assert a.structured_content["memory"] == b.structured_content["memory"]
