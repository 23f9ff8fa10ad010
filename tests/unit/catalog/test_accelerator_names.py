"""Accelerator names mean the same thing everywhere: one alias table (the accelerator catalog's) behind plan,
cost and capacity."""

from __future__ import annotations

import pytest

from inferctl.catalog import resolve_accelerator
from inferctl.catalog.prices import hardware_price
from inferctl.cloud.capacity import cloud_name
from inferctl.errors import ConfigError
from inferctl.ops.plan import plan
from inferctl.plan.config import build_config

V6E_ONE = ["tpu-v6e", "v6e", "trillium", "TPU-V6E", "v6e-1", "tpu-v6e-1"]


@pytest.mark.parametrize(("name", "key", "count"), [
    ("l4", "l4", None), ("nvidia-l4", "l4", None), ("L4", "l4", None), ("nvidia-rtx-pro-6000", "rtx-pro-6000", None),
    ("tpu-v6e", "tpu-v6e", None), ("v6e", "tpu-v6e", None), ("v6e-4", "tpu-v6e", 4), ("tpu-v6e-4", "tpu-v6e", 4),
    ("v5litepod-8", "tpu-v5e", 8), ("a100-40", "a100-40", None), ("a100-80", "a100-80", None),
])
def test_one_alias_table_resolves_names_and_slices(name, key, count):
    acc, devices = resolve_accelerator(name)
    assert (acc.name, devices) == (key, count)


@pytest.mark.parametrize("name", ["l4-2", "h100-8", "v7x", "", "v6e-0"])
def test_unknown_names_and_gpu_counts_are_refused_with_the_names(name):
    with pytest.raises(ConfigError, match="Unknown accelerator"):
        resolve_accelerator(name)


def test_plan_reads_every_spelling_the_same_way():
    def kv(accelerator: str, count: int = 1):
        cfg = build_config(model="gemma-4-12b", accelerator=accelerator, count=count, quant="bf16")
        r = plan(cfg, context=1024, output_tokens=128)
        return cfg.accelerator, cfg.count, r.memory.kv.kv_cache_tokens

    base = kv("tpu-v6e", 4)
    assert base[:2] == ("tpu-v6e", 4)
    assert kv("v6e", 4) == kv("v6e-4") == kv("tpu-v6e-4") == kv("trillium", 4) == base
    assert kv("l4") == kv("nvidia-l4")
    with pytest.raises(ConfigError, match="slice of 4 chips but count is 2"):
        build_config(model="gemma-4-12b", accelerator="v6e-4", count=2)


def test_cost_reads_every_spelling_the_same_way():
    one = {hardware_price(n).usd_per_hour for n in V6E_ONE}
    assert len(one) == 1
    assert hardware_price("v6e-4").usd_per_hour == hardware_price("tpu-v6e-4").usd_per_hour > one.pop()
    assert hardware_price("l4").usd_per_hour == hardware_price("nvidia-l4").usd_per_hour
    assert hardware_price("rtx6000").usd_per_hour == hardware_price("nvidia-rtx-pro-6000").usd_per_hour
    assert hardware_price("g2").usd_per_hour == hardware_price("gce-g2-standard-8").usd_per_hour  # a family


def test_capacity_reads_every_spelling_the_same_way():
    assert {cloud_name(n) for n in ["l4", "nvidia-l4", "g2", "L4"]} == {"nvidia-l4"}
    assert {cloud_name(n) for n in [*V6E_ONE, "v6e-4", "tpu-v6e-8"]} == {"v6e"}
    assert cloud_name("tpu-v5e") == cloud_name("v5litepod") == "v5e"
    assert cloud_name("rtx-pro-6000") == "nvidia-rtx-pro-6000"
    with pytest.raises(ConfigError, match="Unknown accelerator 'h100' for a capacity lookup"):
        cloud_name("h100")
