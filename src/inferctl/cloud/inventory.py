"""Every accelerator-bearing resource in a project: Cloud Run GPU services, GPU VMs, TPU queued resources and nodes.

Read-only. Each row says whether inferctl created it (``managed-by=inferctl``) and which profile it belongs to;
what inferctl did not create is listed only when asked, and nothing here can change it.

- GCE: one ``instances.aggregatedList`` covers every zone.
- Cloud Run: ``services.list`` per region (the v2 API does not take the ``-`` wildcard): by default the
  documented GPU regions plus the regions of the known profiles; ``all_regions``: every Compute region.
- TPU: ``queuedResources.list`` and ``nodes.list`` per zone: by default the zones of the known profiles;
  ``all_regions``: every zone the TPU API lists. A node created by a queued resource is shown as that queued
  resource, once.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from inferctl.cloud.clients import CloudContext, plain, to_dict
from inferctl.cloud.errors import CloudError
from inferctl.profiles.profile import MANAGED_LABEL, MANAGED_VALUE, PROFILE_LABEL

Kind = Literal["cloudrun-service", "gce-instance", "tpu-queued-resource", "tpu-node"]
_BUNDLED = re.compile(r"^(a2|a3|a4)-[a-z]+-(\d+)g$")
_G2_GPUS = {"g2-standard-4": 1, "g2-standard-8": 1, "g2-standard-12": 1, "g2-standard-16": 1, "g2-standard-24": 2,
            "g2-standard-32": 1, "g2-standard-48": 4, "g2-standard-96": 8}  # Compute docs, G2 machine types
_G2_ACCELERATOR = "nvidia-l4"


class Resource(BaseModel):
    """One accelerator-bearing resource."""

    kind: Kind
    name: str = Field(description="Full resource name.")
    location: str = Field(description="Region (Cloud Run) or zone.")
    state: str | None = Field(default=None, description="RUNNING, TERMINATED, ACTIVE, READY, Ready...")
    accelerator: str | None = Field(default=None, description="nvidia-l4, v6e-4...")
    accelerator_count: int | None = Field(default=None, description="GPUs per instance (TPU: None, see the type).")
    machine_type: str | None = None
    spot: bool = False
    cpu: str | None = Field(default=None, description="Cloud Run CPU limit.")
    memory: str | None = Field(default=None, description="Cloud Run memory limit.")
    min_instances: int | None = Field(default=None, description="Cloud Run minimum instances (billed while idle).")
    created: str | None = Field(default=None, description="Creation time, RFC 3339.")
    last_start: str | None = Field(default=None, description="GCE: last start time, RFC 3339.")
    labels: dict[str, str] = Field(default_factory=dict)
    managed: bool = Field(description="Created by inferctl (managed-by=inferctl).")
    profile: str | None = Field(default=None, description="The inferctl-profile label.")
    running: bool = Field(description="Its accelerators are billed now (Cloud Run: min instances > 0).")


class Inventory(BaseModel):
    project: str
    resources: list[Resource]
    scope: list[str] = Field(default_factory=list, description="What was listed, where.")
    problems: list[str] = Field(default_factory=list, description="Listings that failed, in one sentence each.")


def _managed(labels: dict[str, str]) -> bool:
    return labels.get(MANAGED_LABEL) == MANAGED_VALUE


def gce_accelerators(inst: dict[str, Any]) -> tuple[str | None, int | None]:
    """(type, count) of a VM's GPUs: attached ones, or those bundled with an accelerator-optimized shape."""
    for acc in inst.get("guestAccelerators") or []:
        return (acc.get("acceleratorType") or "").rsplit("/", 1)[-1] or None, int(acc.get("acceleratorCount", 1))
    mt = (inst.get("machineType") or "").rsplit("/", 1)[-1]
    if mt in _G2_GPUS:
        return _G2_ACCELERATOR, _G2_GPUS[mt]
    m = _BUNDLED.match(mt)
    if m:
        return {"a2": "nvidia-a100", "a3": "nvidia-h100", "a4": "nvidia-b200"}[m.group(1)], int(m.group(2))
    return None, None


def gce_row(scope: str, inst: dict[str, Any]) -> Resource | None:
    acc, count = gce_accelerators(inst)
    if acc is None:
        return None
    labels = inst.get("labels") or {}
    zone = scope.removeprefix("zones/")
    sched = inst.get("scheduling") or {}
    return Resource(kind="gce-instance", name=f"projects/{{p}}/zones/{zone}/instances/{inst.get('name')}",
                    location=zone, state=inst.get("status"), accelerator=acc, accelerator_count=count,
                    machine_type=(inst.get("machineType") or "").rsplit("/", 1)[-1] or None,
                    spot=sched.get("provisioningModel") == "SPOT", created=inst.get("creationTimestamp"),
                    last_start=inst.get("lastStartTimestamp"), labels=labels, managed=_managed(labels),
                    profile=labels.get(PROFILE_LABEL), running=inst.get("status") in ("RUNNING", "STAGING"))


def run_row(svc: dict[str, Any]) -> Resource | None:
    template = svc.get("template") or {}
    acc = (template.get("nodeSelector") or {}).get("accelerator")
    if not acc:
        return None
    limits = ((template.get("containers") or [{}])[0].get("resources") or {}).get("limits") or {}
    labels = svc.get("labels") or {}
    min_inst = int((template.get("scaling") or {}).get("minInstanceCount", 0))
    name = svc.get("name", "")
    return Resource(kind="cloudrun-service", name=name, location=name.split("/")[3] if name.count("/") >= 3 else "",
                    state="Ready" if (svc.get("terminalCondition") or {}).get("state") == "CONDITION_SUCCEEDED"
                    else (svc.get("terminalCondition") or {}).get("state"),
                    accelerator=acc, accelerator_count=int(limits.get("nvidia.com/gpu", 1)), cpu=limits.get("cpu"),
                    memory=limits.get("memory"), min_instances=min_inst, created=svc.get("createTime"),
                    labels=labels, managed=_managed(labels), profile=labels.get(PROFILE_LABEL), running=min_inst > 0)


def qr_row(qr: dict[str, Any]) -> Resource:
    node = (((qr.get("tpu") or {}).get("nodeSpec") or [{}])[0]).get("node") or {}
    labels = node.get("labels") or {}
    state = (qr.get("state") or {}).get("state")
    name = qr.get("name", "")
    return Resource(kind="tpu-queued-resource", name=name, location=name.split("/")[3], state=state,
                    accelerator=node.get("acceleratorType"), spot="spot" in qr, created=qr.get("createTime"),
                    labels=labels, managed=_managed(labels), profile=labels.get(PROFILE_LABEL),
                    running=state == "ACTIVE")


def node_row(node: dict[str, Any]) -> Resource:
    labels = node.get("labels") or {}
    name = node.get("name", "")
    sched = node.get("schedulingConfig") or {}
    return Resource(kind="tpu-node", name=name, location=name.split("/")[3], state=node.get("state"),
                    accelerator=node.get("acceleratorType"), spot=bool(sched.get("spot") or sched.get("preemptible")),
                    created=node.get("createTime"), labels=labels, managed=_managed(labels),
                    profile=labels.get(PROFILE_LABEL), running=node.get("state") in ("READY", "CREATING", "STARTING"))


async def _list(ctx: CloudContext, what: str, fetch: Any) -> list[dict[str, Any]]:
    return await ctx.call(plain(lambda: [to_dict(x) for x in fetch()]), what)


async def list_resources(ctx: CloudContext, *, run_regions: list[str], tpu_zones: list[str] | None) -> Inventory:
    """Accelerator resources in the project. ``tpu_zones=None``: every zone the TPU API lists."""
    out = Inventory(project=ctx.project, resources=[])

    # GCE: every zone at once
    def vms() -> list[Resource]:
        rows = []
        for scope, scoped in ctx.instances().aggregated_list(project=ctx.project, timeout=ctx.timeout):
            for inst in getattr(scoped, "instances", []) or []:
                row = gce_row(scope, to_dict(inst))
                if row:
                    rows.append(row.model_copy(update={"name": row.name.replace("{p}", ctx.project)}))
        return rows

    try:
        out.resources += await ctx.call(plain(vms), "list VMs in every zone")
        out.scope.append("GCE: every zone (aggregated list)")
    except CloudError as exc:
        out.problems.append(str(exc))

    run = ctx.run()
    for region in run_regions:
        try:
            items = await _list(ctx, f"list Cloud Run services in {region}",
                                lambda r=region: run.list_services(parent=f"projects/{ctx.project}/locations/{r}",
                                                                   timeout=ctx.timeout))
        except CloudError as exc:
            out.problems.append(str(exc))
            continue
        out.resources += [row for row in (run_row(s) for s in items) if row]
    out.scope.append(f"Cloud Run: {', '.join(run_regions) or 'no region'}")

    tpu = ctx.tpu()
    if tpu_zones is None:
        def zones() -> list[str]:
            from google.cloud.location import locations_pb2

            resp = tpu.list_locations(locations_pb2.ListLocationsRequest(name=f"projects/{ctx.project}"))
            return sorted(loc.location_id for loc in resp.locations)

        try:
            tpu_zones = await ctx.call(plain(zones), "list TPU zones")
        except CloudError as exc:
            out.problems.append(str(exc))
            tpu_zones = []
    for zone in tpu_zones:
        parent = f"projects/{ctx.project}/locations/{zone}"
        try:
            qrs = await _list(ctx, f"list TPU queued resources in {zone}",
                              lambda p=parent: tpu.list_queued_resources(parent=p, timeout=ctx.timeout))
            nodes = await _list(ctx, f"list TPU nodes in {zone}",
                                lambda p=parent: tpu.list_nodes(parent=p, timeout=ctx.timeout))
        except CloudError as exc:
            out.problems.append(str(exc))
            continue
        from_qr = {f"{spec.get('parent')}/nodes/{spec.get('nodeId')}" for qr in qrs
                   for spec in (qr.get("tpu") or {}).get("nodeSpec") or []}
        out.resources += [qr_row(qr) for qr in qrs]
        out.resources += [node_row(n) for n in nodes if n.get("name") not in from_qr]
    out.scope.append(f"TPU: {', '.join(tpu_zones) or 'no zone'}")
    out.resources.sort(key=lambda r: (not r.managed, r.kind, r.location, r.name))
    return out


async def all_regions(ctx: CloudContext) -> list[str]:
    """Every Compute region of the project (Cloud Run's regions are a subset)."""
    def fetch() -> list[str]:
        return sorted(r.name for r in ctx.regions().list(project=ctx.project, timeout=ctx.timeout))

    return await ctx.call(plain(fetch), "list regions")
