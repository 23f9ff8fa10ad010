"""`deployments`: everything with an accelerator in the project, what it costs per hour and so far this month.

Managed resources (``managed-by=inferctl``) always; with ``unmanaged``, also accelerator resources inferctl did
not create (shown, never touched: this use case only reads). Hourly prices come from the price catalog
(catalog/prices.py) and nothing else; a resource the catalog cannot price says so instead of guessing.

Cost so far this month is an estimate from what the APIs expose, and says its basis:
- GCE VM running: hourly x hours since its last start (or the month's start, if later) - a lower bound when it
  also ran earlier this month; stopped: 0 for the accelerators now (its disk is still billed, not counted here).
- TPU: hourly x hours since it was created (or the month's start) while it is ACTIVE / READY.
- Cloud Run: the floor its minimum instances cost (min x hourly x hours since creation or the month's start);
  traffic above the minimum costs more and is not visible here.
"""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic import BaseModel, Field

from inferctl.cloud.inventory import Resource
from inferctl.errors import ConfigError


class DeploymentRow(BaseModel):
    resource: Resource
    age_hours: float | None = Field(default=None, description="Hours since it was created.")
    usd_per_hour: float | None = Field(default=None, description="Catalog price per hour while running "
                                       "(Cloud Run: per instance); None: the catalog has no price for it.")
    price_key: str | None = Field(default=None, description="The catalog entry priced.")
    month_to_date_usd: float | None = Field(default=None, description="Estimated cost so far this month.")
    cost_basis: str = Field(description="How the month-to-date number was reached, or why there is none.")


class DeploymentList(BaseModel):
    """`inferctl deployments`: managed (and optionally unmanaged) accelerator resources with their cost."""

    project: str
    rows: list[DeploymentRow]
    running: int = Field(description="Rows whose accelerators are billed now.")
    usd_per_hour_now: float = Field(description="Sum of the hourly prices of the running rows (known prices).")
    month_to_date_usd: float = Field(description="Sum of the known month-to-date estimates.")
    unmanaged_included: bool
    scope: list[str] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def _when(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def gib(memory: str) -> float:
    """A Kubernetes-style quantity (32Gi, 16G, 512Mi) in GiB."""
    import re

    m = re.fullmatch(r"\s*([0-9.]+)\s*(Gi|G|Mi|M|Ti|T)?\s*", memory)
    if not m:
        raise ConfigError(f"Cannot read memory {memory!r}.")
    scale = {"Gi": 1, "G": 1e9 / 2**30, "Mi": 1 / 1024, "M": 1e6 / 2**30, "Ti": 1024, "T": 1e12 / 2**30,
             None: 1 / 2**30}
    return float(m.group(1)) * scale[m.group(2)]


def price_of(r: Resource) -> tuple[str | None, float | None]:
    """(catalog key, USD per hour) for one resource; (key or None, None) when the catalog has no price."""
    from inferctl.catalog.prices import price_per_hour, prices

    catalog = prices()
    tier = "spot" if r.spot else "on-demand"

    def rate(key: str, n: float = 1.0) -> float | None:
        if key not in catalog:
            return None
        try:
            return price_per_hour(key, tier) * n
        except ConfigError:
            return None

    if r.kind == "gce-instance":
        key = f"gce-{r.machine_type}"
        return key, rate(key)
    if r.kind.startswith("tpu"):
        key = f"tpu-{r.accelerator}"
        return key, rate(key)
    gpu = {"nvidia-l4": "cloudrun-gpu-l4", "nvidia-rtx-pro-6000": "cloudrun-gpu-rtx-pro-6000"}.get(r.accelerator or "")
    if gpu is None or not r.cpu or not r.memory:
        return gpu, None
    parts = [rate("cloudrun-vcpu", float(r.cpu)), rate("cloudrun-memory", gib(r.memory)),
             rate(gpu, float(r.accelerator_count or 1))]
    if any(p is None for p in parts):
        return gpu, None
    return f"{gpu} + cloudrun-vcpu x{r.cpu} + cloudrun-memory {r.memory}", sum(p for p in parts if p is not None)


def cost_row(r: Resource, now: datetime) -> DeploymentRow:
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    created = _when(r.created)
    age = (now - created).total_seconds() / 3600 if created else None
    key, hourly = price_of(r)
    if hourly is None:
        return DeploymentRow(resource=r, age_hours=age, price_key=key,
                             cost_basis=f"no catalog price for {key or r.accelerator}; add it under [prices] in the "
                                        "config file")
    if not r.running:
        return DeploymentRow(resource=r, age_hours=age, usd_per_hour=hourly, price_key=key, month_to_date_usd=None,
                             cost_basis=f"{r.state or 'not running'}: its accelerators cost nothing now; time it ran "
                                        "earlier this month is not visible")
    if r.kind == "gce-instance":
        since, basis = _when(r.last_start) or created, "since its last start"
    else:
        since, basis = created, "since it was created"
    if since is None:
        return DeploymentRow(resource=r, age_hours=age, usd_per_hour=hourly, price_key=key,
                             cost_basis="no start time given by the API")
    start = max(since, month_start)
    hours = max(0.0, (now - start).total_seconds() / 3600)
    n = r.min_instances if r.kind == "cloudrun-service" else 1
    if start == month_start:
        basis = "since the month began"
    if r.kind == "cloudrun-service":
        basis = f"floor: {n} minimum instance(s) {basis}; traffic above it costs more"
    elif r.kind == "gce-instance":
        basis = f"at least: running {basis}"
    return DeploymentRow(resource=r, age_hours=age, usd_per_hour=hourly, price_key=key,
                         month_to_date_usd=round(hourly * hours * (n or 0), 2), cost_basis=f"{hours:.1f} h {basis}")


async def list_deployments(*, project: str | None = None, all_regions: bool = False, unmanaged: bool = False,
                           now: datetime | None = None) -> DeploymentList:
    """Every accelerator resource inferctl created (and, with ``unmanaged``, the others) with hourly and
    month-to-date cost. Read-only."""
    from inferctl.cloud import inventory
    from inferctl.cloud.capacity import CLOUDRUN_REGIONS
    from inferctl.cloud.clients import CloudContext
    from inferctl.profiles.profile import list_profiles, resolve_project

    ctx = CloudContext(resolve_project(project))
    profiles = [p for p, _ in list_profiles()]
    if all_regions:
        run_regions = await inventory.all_regions(ctx)
        tpu_zones = None
    else:
        run_regions = sorted({r for regions in CLOUDRUN_REGIONS.values() for r in regions}
                             | {p.region for p in profiles if p.platform == "cloudrun" and p.region})
        tpu_zones = sorted({p.zone for p in profiles if p.platform == "tpu" and p.zone})
    inv = await inventory.list_resources(ctx, run_regions=run_regions, tpu_zones=tpu_zones)
    now = now or datetime.now(UTC)
    rows = [cost_row(r, now) for r in inv.resources if r.managed or unmanaged]
    running = [row for row in rows if row.resource.running]
    notes = ["Prices are the catalog's (inferctl prices); month-to-date numbers are estimates, each with its basis."]
    if not all_regions:
        notes.append("Cloud Run: the GPU regions and your profiles' regions; TPU: your profiles' zones. "
                     "--all-regions lists every region and zone.")
    hidden = sum(1 for r in inv.resources if not r.managed)
    if hidden and not unmanaged:
        notes.append(f"{hidden} accelerator resource(s) inferctl did not create are not shown (--unmanaged).")
    return DeploymentList(
        project=ctx.project, rows=rows, running=len(running),
        usd_per_hour_now=round(sum((row.usd_per_hour or 0) * (row.resource.min_instances or 0
                                   if row.resource.kind == "cloudrun-service" else 1) for row in running), 4),
        month_to_date_usd=round(sum(row.month_to_date_usd or 0 for row in rows), 2),
        unmanaged_included=unmanaged, scope=inv.scope, problems=inv.problems, notes=notes)
