"""Where an accelerator is offered and how much quota is left, without creating anything.

The seed looped *creating* paid resources zone by zone to find capacity; this only reads:

- GCE GPUs: zones offering the type (``acceleratorTypes.aggregatedList``) and the region quota
  ``NVIDIA_L4_GPUS`` / ``PREEMPTIBLE_...`` with limit and usage (``regions.get``).
- Cloud Run GPUs: the documented regions (data below, with its source) and the per-region limit of
  Cloud Run's GPU quotas from the Cloud Quotas API.
- TPUs: zones whose ``acceleratorTypes`` list the type, and the per-zone limit of the TPU quota
  from the Cloud Quotas API. Quota is not capacity: a zone can have quota and still be stocked out.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import anyio
from pydantic import BaseModel, Field

from inferctl.cloud.clients import CloudContext, plain, to_dict
from inferctl.cloud.errors import CloudError
from inferctl.errors import ConfigError

CapacityPlatform = Literal["gce", "cloudrun", "tpu"]
GPUS = {"nvidia-l4": "NVIDIA_L4", "nvidia-rtx-pro-6000": "NVIDIA_RTX_PRO_6000"}
TPUS = {"v6e": ("v6e-", "V6E"), "v5e": ("v5litepod-", "V5SLITEPOD")}
# Cloud Run GPU regions as documented (run/docs/configuring/services/gpu, stored Nov 2026; see gcp.md §6a).
CLOUDRUN_REGIONS = {
    "nvidia-l4": ["asia-southeast1", "asia-south1", "europe-west1", "europe-west4", "us-central1", "us-east4"],
    "nvidia-rtx-pro-6000": ["asia-southeast1", "asia-south2", "europe-west4", "us-central1"],
}
CLOUDRUN_QUOTA_WORDS = {"nvidia-l4": "l4", "nvidia-rtx-pro-6000": "rtxpro6000"}


class CapacityRow(BaseModel):
    platform: CapacityPlatform = Field(description="gce, cloudrun or tpu.")
    location: str = Field(description="Region (GCE, Cloud Run) or zone (TPU).")
    offered: bool = Field(description="The accelerator is offered here.")
    zones: list[str] = Field(default_factory=list, description="GCE: zones of the region that offer it.")
    quota_metric: str | None = Field(default=None, description="Quota metric / quota id read.")
    quota_limit: float | None = Field(default=None, description="Quota limit (None: unknown).")
    quota_usage: float | None = Field(default=None, description="Quota in use (GCE only; None: unknown).")
    available: float | None = Field(default=None, description="limit - usage, or the limit when usage is unknown.")


class CapacityReport(BaseModel):
    """`inferctl capacity`: one row per region or zone."""

    accelerator: str = Field(description="What was asked for.")
    project: str
    rows: list[CapacityRow]
    notes: list[str] = Field(default_factory=list, description="What the numbers do and do not say.")


def _region(zone: str) -> str:
    return zone.rsplit("-", 1)[0]


def _in(location: str, regions: list[str] | None) -> bool:
    return not regions or any(location == r or location.startswith(r + "-") for r in regions)


async def gce_rows(ctx: CloudContext, accelerator: str, regions: list[str] | None) -> list[CapacityRow]:
    client = ctx.accelerator_types()

    def offered_zones() -> list[str]:
        zones = []
        for scope, scoped in client.aggregated_list(project=ctx.project, timeout=ctx.timeout):
            for at in getattr(scoped, "accelerator_types", []) or []:
                if at.name == accelerator:
                    zones.append(scope.removeprefix("zones/"))
        return zones

    zones = await ctx.call(plain(offered_zones), f"list zones offering {accelerator}")
    by_region: dict[str, list[str]] = {}
    for z in sorted(zones):
        by_region.setdefault(_region(z), []).append(z)
    wanted = sorted({r for r in by_region if _in(r, regions)} | set(regions or []))
    metric = GPUS[accelerator] + "_GPUS"
    limiter = anyio.CapacityLimiter(8)

    async def one(region: str) -> CapacityRow:
        row = CapacityRow(platform="gce", location=region, offered=region in by_region,
                          zones=by_region.get(region, []), quota_metric=metric)
        async with limiter:
            try:
                data = to_dict(await ctx.call(ctx.regions().get, f"read quotas of {region}", project=ctx.project,
                                              region=region))
            except CloudError:
                return row
        for q in data.get("quotas") or []:
            if q.get("metric") == metric:
                row.quota_limit, row.quota_usage = float(q.get("limit", 0)), float(q.get("usage", 0))
                row.available = row.quota_limit - row.quota_usage
        return row

    return await _gather([lambda r=r: one(r) for r in wanted])


async def _quota_infos(ctx: CloudContext, service: str) -> list[dict[str, Any]]:
    client = ctx.quotas()

    def fetch() -> list[dict[str, Any]]:
        pager = client.list_quota_infos(parent=f"projects/{ctx.project}/locations/global/services/{service}",
                                        timeout=ctx.timeout)
        return [to_dict(q) for q in pager]

    return await ctx.call(plain(fetch), f"read {service} quotas")


def _quota_by_location(infos: list[dict[str, Any]], match: re.Pattern[str], key: str) -> dict[str, tuple[str, float]]:
    out: dict[str, tuple[str, float]] = {}
    for info in infos:
        qid = info.get("quotaId", "")
        if not match.search(qid) or "preemptible" in qid.lower():
            continue
        for dim in info.get("dimensionsInfos") or []:
            loc = (dim.get("dimensions") or {}).get(key)
            value = (dim.get("details") or {}).get("value")
            if loc and value is not None:
                out[loc] = (qid, float(value))
    return out


async def cloudrun_rows(ctx: CloudContext, accelerator: str, regions: list[str] | None) -> list[CapacityRow]:
    documented = CLOUDRUN_REGIONS[accelerator]
    infos = await _quota_infos(ctx, "run.googleapis.com")
    word = CLOUDRUN_QUOTA_WORDS[accelerator]
    quota = _quota_by_location(infos, re.compile(rf"(?i)gpu.*{word}|{word}.*gpu|nvidia{word}"), "region")
    out = []
    for region in sorted(set(documented) | set(quota)):
        if not _in(region, regions):
            continue
        qid, limit = quota.get(region, (None, None))
        out.append(CapacityRow(platform="cloudrun", location=region, offered=region in documented,
                               quota_metric=qid, quota_limit=limit, available=limit))
    return out


async def tpu_rows(ctx: CloudContext, family: str, regions: list[str] | None) -> list[CapacityRow]:
    prefix, quota_word = TPUS[family]
    client = ctx.tpu()

    def zones() -> list[str]:
        from google.cloud.location import locations_pb2

        resp = client.list_locations(locations_pb2.ListLocationsRequest(name=f"projects/{ctx.project}"))
        return sorted(loc.location_id for loc in resp.locations)

    all_zones = [z for z in await ctx.call(plain(zones), "list TPU zones") if _in(z, regions)]
    infos = await _quota_infos(ctx, "tpu.googleapis.com")
    quota = _quota_by_location(infos, re.compile(quota_word, re.IGNORECASE), "zone")
    limiter = anyio.CapacityLimiter(8)

    async def one(zone: str) -> CapacityRow:
        async with limiter:
            def types() -> list[str]:
                parent = f"projects/{ctx.project}/locations/{zone}"
                return [t.type_ for t in client.list_accelerator_types(parent=parent, timeout=ctx.timeout)]
            try:
                offered = [t for t in await ctx.call(plain(types), f"list TPU types in {zone}") if t.startswith(prefix)]
            except CloudError:
                offered = []
        qid, limit = quota.get(zone, (None, None))
        return CapacityRow(platform="tpu", location=zone, offered=bool(offered), zones=offered, quota_metric=qid,
                           quota_limit=limit, available=limit)

    return await _gather([lambda z=z: one(z) for z in all_zones])


async def _gather(jobs: list[Any]) -> list[CapacityRow]:
    results: list[CapacityRow | None] = [None] * len(jobs)

    async def run(i: int) -> None:
        results[i] = await jobs[i]()

    async with anyio.create_task_group() as tg:
        for i in range(len(jobs)):
            tg.start_soon(run, i)
    return [r for r in results if r is not None]


async def find_capacity(ctx: CloudContext, accelerator: str, *, regions: list[str] | None = None,
                        platforms: list[CapacityPlatform] | None = None) -> CapacityReport:
    """Offered locations and quota left for ``accelerator`` (nvidia-l4, nvidia-rtx-pro-6000, v6e, v5e)."""
    asked, accelerator = accelerator, cloud_name(accelerator)
    notes = ["Quota is not capacity: a location with quota can still be out of stock."]
    rows: list[CapacityRow] = []
    if accelerator in GPUS:
        chosen = platforms or (["cloudrun"] if accelerator == "nvidia-rtx-pro-6000" else ["gce", "cloudrun"])
        if "gce" in chosen:
            rows += await gce_rows(ctx, accelerator, regions)
        if "cloudrun" in chosen:
            rows += await cloudrun_rows(ctx, accelerator, regions)
            notes.append("Cloud Run quota is the limit only (usage is not exposed by the Cloud Quotas API).")
    elif accelerator in TPUS:
        rows += await tpu_rows(ctx, accelerator, regions)
        notes.append("TPU quota is the per-zone limit in chips; usage is not exposed by the Cloud Quotas API.")
    rows.sort(key=lambda r: (not r.offered, -(r.available or 0), r.platform, r.location))
    return CapacityReport(accelerator=asked, project=ctx.project, rows=rows, notes=notes)


def cloud_name(name: str) -> str:
    """Any accelerator name the catalog knows (l4, nvidia-l4, tpu-v6e, v6e, v6e-4...) -> the name the capacity
    APIs use (nvidia-l4, v6e). The catalog's alias table decides; this only picks the cloud's spelling."""
    from inferctl.catalog import resolve_accelerator

    try:
        acc, _ = resolve_accelerator(name)
    except ConfigError:
        acc = None
    for candidate in ([acc.name, *acc.aliases] if acc else []):
        if candidate in GPUS or candidate in TPUS:
            return candidate
    known = ", ".join(sorted(_names_with_capacity()))
    raise ConfigError(f"Unknown accelerator '{name}' for a capacity lookup; use one of {known} (or an alias).")


def _names_with_capacity() -> list[str]:
    from inferctl.catalog.accelerators import accelerators

    return [a.name for a in accelerators().values() if any(n in GPUS or n in TPUS for n in [a.name, *a.aliases])]
