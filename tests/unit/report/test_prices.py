"""The price catalog: every entry sourced and dated, composites add up, config overrides, clear errors."""

from __future__ import annotations

import pytest

from inferctl.catalog import prices as P
from inferctl.errors import ConfigError


@pytest.fixture(autouse=True)
def no_user_config(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    return tmp_path / "config.toml"


def test_every_entry_has_a_source_and_a_date() -> None:
    for e in P.prices().values():
        assert e.source.startswith("https://") and e.date[:4].isdigit(), e.key


def test_composites_are_sums_of_their_parts() -> None:
    assert P.price_per_hour("gce-g2-standard-4") == pytest.approx(0.14679 + 0.56004)
    assert P.price_per_hour("gce-g2-standard-48") == pytest.approx(12 * 0.14679 + 4 * 0.56004, rel=1e-4)
    assert P.price_per_hour("cloudrun-l4") == pytest.approx((8 * 0.000018 + 32 * 0.000002 + 0.0001867) * 3600)
    assert P.price_per_hour("tpu-v6e-4") == pytest.approx(10.8)
    assert P.price_per_hour("tpu-v6e-4", tier="spot") == pytest.approx(4 * 0.54421)


def test_profiles_and_accelerators_resolve() -> None:
    assert P.hardware_price("cloudrun-l4-12b-qat").usd_per_hour == pytest.approx(P.price_per_hour("cloudrun-l4"))
    spot = P.hardware_price("tpu-v6e-1-12b")  # the profile asks for spot
    assert spot.tier == "spot" and spot.usd_per_hour == pytest.approx(0.54421)
    assert P.hardware_price("v6e-4").usd_per_hour == pytest.approx(10.8)
    assert P.hardware_price("g2-standard-48").usd_per_hour == pytest.approx(P.price_per_hour("gce-g2-standard-48"))


def test_config_overrides_and_additions(no_user_config) -> None:
    no_user_config.write_text('[prices.tpu-v6e]\non_demand = 2.0\n\n[prices.my-lab]\non_demand = 1.5\n'
                              'source = "https://example.com/quote"\ndate = "2026-11-01"\n')
    assert P.price_per_hour("tpu-v6e-4") == pytest.approx(8.0)
    assert not P.prices()["tpu-v6e"].verified and "config file" in P.prices()["tpu-v6e"].source
    assert P.hardware_price("my-lab").usd_per_hour == 1.5


def test_errors_name_the_way_out() -> None:
    with pytest.raises(ConfigError, match="Unknown hardware 'nope'.*cloudrun-l4.*tpu-v6e-4"):
        P.hardware_price("nope")
    with pytest.raises(ConfigError, match=r"No on-demand price for 'gce-a3-ultragpu-8g'.*\[prices\.gce-a3-ultragpu"):
        P.price_per_hour("gce-a3-ultragpu-8g")
    with pytest.raises(ConfigError, match="No committed-1y price for 'gce-g2-host-vcpu'"):
        P.price_per_hour("gce-g2-standard-4", tier="committed-1y")
    with pytest.raises(ConfigError, match="Unknown price tier"):
        P.price_per_hour("tpu-v6e", tier="cheap")
