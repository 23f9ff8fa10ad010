"""Prices as data (``data/prices.toml``), overridable in the config file, and the loader cost and plan use.

    price_per_hour("cloudrun-l4")                  -> 1.42092 (USD per hour: 8 vCPU + 32 GiB + 1 L4)
    price_per_hour("tpu-v6e", tier="spot")         -> 0.54421 (per chip-hour)
    get_price("gce-g2-standard-48")                -> PriceEntry (source, date, verified, components...)
    hardware_price("cloudrun-l4-12b-qat")          -> HardwarePrice (a deployment profile, a price key,
                                                      or an accelerator name such as "l4" or "v6e-4")

Tiers: ``on-demand``, ``spot``, ``committed-1y``, ``committed-3y``. A tier an entry does not know is a
ConfigError that says how to set it. Config-file overrides (same fields as the TOML; unknown keys add
entries)::

    [prices.cloudrun-gpu-l4]
    on_demand = 0.0001867
    source = "https://cloud.google.com/run/pricing (checked 2026-12-01)"
"""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib import resources
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from inferctl.errors import ConfigError

Tier = Literal["on-demand", "spot", "committed-1y", "committed-3y"]
TIERS: tuple[str, ...] = ("on-demand", "spot", "committed-1y", "committed-3y")
HOURS_PER_MONTH = 730.0  # Google's own convention for monthly estimates (8,760 h / 12)


class PriceEntry(BaseModel):
    """One price: a leaf (a rate per unit) or a composite of other entries (a machine, a slice)."""

    key: str = Field(description="Catalog key, e.g. 'cloudrun-l4' or 'tpu-v6e'.")
    description: str = Field(default="", description="What is priced.")
    unit: Literal["hour", "second"] = Field(default="hour", description="What one price number buys.")
    per: Literal["instance", "gpu", "chip", "vcpu", "gib"] = Field(
        default="instance", description="The priced thing: a whole instance, or one GPU, chip, vCPU or GiB.")
    on_demand: float | None = Field(default=None, ge=0, description="USD per `per` per `unit`.")
    spot: float | None = Field(default=None, ge=0, description="Spot / preemptible rate, same unit.")
    committed_1y: float | None = Field(default=None, ge=0, description="1-year commitment rate, same unit.")
    committed_3y: float | None = Field(default=None, ge=0, description="3-year commitment rate, same unit.")
    components: dict[str, float] = Field(
        default_factory=dict, description="Composite: other keys and their counts; the price is the sum.")
    platform: Literal["cloudrun", "gce", "tpu"] | None = None
    accelerator: str | None = Field(default=None, description="Accelerator catalog key (l4, tpu-v6e...).")
    accelerator_count: int | None = None
    scale_to_zero: bool = Field(default=False, description="An idle deployment can cost nothing (Cloud Run).")
    source: str = Field(description="Where the number comes from (a URL).")
    date: str = Field(description="When it was recorded (ISO date).")
    verified: bool = Field(default=False, description="Checked against Google's own price page.")
    notes: str = ""

    def rate(self, tier: str) -> float | None:
        """The raw number for a tier, in this entry's own unit (None when unknown)."""
        return getattr(self, _tier_field(tier))


class HardwarePrice(BaseModel):
    """What one deployment (one instance, one slice) costs per hour, and where the number came from."""

    key: str = Field(description="The price key or profile name it was resolved from.")
    description: str = ""
    tier: str = Field(default="on-demand", description="on-demand | spot | committed-1y | committed-3y")
    usd_per_hour: float = Field(description="USD per hour for the whole deployment.")
    platform: str | None = None
    scale_to_zero: bool = False
    breakdown: dict[str, float] = Field(default_factory=dict, description="USD per hour of each component.")
    sources: list[str] = Field(default_factory=list, description="Source URLs with their dates.")
    verified: bool = Field(default=False, description="Every component verified.")


def _tier_field(tier: str) -> str:
    if tier not in TIERS:
        raise ConfigError(f"Unknown price tier '{tier}'; tiers: {', '.join(TIERS)}.")
    return tier.replace("-", "_")


@cache
def _shipped() -> dict[str, dict[str, Any]]:
    text = (resources.files("inferctl.catalog") / "data" / "prices.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _overrides() -> tuple[dict[str, dict[str, Any]], str]:
    from inferctl.config import config_path

    path = config_path()
    if not path.exists():
        return {}, str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}.") from None
    table = data.get("prices") or {}
    if not isinstance(table, dict) or not all(isinstance(v, dict) for v in table.values()):
        raise ConfigError(f"[prices] in {path} must hold tables such as [prices.cloudrun-gpu-l4].")
    return table, str(path)


def prices(with_config: bool = True) -> dict[str, PriceEntry]:
    """Every price entry: the shipped catalog with the config file's [prices.KEY] tables merged over it."""
    raw = {k: dict(v) for k, v in _shipped().items()}
    if with_config:
        over, path = _overrides()
        for key, fields in over.items():
            merged = {**raw.get(key, {}), **fields}
            merged.setdefault("source", f"config file {path}")
            merged.setdefault("date", "")
            if key in raw and "source" not in fields:  # an overridden number is no longer the catalog's
                merged["source"] = f"config file {path} (over {raw[key].get('source', '')})"
                merged["verified"] = False
            raw[key] = merged
    out: dict[str, PriceEntry] = {}
    for key, fields in raw.items():
        try:
            out[key] = PriceEntry(key=key, **fields)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ConfigError(f"Price entry '{key}' is invalid at '{where}': {first['msg']}.") from None
    for entry in out.values():
        for part in entry.components:
            if part not in out:
                raise ConfigError(f"Price entry '{entry.key}' uses unknown component '{part}'.")
    return out


def get_price(key: str, catalog: dict[str, PriceEntry] | None = None) -> PriceEntry:
    """One entry by key; an unknown key is a ConfigError listing the valid ones."""
    catalog = catalog if catalog is not None else prices()
    if key in catalog:
        return catalog[key]
    raise ConfigError(f"Unknown price key '{key}'; known keys: {', '.join(sorted(catalog))}.")


def _hourly(entry: PriceEntry, tier: str, catalog: dict[str, PriceEntry], breakdown: dict[str, float],
            count: float = 1.0) -> float:
    if entry.components:
        return sum(_hourly(catalog[k], tier, catalog, breakdown, count * n) for k, n in entry.components.items())
    rate = entry.rate(tier)
    if rate is None:
        raise ConfigError(
            f"No {tier} price for '{entry.key}' ({entry.notes or entry.description}); set "
            f"{_tier_field(tier)} under [prices.{entry.key}] in the config file or pass --price-per-hour.")
    hourly = rate * (3600.0 if entry.unit == "second" else 1.0) * count
    breakdown[entry.key] = round(breakdown.get(entry.key, 0.0) + hourly, 6)
    return hourly


def price_per_hour(key: str, tier: str = "on-demand") -> float:
    """USD per hour for one unit of ``key`` (one instance, or one chip/GPU/vCPU/GiB for leaf entries).

    A composite sums its components. Raises ConfigError for an unknown key or a tier the entry lacks.
    """
    catalog = prices()
    return round(_hourly(get_price(key, catalog), tier, catalog, {}), 6)


def _sources(entry: PriceEntry, catalog: dict[str, PriceEntry]) -> list[str]:
    out = [f"{entry.source} ({entry.date})"] if entry.source else []
    for k in entry.components:
        for s in _sources(catalog[k], catalog):
            if s not in out:
                out.append(s)
    return out


def _verified(entry: PriceEntry, catalog: dict[str, PriceEntry]) -> bool:
    return entry.verified and all(_verified(catalog[k], catalog) for k in entry.components)


def _from_entry(entry: PriceEntry, tier: str, catalog: dict[str, PriceEntry], label: str | None = None,
                extra: dict[str, float] | None = None) -> HardwarePrice:
    breakdown: dict[str, float] = {}
    total = _hourly(entry, tier, catalog, breakdown)
    for k, n in (extra or {}).items():
        total += _hourly(catalog[k], tier, catalog, breakdown, n)
    return HardwarePrice(key=label or entry.key, description=entry.description, tier=tier,
                         usd_per_hour=round(total, 6), platform=entry.platform,
                         scale_to_zero=entry.scale_to_zero, breakdown=breakdown,
                         sources=_sources(entry, catalog), verified=_verified(entry, catalog))


def _gib(memory: str) -> float:
    m = re.fullmatch(r"\s*([\d.]+)\s*(Gi|G|Mi|M)?\s*", memory)
    if not m:
        raise ConfigError(f"Cannot read memory size '{memory}' (use e.g. 32Gi).")
    value, unit = float(m.group(1)), m.group(2) or "Gi"
    return value / 1024.0 if unit in ("Mi", "M") else value


def _profile_price(name: str, tier: str, catalog: dict[str, PriceEntry]) -> HardwarePrice:
    from inferctl.profiles.profile import load_profile

    p = load_profile(name)
    if p.spot and tier == "on-demand":
        tier = "spot"  # the profile asks for spot capacity: that is what it costs
    if p.platform == "cloudrun":
        gpu = "cloudrun-gpu-l4" if "l4" in p.accelerator else "cloudrun-gpu-rtx-pro-6000"
        cpu = float(p.cpu or 4)
        mem = _gib(p.memory or "16Gi")
        parts = {"cloudrun-vcpu": cpu, "cloudrun-memory": mem, gpu: float(p.accelerator_count)}
        synthetic = PriceEntry(key=name, description=f"{p.accelerator} x{p.accelerator_count}, {p.cpu} vCPU, "
                               f"{p.memory}", components=parts, platform="cloudrun", scale_to_zero=True,
                               source="", date="", verified=True)
        return _from_entry(synthetic, tier, catalog)
    if p.platform == "gce":
        key = f"gce-{p.machine_type}" if p.machine_type else None
        if key not in catalog:
            raise ConfigError(f"Profile '{name}' uses machine type {p.machine_type}, which has no price; add "
                              f"[prices.gce-{p.machine_type}] to the config file or pass --price-per-hour.")
        return _from_entry(catalog[key], tier, catalog, label=name)
    key = f"tpu-{p.accelerator}" if not p.accelerator.startswith("tpu-") else p.accelerator
    if key not in catalog:
        raise ConfigError(f"Profile '{name}' uses TPU {p.accelerator}, which has no price; add [prices.{key}] "
                          "to the config file or pass --price-per-hour.")
    return _from_entry(catalog[key], tier, catalog, label=name)


# The deployment an accelerator's name stands for when priced whole (keyed by accelerator catalog key; every
# alias of it resolves through the accelerator catalog's one alias table). A TPU is priced as its slice:
# tpu-v6e, v6e and trillium -> tpu-v6e-1; v6e-4 and tpu-v6e-4 -> tpu-v6e-4.
_DEPLOYMENT_OF = {"l4": "cloudrun-l4", "rtx-pro-6000": "cloudrun-rtx-pro-6000", "a100-40": "gce-a2-highgpu-1g",
                  "a100-80": "gce-a2-ultragpu-1g", "h100": "gce-a3-highgpu-1g", "h200": "gce-a3-ultragpu-8g"}
_MACHINE_FAMILIES = {"g2": "gce-g2-standard-8"}  # a GCE family name prices its smallest machine


def _accelerator_key(name: str) -> str | None:
    """The price key of a whole deployment an accelerator name stands for (None: not an accelerator)."""
    from inferctl.catalog.accelerators import resolve_accelerator

    try:
        acc, devices = resolve_accelerator(name)
    except ConfigError:
        return None
    if acc.kind == "tpu":
        return f"{acc.name}-{devices or 1}"
    return _DEPLOYMENT_OF.get(acc.name)


def hardware_names() -> list[str]:
    """Everything ``hardware_price`` accepts: price keys, profile names and accelerator aliases."""
    from inferctl.profiles.profile import profile_names

    try:
        profiles = profile_names()
    except ConfigError:
        profiles = []
    from inferctl.catalog.accelerators import alias_table

    return sorted({*prices(), *profiles, *_MACHINE_FAMILIES, *(a for a in alias_table() if _accelerator_key(a))})


def hardware_price(name: str, tier: str = "on-demand") -> HardwarePrice:
    """The hourly price of one deployment named by a price key, a deployment profile or an accelerator.

    ``cloudrun-l4`` (price key), ``cloudrun-l4-12b-qat`` (profile: its CPU, memory and GPU), ``l4``,
    ``v6e-4`` (a TPU slice), ``gce-g2-standard-48`` (``g2-standard-48`` works too). Unknown names raise a
    ConfigError listing the valid ones.
    """
    _tier_field(tier)
    catalog = prices()
    accelerator_key = _MACHINE_FAMILIES.get(name) or _accelerator_key(name)  # "tpu-v6e" is a slice, like "v6e"
    if accelerator_key is not None and accelerator_key in catalog:
        return _from_entry(catalog[accelerator_key], tier, catalog, label=name)
    if name in catalog:
        return _from_entry(catalog[name], tier, catalog)
    from inferctl.profiles.profile import is_profile

    if is_profile(name):
        return _profile_price(name, tier, catalog)
    for candidate in (f"gce-{name}", f"tpu-{name}"):
        if candidate and candidate in catalog:
            return _from_entry(catalog[candidate], tier, catalog, label=name)
    raise ConfigError(f"Unknown hardware '{name}'; use a price key, a profile or an accelerator: "
                      f"{', '.join(hardware_names())} (or --price-per-hour).")
