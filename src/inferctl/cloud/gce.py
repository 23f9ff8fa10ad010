"""GCE GPU VMs (g2 = NVIDIA L4): the instance and firewall bodies, and get / scale / delete.

Safe by construction: the startup script holds secret names only (startup.py); vLLM requires an
API key; a firewall rule is created only for the CIDRs the profile lists, never 0.0.0.0/0 (serve.py
refuses it), and it targets only this VM's network tag.
"""

from __future__ import annotations

import contextlib
from typing import Any

from inferctl.cloud.clients import CloudContext, to_dict
from inferctl.cloud.errors import ResourceNotFound
from inferctl.cloud.ownership import CREATED_KEY, firewall_marker, firewall_name, record, recorded
from inferctl.cloud.requests import PlannedRequest, gcloud_command
from inferctl.cloud.secrets import api_key_gcloud, api_key_requests
from inferctl.cloud.startup import startup_script
from inferctl.cloud.status import IMAGE_KEY, DeploymentStatus, is_managed
from inferctl.profiles.profile import Profile

IMAGE_PROJECT = "deeplearning-platform-release"
IMAGE_FAMILY = "common-cu129-ubuntu-2204-nvidia-580"  # Deep Learning VM: NVIDIA driver + Docker + toolkit
SCOPE = "https://www.googleapis.com/auth/cloud-platform"


def network_tag(profile: Profile) -> str:
    return f"inferctl-{profile.resource_id}"[:63]


def instance_name(profile: Profile) -> str:
    return f"projects/{profile.project}/zones/{profile.location}/instances/{profile.resource_id}"


def firewall_body(profile: Profile) -> dict[str, Any]:
    return {
        "name": firewall_name(profile),
        "description": f"vLLM port of {profile.resource_id}; {firewall_marker(profile)}",
        "network": f"global/networks/{profile.network}",
        "direction": "INGRESS",
        "sourceRanges": list(profile.allowed_source_ranges),
        "targetTags": [network_tag(profile)],
        "allowed": [{"IPProtocol": "tcp", "ports": [str(profile.port)]}],
    }


def instance_body(profile: Profile) -> dict[str, Any]:
    zone = profile.location
    scheduling: dict[str, Any] = {"onHostMaintenance": "TERMINATE"}  # GPU VMs cannot live-migrate
    if profile.spot:
        scheduling.update(provisioningModel="SPOT", instanceTerminationAction="STOP", automaticRestart=False)
    else:
        scheduling.update(provisioningModel="STANDARD", automaticRestart=True)
    body: dict[str, Any] = {
        "name": profile.resource_id,
        "machineType": f"zones/{zone}/machineTypes/{profile.machine_type}",
        "labels": profile.resource_labels(),
        "tags": {"items": [network_tag(profile)]},
        "disks": [{"boot": True, "autoDelete": True, "initializeParams": {
            "sourceImage": f"projects/{IMAGE_PROJECT}/global/images/family/{IMAGE_FAMILY}",
            "diskSizeGb": str(profile.boot_disk_gb), "diskType": f"zones/{zone}/diskTypes/pd-balanced"}}],
        "networkInterfaces": [{"network": f"global/networks/{profile.network}",
                               **({"accessConfigs": [{"name": "External NAT", "type": "ONE_TO_ONE_NAT"}]}
                                  if profile.external_ip else {})}],  # tunnel (default): no external IP
        "scheduling": scheduling,
        "serviceAccounts": [{"email": profile.service_account or "default", "scopes": [SCOPE]}],
        "metadata": {"items": [{"key": "startup-script", "value": startup_script(profile)},
                               {"key": "install-nvidia-driver", "value": "True"},
                               {"key": CREATED_KEY, "value": record(profile)},
                               {"key": IMAGE_KEY, "value": profile.image}]},
    }
    if not (profile.machine_type or "").startswith(("g2-", "a2-", "a3-", "a4-")):
        # GPUs are bundled with accelerator-optimized shapes; other shapes attach them explicitly
        body["guestAccelerators"] = [{"acceleratorType": f"zones/{zone}/acceleratorTypes/{profile.accelerator}",
                                      "acceleratorCount": profile.accelerator_count}]
    return body


def plan_requests(profile: Profile) -> list[PlannedRequest]:
    reqs = api_key_requests(profile)
    if profile.allowed_source_ranges:
        reqs.append(PlannedRequest(api="compute", method="firewalls.insert", parent=f"projects/{profile.project}",
                                   collection="global/firewalls", resource_id=firewall_name(profile),
                                   body=firewall_body(profile),
                                   why=f"Let {', '.join(profile.allowed_source_ranges)} reach port {profile.port}."))
    reqs.append(PlannedRequest(api="compute", method="instances.insert",
                               parent=f"projects/{profile.project}/zones/{profile.location}", collection="instances",
                               resource_id=profile.resource_id, body=instance_body(profile),
                               why="Create the GPU VM (waits until it is RUNNING)."))
    return reqs


def gcloud(profile: Profile) -> list[str]:
    p = profile
    out = api_key_gcloud(p)
    if p.allowed_source_ranges:
        out.append(gcloud_command("compute", "firewall-rules", "create", firewall_name(p), f"--project={p.project}",
                                  f"--network={p.network}", "--direction=INGRESS", f"--allow=tcp:{p.port}",
                                  "--source-ranges=" + ",".join(p.allowed_source_ranges),
                                  f"--target-tags={network_tag(p)}"))
    parts = ["compute", "instances", "create", p.resource_id, f"--project={p.project}", f"--zone={p.location}",
             f"--machine-type={p.machine_type}", f"--image-family={IMAGE_FAMILY}", f"--image-project={IMAGE_PROJECT}",
             f"--boot-disk-size={p.boot_disk_gb}GB", "--boot-disk-type=pd-balanced", "--maintenance-policy=TERMINATE",
             f"--tags={network_tag(p)}", f"--scopes={SCOPE}", *([] if p.external_ip else ["--no-address"]),
             "--labels=" + ",".join(f"{k}={v}" for k, v in sorted(p.resource_labels().items())),
             f"--metadata=install-nvidia-driver=True,{CREATED_KEY}={record(p)}",
             "--metadata-from-file=startup-script=startup.sh"]
    if p.spot:
        parts += ["--provisioning-model=SPOT", "--instance-termination-action=STOP"]
    if p.service_account:
        parts.append(f"--service-account={p.service_account}")
    out.append(gcloud_command(*parts))
    return out


# -- live operations ----------------------------------------------------------------------------


async def get(ctx: CloudContext, profile: Profile) -> dict[str, Any] | None:
    client = ctx.instances()
    try:
        inst = await ctx.call(client.get, f"get VM {profile.resource_id}", project=profile.project,
                              zone=profile.location, instance=profile.resource_id)
    except ResourceNotFound:
        return None
    return to_dict(inst)


def addresses(inst: dict[str, Any]) -> tuple[str | None, str | None]:
    """(external, internal) IPv4 of the first network interface."""
    nic = (inst.get("networkInterfaces") or [{}])[0]
    external = next((ac.get("natIP") for ac in nic.get("accessConfigs") or [] if ac.get("natIP")), None)
    return external, nic.get("networkIP")


def status(profile: Profile, inst: dict[str, Any] | None) -> DeploymentStatus:
    base = {"profile": profile.name, "platform": "gce", "resource_name": instance_name(profile)}
    if inst is None:
        return DeploymentStatus(**base, exists=False, phase="absent", managed=False)
    state = inst.get("status")
    phase = {"RUNNING": "ready", "TERMINATED": "stopped", "STOPPED": "stopped", "SUSPENDED": "stopped",
             "STOPPING": "stopped", "DEPROVISIONING": "deleting"}.get(state or "", "pending")
    external, internal = addresses(inst)
    mt = (inst.get("machineType") or "").rsplit("/", 1)[-1] or None
    meta = {i.get("key"): i.get("value") for i in (inst.get("metadata") or {}).get("items") or []}
    return DeploymentStatus(
        **base, exists=True, phase=phase, state=state, reason=inst.get("statusMessage") or None,
        url=f"http://{external}:{profile.port}" if external else None,
        internal_url=f"http://{internal}:{profile.port}" if internal else None,
        accelerator=f"{profile.accelerator_count}x {profile.accelerator}", machine_type=mt,
        labels=inst.get("labels") or {}, managed=is_managed(inst.get("labels")),
        network_access=profile.network_access, access_hint=profile.access_hint(),
        created_with=recorded(meta.get(CREATED_KEY)),
        image=next((i.get("value") for i in (inst.get("metadata") or {}).get("items") or []
                    if i.get("key") == IMAGE_KEY), None))


async def delete(ctx: CloudContext, profile: Profile) -> None:
    client = ctx.instances()
    op = await ctx.call(client.delete, f"delete VM {profile.resource_id}", project=profile.project,
                        zone=profile.location, instance=profile.resource_id)
    await wait_op(ctx, op, f"delete VM {profile.resource_id}")


async def get_firewall(ctx: CloudContext, project: str, name: str) -> dict[str, Any] | None:
    try:
        return to_dict(await ctx.call(ctx.firewalls().get, f"get firewall {name}", project=project, firewall=name))
    except ResourceNotFound:
        return None


async def delete_firewall(ctx: CloudContext, project: str, name: str) -> None:
    with contextlib.suppress(ResourceNotFound):
        op = await ctx.call(ctx.firewalls().delete, f"delete firewall {name}", project=project, firewall=name)
        await wait_op(ctx, op, f"delete firewall {name}")


async def set_machine_type(ctx: CloudContext, profile: Profile, machine_type: str) -> None:
    """Stop, change the machine type, start again (the only way Compute allows it)."""
    from google.cloud import compute_v1

    client = ctx.instances()
    kw = {"project": profile.project, "zone": profile.location, "instance": profile.resource_id}
    await wait_op(ctx, await ctx.call(client.stop, "stop the VM", **kw), "stop the VM")
    body = compute_v1.InstancesSetMachineTypeRequest(machine_type=f"zones/{profile.location}/machineTypes/"
                                                                  f"{machine_type}")
    await wait_op(ctx, await ctx.call(client.set_machine_type, "set the machine type", **kw,
                                       instances_set_machine_type_request_resource=body), "set the machine type")
    await wait_op(ctx, await ctx.call(client.start, "start the VM", **kw), "start the VM")


async def wait_op(ctx: CloudContext, op: Any, what: str, *, timeout: float = 900.0) -> None:
    """Wait for a Compute operation with our own operations client.

    ``ExtendedOperation.result()`` polls through a client the library builds itself, which ignores
    our endpoint; polling here keeps every request on the same, configured endpoint.
    """
    import time

    import anyio

    from inferctl.cloud.errors import DeployFailed

    deadline = time.monotonic() + timeout
    while getattr(getattr(op, "status", None), "name", "DONE") != "DONE":  # IntEnum: str() is the number
        if time.monotonic() > deadline:
            raise DeployFailed(f"{what}: the operation did not finish within {timeout:.0f}s.")
        await anyio.sleep(0.5 if ctx.endpoint else 2.0)
        zone = (getattr(op, "zone", "") or "").rsplit("/", 1)[-1]
        if zone:
            op = await ctx.call(ctx.zone_operations().get, what, project=ctx.project, zone=zone, operation=op.name)
        else:
            op = await ctx.call(ctx.global_operations().get, what, project=ctx.project, operation=op.name)
    code, message = operation_error(op)
    if code or message:
        from inferctl.cloud.errors import classify

        raise classify(code, message or "operation failed", what=what)


def operation_error(op: Any) -> tuple[int | None, str]:
    """(HTTP status, "CODE: message; ...") of a finished Compute operation, or (None, "") when it succeeded.

    Both shapes carry it: the ``ExtendedOperation`` ``insert`` returns and the plain ``Operation`` that
    ``zoneOperations.get`` returns (whose ``error.errors`` hold e.g. ``ZONE_RESOURCE_POOL_EXHAUSTED``).
    """
    raw = getattr(op, "_extended_operation", op)
    errors = list(getattr(getattr(raw, "error", None), "errors", None) or [])
    parts = [f"{e.code}: {e.message}" if e.code else e.message for e in errors]
    message = "; ".join(p for p in parts if p) or (getattr(raw, "http_error_message", "") or "")
    code = getattr(raw, "http_error_status_code", None) or None
    if not message and not code:
        return None, ""
    return code, message


async def power(ctx: CloudContext, profile: Profile, action: str) -> None:
    """``instances.stop`` / ``instances.start`` of this one VM, waiting for the operation."""
    client = ctx.instances()
    fn = client.stop if action == "stop" else client.start
    what = f"{action} VM {profile.resource_id}"
    await wait_op(ctx, await ctx.call(fn, what, project=profile.project, zone=profile.location,
                                      instance=profile.resource_id), what)
