"""TPU VMs through queued resources: the create body, state progression, get / delete.

Unlike the seed, creating a queued resource touches nothing else: no listing-and-deleting of other
queued resources in the zone, and delete only ever addresses the one resource it was given (and
refuses, in ops, when it does not carry inferctl's label).
"""

from __future__ import annotations

from typing import Any

from inferctl.cloud.clients import CloudContext, to_dict
from inferctl.cloud.errors import ResourceNotFound
from inferctl.cloud.ownership import CREATED_KEY, record, recorded
from inferctl.cloud.requests import PlannedRequest, gcloud_command
from inferctl.cloud.secrets import api_key_gcloud, api_key_requests
from inferctl.cloud.startup import startup_script
from inferctl.cloud.status import IMAGE_KEY, DeploymentStatus, is_managed
from inferctl.profiles.profile import Profile

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
PENDING = ("STATE_UNSPECIFIED", "CREATING", "ACCEPTED", "WAITING_FOR_RESOURCES", "PROVISIONING")
STATE_DESCRIPTIONS = {  # the API's own descriptions, shortened, shown while waiting
    "CREATING": "request received; checking whether it can be honoured",
    "ACCEPTED": "accepted and queued",
    "WAITING_FOR_RESOURCES": "queued until there is capacity in the zone",
    "PROVISIONING": "capacity found; the TPU VM is being provisioned",
    "ACTIVE": "provisioned and ready",
    "FAILED": "the request could not be completed",
    "DELETING": "being deleted",
    "SUSPENDING": "resources are being deleted",
    "SUSPENDED": "resources were deleted",
}


def parent(profile: Profile) -> str:
    return f"projects/{profile.project}/locations/{profile.location}"


def node_id(profile: Profile) -> str:
    return f"{profile.resource_id}-node"


def qr_name(profile: Profile) -> str:
    return f"{parent(profile)}/queuedResources/{profile.resource_id}"


def network_tag(profile: Profile) -> str:
    return f"inferctl-{profile.resource_id}"[:63]


def queued_resource_body(profile: Profile) -> dict[str, Any]:
    node: dict[str, Any] = {
        "acceleratorType": profile.accelerator,
        "runtimeVersion": profile.runtime_version,
        "networkConfig": {"network": profile.network, "enableExternalIps": profile.external_ip},
        "labels": profile.resource_labels(),
        "tags": [network_tag(profile)],
        "metadata": {"startup-script": startup_script(profile), CREATED_KEY: record(profile), IMAGE_KEY: profile.image},
        "serviceAccount": {"scope": [SCOPE], **({"email": profile.service_account} if profile.service_account
                                                else {})},
    }
    body: dict[str, Any] = {
        "tpu": {"nodeSpec": [{"parent": parent(profile), "nodeId": node_id(profile), "node": node}]},
        "queueingPolicy": {"validUntilDuration": f"{profile.valid_until_s}s"},
    }
    if profile.spot:
        body["spot"] = {}
    return body


def plan_requests(profile: Profile) -> list[PlannedRequest]:
    from inferctl.cloud import gce

    reqs = api_key_requests(profile)
    if profile.allowed_source_ranges:
        fw = gce.firewall_body(profile)
        fw["targetTags"] = [network_tag(profile)]
        reqs.append(PlannedRequest(api="compute", method="firewalls.insert", parent=f"projects/{profile.project}",
                                   collection="global/firewalls", resource_id=fw["name"], body=fw,
                                   why=f"Let {', '.join(profile.allowed_source_ranges)} reach port {profile.port}."))
    reqs.append(PlannedRequest(api="tpu", method="queuedResources.create", parent=parent(profile),
                               collection="queuedResources", resource_id=profile.resource_id,
                               id_param="queuedResourceId", body=queued_resource_body(profile),
                               why="Queue the TPU request (waits until ACTIVE, or FAILED with the reason)."))
    return reqs


def gcloud(profile: Profile) -> list[str]:
    p = profile
    out = api_key_gcloud(p)
    if p.allowed_source_ranges:
        from inferctl.cloud import gce

        out.append(gcloud_command("compute", "firewall-rules", "create", gce.firewall_name(p), f"--project={p.project}",
                                  f"--network={p.network}", f"--allow=tcp:{p.port}",
                                  "--source-ranges=" + ",".join(p.allowed_source_ranges),
                                  f"--target-tags={network_tag(p)}"))
    parts = ["compute", "tpus", "queued-resources", "create", p.resource_id, f"--project={p.project}",
             f"--zone={p.location}", f"--node-id={node_id(p)}", f"--accelerator-type={p.accelerator}",
             f"--runtime-version={p.runtime_version}", f"--valid-until-duration={p.valid_until_s}s",
             f"--metadata={CREATED_KEY}={record(p)}", "--metadata-from-file=startup-script=startup.sh",
             *([] if p.external_ip else ["--internal-ips"])]
    if p.spot:
        parts.append("--spot")
    out.append(gcloud_command(*parts))
    return out


# -- live operations ----------------------------------------------------------------------------


async def get(ctx: CloudContext, profile: Profile) -> dict[str, Any] | None:
    client = ctx.tpu()
    try:
        qr = await ctx.call(client.get_queued_resource, f"get queued resource {profile.resource_id}",
                            name=qr_name(profile))
    except ResourceNotFound:
        return None
    return to_dict(qr)


async def get_node(ctx: CloudContext, profile: Profile) -> dict[str, Any] | None:
    client = ctx.tpu()
    try:
        node = await ctx.call(client.get_node, f"get TPU node {node_id(profile)}",
                              name=f"{parent(profile)}/nodes/{node_id(profile)}")
    except ResourceNotFound:
        return None
    return to_dict(node)


def failure_reason(qr: dict[str, Any]) -> str | None:
    state = qr.get("state") or {}
    err = (state.get("failedData") or {}).get("error") or {}
    return err.get("message") or None


def status(profile: Profile, qr: dict[str, Any] | None, node: dict[str, Any] | None = None) -> DeploymentStatus:
    base = {"profile": profile.name, "platform": "tpu", "resource_name": qr_name(profile)}
    if qr is None:
        return DeploymentStatus(**base, exists=False, phase="absent", managed=False)
    state = (qr.get("state") or {}).get("state", "STATE_UNSPECIFIED")
    phase = ("ready" if state == "ACTIVE" else "failed" if state == "FAILED"
             else "deleting" if state in ("DELETING", "SUSPENDING") else "stopped" if state == "SUSPENDED"
             else "pending")
    spec_node = ((qr.get("tpu") or {}).get("nodeSpec") or [{}])[0].get("node") or {}
    labels = (node or {}).get("labels") or spec_node.get("labels") or {}
    url = internal = None
    for ep in (node or {}).get("networkEndpoints") or []:
        external = (ep.get("accessConfig") or {}).get("externalIp")
        url = url or (f"http://{external}:{profile.port}" if external else None)
        internal = internal or (f"http://{ep['ipAddress']}:{profile.port}" if ep.get("ipAddress") else None)
    reason = failure_reason(qr) if phase == "failed" else STATE_DESCRIPTIONS.get(state)
    node_state = (node or {}).get("state")
    if phase == "ready" and node_state in ("STOPPED", "STOPPING", "STARTING"):
        phase = "stopped" if node_state != "STARTING" else "pending"
        reason = f"the node is {node_state} (inferctl start / stop)"
    return DeploymentStatus(**base, exists=True, phase=phase, state=state, reason=reason, url=url,
                            internal_url=internal, accelerator=spec_node.get("acceleratorType"),
                            labels=labels, managed=is_managed(labels),
                            network_access=profile.network_access, access_hint=profile.access_hint(),
                            created_with=recorded(((node or {}).get("metadata") or spec_node.get("metadata")
                                                   or {}).get(CREATED_KEY)),
                            image=((node or {}).get("metadata") or spec_node.get("metadata") or {}).get(IMAGE_KEY))


async def delete(ctx: CloudContext, profile: Profile) -> None:
    """Delete this one queued resource (force=True also deletes its ACTIVE node)."""
    from google.cloud import tpu_v2

    client = ctx.tpu()
    await ctx.call(client.delete_queued_resource, f"delete queued resource {profile.resource_id}",
                   request=tpu_v2.DeleteQueuedResourceRequest(name=qr_name(profile), force=True))


async def power(ctx: CloudContext, profile: Profile, action: str) -> None:
    """``nodes.stop`` / ``nodes.start`` of this profile's node. A refusal becomes a sentence naming destroy."""
    from google.cloud import tpu_v2

    from inferctl.cloud.errors import CloudError, ResourceNotFound

    client = ctx.tpu()
    name = f"{parent(profile)}/nodes/{node_id(profile)}"
    req = tpu_v2.StopNodeRequest(name=name) if action == "stop" else tpu_v2.StartNodeRequest(name=name)
    fn = client.stop_node if action == "stop" else client.start_node
    try:
        await ctx.call(fn, f"{action} TPU node {node_id(profile)}", request=req)
    except ResourceNotFound:
        raise
    except CloudError as exc:
        raise CloudError(f"Cloud TPU would not {action} {node_id(profile)} ({exc}). Not every TPU can be stopped "
                         f"(queued-resource and multi-host slices may not); `inferctl destroy {profile.name}` stops "
                         "the bill, and the next deploy downloads the weights again.") from None
