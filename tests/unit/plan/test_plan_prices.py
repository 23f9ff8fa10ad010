"""plan and simulate take a default price per device-hour from the price catalog; --price-per-hour overrides it."""

from __future__ import annotations

import pytest

from inferctl.bench.spec import SweepSpec
from inferctl.catalog.prices import hardware_price
from inferctl.ops.plan import catalog_price, plan
from inferctl.ops.simulate import simulate
from inferctl.profiles.serving import ServingConfig

L4 = ServingConfig(model="gemma-4-12b", accelerator="l4", quant="w4a16", max_model_len=32768)


def test_accelerator_gets_the_catalog_price_and_cost_follows_from_it():
    report = plan(L4, context=1024, output_tokens=128)
    expected = hardware_price("cloudrun-l4").usd_per_hour
    assert report.price_per_device_hour == pytest.approx(expected, rel=1e-6)
    assert "cloudrun-l4" in report.price_source
    for point in report.performance:
        by_hand = expected / 3600 / point.output_throughput * 1e6
        assert point.cost_per_million_output_tokens == pytest.approx(by_hand, rel=1e-3)


def test_given_price_overrides_the_catalog():
    report = plan(L4.model_copy(update={"price_per_device_hour": 0.5}), context=1024, output_tokens=128)
    assert report.price_per_device_hour == 0.5 and report.price_source == "given"


def test_multi_device_deployments_are_priced_per_device():
    per_chip, label = catalog_price("tpu-v6e", count=4)
    assert "tpu-v6e-4" in label
    assert per_chip == pytest.approx(hardware_price("tpu-v6e-4").usd_per_hour / 4)
    per_chip, label = catalog_price("tpu-v6e", count=3)  # no 3-chip slice: the smallest, per chip
    assert "tpu-v6e-1" in label and per_chip == pytest.approx(hardware_price("tpu-v6e-1").usd_per_hour)


def test_catalog_entry_without_a_price_gives_none(monkeypatch):
    from inferctl.catalog import prices
    from inferctl.errors import ConfigError

    def unpriced(name, tier="on-demand"):
        raise ConfigError(f"No {tier} price for '{name}'.")

    monkeypatch.setattr(prices, "hardware_price", unpriced)
    assert catalog_price("l4") is None


def test_profile_is_priced_as_its_whole_deployment():
    per_device, label = catalog_price("l4", profile="cloudrun-l4-12b-qat")
    assert per_device == pytest.approx(hardware_price("cloudrun-l4-12b-qat").usd_per_hour)
    assert "profile cloudrun-l4-12b-qat" in label


def test_local_cpu_has_no_price_and_says_so():
    assert catalog_price("cpu") is None
    report = plan(ServingConfig(model="gemma-4-e2b", accelerator="cpu", max_model_len=2048, kv_cache_memory_gib=1.0),
                  context=128, output_tokens=16)  # fmt: skip
    assert report.price_per_device_hour is None
    assert all(p.cost_per_million_output_tokens is None for p in report.performance)
    assert any("--price-per-hour" in n for n in report.notes)


def test_simulated_run_records_the_catalog_price(tmp_path):
    from inferctl.bench.store import RunDir

    spec = SweepSpec(contexts=[128], concurrencies=[1], output_tokens=8, requests=4, warmup=1).validate_grid()
    summary = simulate(L4, spec, root=tmp_path)
    engine = RunDir.open(summary.path).read_meta().engine
    assert engine["serving_config"]["price_per_device_hour"] == pytest.approx(
        hardware_price("cloudrun-l4").usd_per_hour, rel=1e-6)
    assert "cloudrun-l4" in engine["price_source"]
