"""`describe`, `destroy` and `scale` a deployed profile.

Destroy and scale touch only the one resource the profile names, and refuse a resource that does
not carry ``managed-by=inferctl`` and this profile's ``inferctl-profile`` label unless ``force`` is given:
inferctl never deletes what it did not create, or another profile's, by accident (the seed's "create"
deleted every other TPU in the zone). Destroy also deletes what that deploy created beside a VM or TPU (its
API-key secret, its firewall rule), as recorded on the resource (cloud/ownership.py), and nothing else.
"""

from __future__ import annotations

import contextlib

from pydantic import BaseModel, Field

from inferctl.cloud.clients import CloudContext
from inferctl.cloud.errors import NotManaged, ResourceNotFound
from inferctl.cloud.ownership import firewall_marker, why_not_owned
from inferctl.cloud.status import DeploymentStatus
from inferctl.errors import ConfigError
from inferctl.profiles.profile import Profile, load_profile

VERSION_TIMEOUT_S = 10.0  # describe asks the server its version; a server that does not answer is left out


class ChangeResult(BaseModel):
    """What destroy or scale did."""

    profile: str
    action: str = Field(description="destroyed, scaled, or nothing.")
    resource_name: str
    detail: str = Field(description="One sentence for people.")
    status: DeploymentStatus | None = Field(default=None, description="The resource after the change.")
    resources: list[str] = Field(default_factory=list, description="destroy: every resource deleted (dry run: "
                                 "that would be), the main one first.")
    kept: list[str] = Field(default_factory=list, description="destroy: recorded resources left alone, with why.")


def _setup(name: str, project: str | None) -> tuple[Profile, CloudContext]:
    profile = load_profile(name)
    if project:
        profile = profile.model_copy(update={"project": project})
    profile = profile.with_project()
    return profile, CloudContext(profile.project or "")


async def describe_deployment(name: str, *, project: str | None = None, ask_server: bool = False
                              ) -> DeploymentStatus:
    """State, conditions, revision, URL/IP, image, accelerator, and whether inferctl created it; with
    ``ask_server``, also the vLLM version the running server reports (a call to the server, not to Google Cloud)."""
    from inferctl.cloud.deploy import describe

    profile, ctx = _setup(name, project)
    st = await describe(ctx, profile)
    if ask_server and st.phase == "ready":
        st.vllm_version = await _server_version(ctx, profile, st)
    return st


async def _server_version(ctx: CloudContext, profile: Profile, st: DeploymentStatus) -> str | None:
    """What the running server says its vLLM version is (/version); None when it cannot be asked."""
    from inferctl.cloud.discovery import endpoint_target
    from inferctl.errors import InferctlError
    from inferctl.server.client import VLLMClient

    try:
        target = await endpoint_target(ctx, profile, st)
        async with VLLMClient(target, timeout=VERSION_TIMEOUT_S) as client:
            return await client.version()
    except InferctlError:
        return None


def _refuse_unowned(st: DeploymentStatus, profile: Profile, force: bool, verb: str) -> None:
    """Refuse a resource that is not this profile's own (managed-by=inferctl and inferctl-profile=NAME)."""
    why = why_not_owned(st.labels, profile)
    if why and not force:
        raise NotManaged(f"Refusing to {verb} {st.resource_name}: {why}. Pass --force if you really mean it.")


async def _extras(ctx: CloudContext, profile: Profile, st: DeploymentStatus) -> tuple[list[str], list[str]]:
    """What deploy recorded on the resource, split into (ours and present: delete them, kept: with why)."""
    return await _split_recorded(ctx, profile, st.created_with)


async def delete_recorded(ctx: CloudContext, profile: Profile, names: list[str]) -> list[str]:
    """Delete those of ``names`` (secrets, firewall rules) that still say they are this profile's; returns them."""
    delete, _kept = await _split_recorded(ctx, profile, names)
    for name in delete:
        await _delete_extra(ctx, name)
    return delete


async def _split_recorded(ctx: CloudContext, profile: Profile, names: list[str]) -> tuple[list[str], list[str]]:
    from inferctl.cloud import gce, secrets

    delete, kept = [], []
    for name in names:
        parts = name.split("/")
        if len(parts) == 4 and parts[0] == "projects" and parts[2] == "secrets":
            found = await secrets.get_secret(ctx, name)
            if found is None:
                continue
            why = why_not_owned(found.get("labels"), profile)
        elif len(parts) == 5 and parts[0] == "projects" and parts[2:4] == ["global", "firewalls"]:
            found = await gce.get_firewall(ctx, parts[1], parts[4])
            if found is None:
                continue
            why = None if firewall_marker(profile) in (found.get("description") or "") else \
                "its description does not say it is this profile's"
        else:
            kept.append(f"{name} (not a kind inferctl deletes)")
            continue
        if why:
            kept.append(f"{name} ({why})")
        else:
            delete.append(name)
    return delete, kept


async def _delete_extra(ctx: CloudContext, name: str) -> None:
    from inferctl.cloud import gce, secrets

    parts = name.split("/")
    if parts[2] == "secrets":
        await secrets.delete_secret(ctx, name)
    else:
        await gce.delete_firewall(ctx, parts[1], parts[4])


async def destroy_deployment(name: str, *, project: str | None = None, force: bool = False,
                             dry_run: bool = False) -> ChangeResult:
    """Delete the profile's service / VM / queued resource and exactly what its deploy created beside it.

    ``dry_run`` deletes nothing and lists what would be deleted (and what would be refused or kept).
    """
    from inferctl.cloud.deploy import describe, platform_module

    profile, ctx = _setup(name, project)
    st = await describe(ctx, profile)
    if not st.exists:
        return ChangeResult(profile=name, action="nothing", resource_name=st.resource_name,
                            detail=f"{st.resource_name} does not exist; nothing to destroy.", status=st)
    why = why_not_owned(st.labels, profile)
    if dry_run and why and not force:
        return ChangeResult(profile=name, action="nothing", resource_name=st.resource_name, status=st,
                            detail=f"Dry run: {st.resource_name} would be REFUSED: {why}.")
    _refuse_unowned(st, profile, force, "destroy")
    extras, kept = await _extras(ctx, profile, st)
    resources = [st.resource_name, *extras]
    note = f" Kept: {'; '.join(kept)}." if kept else ""
    if dry_run:
        return ChangeResult(profile=name, action="nothing", resource_name=st.resource_name, status=st,
                            resources=resources, kept=kept,
                            detail=f"Dry run: {', '.join(resources)} would be deleted.{note}")
    with contextlib.suppress(ResourceNotFound):  # gone between describe and delete: the goal is met
        await platform_module(profile).delete(ctx, profile)
    for extra in extras:  # after the VM: nothing may still use its key or its port
        await _delete_extra(ctx, extra)
    return ChangeResult(profile=name, action="destroyed", resource_name=st.resource_name, resources=resources,
                        kept=kept, detail=f"Deleted {', '.join(resources)}.{note}")


async def scale_deployment(name: str, *, project: str | None = None, min_instances: int | None = None,
                           max_instances: int | None = None, machine_type: str | None = None,
                           force: bool = False) -> ChangeResult:
    """Cloud Run: min/max instances. GCE: machine type (stop, change, start). TPU: not scalable in place."""
    from inferctl.cloud import cloudrun, gce
    from inferctl.cloud.deploy import describe

    profile, ctx = _setup(name, project)
    if profile.platform == "tpu":
        raise ConfigError("A TPU queued resource cannot be resized; change accelerator in the profile, destroy and "
                          "deploy again.")
    if profile.platform == "cloudrun":
        if machine_type:
            raise ConfigError("--machine-type is for GCE profiles; Cloud Run scales with --min/--max instances.")
        if min_instances is None and max_instances is None:
            raise ConfigError("Give --min-instances and/or --max-instances.")
        if min_instances is not None and max_instances is not None and min_instances > max_instances:
            raise ConfigError("--min-instances is larger than --max-instances.")
    elif not machine_type:
        raise ConfigError("Give --machine-type (a GCE VM scales by changing its machine type).")
    elif min_instances is not None or max_instances is not None:
        raise ConfigError("--min/--max instances are for Cloud Run profiles; a VM scales with --machine-type.")
    st = await describe(ctx, profile)
    if not st.exists:
        raise ResourceNotFound(f"{st.resource_name} does not exist; deploy it first.")
    _refuse_unowned(st, profile, force, "scale")
    if profile.platform == "cloudrun":
        await cloudrun.scale(ctx, profile, min_instances=min_instances, max_instances=max_instances)
        detail = f"Cloud Run instances: min {min_instances if min_instances is not None else st.min_instances}, " \
                 f"max {max_instances if max_instances is not None else st.max_instances}."
    else:
        assert machine_type is not None
        await gce.set_machine_type(ctx, profile, machine_type)
        detail = f"VM machine type is now {machine_type} (it was stopped and started again)."
    return ChangeResult(profile=name, action="scaled", resource_name=st.resource_name, detail=detail,
                        status=await describe(ctx, profile))


async def power_deployment(name: str, action: str, *, project: str | None = None, force: bool = False,
                           dry_run: bool = False) -> ChangeResult:
    """``stop`` or ``start`` a deployment without destroying it: stop paying, keep what it has.

    GCE: the VM is stopped / started (the boot disk, with its cached weights, survives; the disk is still
    billed). TPU: the node is stopped / started through the TPU API where it allows it; a refusal (Google
    documents no stop for some TPU configurations) comes back as a sentence that names destroy as the way to
    stop paying. Cloud Run: minimum instances to 0 (stop; it still scales up on a request) and back to the
    profile's minimum (start). Only resources carrying this profile's labels, unless ``force``.
    """
    from inferctl.cloud import cloudrun, gce, tpu
    from inferctl.cloud.deploy import describe

    if action not in ("stop", "start"):
        raise ConfigError(f"action must be stop or start (got {action!r}).")
    profile, ctx = _setup(name, project)
    st = await describe(ctx, profile)
    if not st.exists:
        raise ResourceNotFound(f"{st.resource_name} does not exist; nothing to {action} (deploy it first).")
    _refuse_unowned(st, profile, force, action)
    past = "stopped" if action == "stop" else "started"
    if profile.platform == "cloudrun":
        target = 0 if action == "stop" else profile.scaling.min_instances
        if st.min_instances == target:
            detail = (f"{st.resource_name} already has minimum instances {target}"
                      + ("; Cloud Run bills it only while it serves requests." if target == 0 else "."))
            return ChangeResult(profile=name, action="nothing", resource_name=st.resource_name, status=st,
                                detail=detail)
        detail = (f"Cloud Run minimum instances {st.min_instances} -> {target}"
                  + ("; idle instances are no longer billed, and the first request starts one (cold start)."
                     if action == "stop" else " (the profile's minimum)."))
        if dry_run:
            return ChangeResult(profile=name, action="nothing", resource_name=st.resource_name, status=st,
                                detail=f"Dry run: would set {detail[0].lower()}{detail[1:]}")
        await cloudrun.scale(ctx, profile, min_instances=target, max_instances=None)
        return ChangeResult(profile=name, action=past, resource_name=st.resource_name, detail=detail,
                            status=await describe(ctx, profile))
    if profile.platform == "tpu" and st.state != "ACTIVE":
        raise ConfigError(f"{st.resource_name} is {st.state}; only an ACTIVE queued resource has a node to {action}.")
    already = (action == "stop" and st.phase == "stopped") or (action == "start" and st.phase == "ready")
    if profile.platform == "tpu":
        node = await tpu.get_node(ctx, profile)
        node_state = (node or {}).get("state")
        already = (action == "stop" and node_state == "STOPPED") or (action == "start" and node_state == "READY")
    if already:
        return ChangeResult(profile=name, action="nothing", resource_name=st.resource_name, status=st,
                            detail=f"{st.resource_name} is already {past}.")
    what = "VM" if profile.platform == "gce" else "TPU node"
    keeps = ("its boot disk and cached weights are kept (the disk is still billed)" if profile.platform == "gce"
             else "the node is kept")
    if dry_run:
        return ChangeResult(profile=name, action="nothing", resource_name=st.resource_name, status=st,
                            detail=f"Dry run: would {action} the {what} {st.resource_name}"
                                   + (f"; {keeps}." if action == "stop" else "."))
    if profile.platform == "gce":
        await gce.power(ctx, profile, action)
    else:
        await tpu.power(ctx, profile, action)
    return ChangeResult(profile=name, action=past, resource_name=st.resource_name,
                        detail=f"The {what} is {past}" + (f"; {keeps}." if action == "stop" else "."),
                        status=await describe(ctx, profile))
