"""estimate_cost prices the runs this server created: a simulated run recorded its hardware, so no hardware or
price_per_hour argument is needed."""

from __future__ import annotations

import pytest
from tests.unit.mcp.conftest import client, text

from inferctl.catalog.prices import hardware_price
from inferctl.errors import ConfigError

pytestmark = pytest.mark.anyio
GRID = {"concurrencies": [1, 4], "contexts": [128], "output_tokens": 32}


@pytest.mark.parametrize(("sim", "same_as"), [
    ({"model": "gemma-4-12b", "quant": "w4a16", "accelerator": "l4"}, "cloudrun-l4"),
    ({"model": "gemma-4-12b", "accelerator": "v6e-4"}, "tpu-v6e-4"),
    ({"profile": "cloudrun-l4-12b-qat"}, "cloudrun-l4-12b-qat"),
])
async def test_estimate_cost_of_a_simulated_run_needs_no_hardware(isolated, sim, same_as):
    async with client() as c:
        run = await c.call_tool("simulate_sweep", {**sim, **GRID})
        assert not run.is_error, text(run)
        run_id = run.structured_content["run_id"]
        for tier in ("on-demand", "spot"):
            cost = await c.call_tool("estimate_cost", {"run_ids": [run_id], "tier": tier})
            try:
                expected = hardware_price(same_as, tier)
            except ConfigError as exc:  # no such tier for this deployment: the same sentence, not a guess
                assert cost.is_error and str(exc).split(";")[0] in text(cost)
                continue
            assert not cost.is_error, text(cost)
            hw = cost.structured_content["result"]["hardware"]
            assert hw["usd_per_hour"] == pytest.approx(expected.usd_per_hour) and hw["tier"] == expected.tier


async def test_a_simulation_given_a_price_is_costed_at_that_price(isolated):
    async with client() as c:
        run = await c.call_tool("simulate_sweep", {"model": "gemma-4-12b", "quant": "w4a16", "accelerator": "l4",
                                                   "count": 2, "price_per_hour": 1.25, **GRID})
        assert not run.is_error, text(run)
        cost = await c.call_tool("estimate_cost", {"run_ids": [run.structured_content["run_id"]]})
    assert not cost.is_error, text(cost)
    assert cost.structured_content["result"]["hardware"]["usd_per_hour"] == pytest.approx(2.5)
    assert cost.structured_content["result"]["monthly"]["always_on_usd"] == pytest.approx(2.5 * 730, rel=0.01)
