"""The one builder behind both the dry run and the apply.

    plan = build_plan(profile)             # pure: needs no credentials and makes no call
    print(plan.requests, plan.gcloud)      # what `inferctl deploy PROFILE` shows
    await apply_plan(ctx, plan, profile)   # sends exactly plan.requests, in order, then waits

``apply_plan`` never builds a body of its own: each ``PlannedRequest.body`` is parsed into the
client's message type (so a wrong field name fails loudly before anything is sent) and passed to
the official client. The only value filled at apply time is the generated API key.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from inferctl.cloud import cloudrun, gce, tpu
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.errors import (
    AlreadyExists,
    CloudTimeout,
    DeployFailed,
    QuotaExceeded,
    ResourceNotFound,
    ZoneExhausted,
    is_stockout,
)
from inferctl.cloud.requests import GENERATED, DeployPlan, PlannedRequest
from inferctl.cloud.status import DeploymentStatus
from inferctl.errors import ConfigError
from inferctl.profiles.profile import Profile
from inferctl.profiles.serve import ValidationReport, validate

Progress = Callable[[str], None]
_PLATFORMS = {"cloudrun": cloudrun, "gce": gce, "tpu": tpu}


def platform_module(profile: Profile) -> Any:
    return _PLATFORMS[profile.platform]


def build_plan(profile: Profile, report: ValidationReport | None = None) -> DeployPlan:
    """Validate the profile and build every request; raises ConfigError listing what is wrong.

    ``report`` is the pre-flight check already run by the caller (``ops`` adds the planner's fit check to
    ``validate``'s, so this adapter never imports the planner); without one, ``validate`` runs here.
    """
    profile = profile if profile.project else profile.with_project()
    report = report if report is not None else validate(profile)
    if report.errors:
        raise ConfigError(f"Profile '{profile.name}' cannot be deployed: " + " ".join(report.errors))
    mod = platform_module(profile)
    name = {"cloudrun": cloudrun.service_name, "gce": gce.instance_name, "tpu": tpu.qr_name}[profile.platform]
    return DeployPlan(profile=profile.name, platform=profile.platform, project=profile.project or "",
                      location=profile.location, resource_name=name(profile), requests=mod.plan_requests(profile),
                      gcloud=mod.gcloud(profile), warnings=report.warnings, fit=report.fit)


def _message(cls: Any, body: dict[str, Any]) -> Any:
    # ignore_unknown_fields=False: a misspelt field is a bug we want to see before any request goes out
    return cls.from_json(json.dumps(body), ignore_unknown_fields=False)


async def execute(ctx: CloudContext, req: PlannedRequest) -> Any:
    """Send one planned request with the official client."""
    what = f"{req.method} {req.resource_id or ''}".strip()
    if req.api == "run" and req.method == "services.create":
        from google.cloud import run_v2

        client = ctx.run()
        return await ctx.call(client.create_service, what, parent=req.parent, service_id=req.resource_id,
                              service=_message(run_v2.Service, req.body or {}))
    if req.api == "tpu" and req.method == "queuedResources.create":
        from google.cloud import tpu_v2

        client = ctx.tpu()
        return await ctx.call(client.create_queued_resource, what, parent=req.parent,
                              queued_resource_id=req.resource_id,
                              queued_resource=_message(tpu_v2.QueuedResource, req.body or {}))
    if req.api == "compute":
        from google.cloud import compute_v1

        project = req.parent.split("/")[1]
        if req.method == "firewalls.insert":
            client = ctx.firewalls()
            op = await ctx.call(client.insert, what, project=project,
                                firewall_resource=_message(compute_v1.Firewall, req.body or {}))
        elif req.method == "instances.insert":
            client = ctx.instances()
            op = await ctx.call(client.insert, what, project=project, zone=req.parent.split("/")[3],
                                instance_resource=_message(compute_v1.Instance, req.body or {}))
        else:
            raise ValueError(f"unknown compute method {req.method}")
        await gce.wait_op(ctx, op, what)
        return op
    if req.api == "secretmanager":
        from google.cloud import secretmanager_v1

        from inferctl.cloud.secrets import new_api_key

        client = ctx.secrets()
        if req.method == "secrets.create":
            return await ctx.call(client.create_secret, what, parent=req.parent, secret_id=req.resource_id,
                                  secret=_message(secretmanager_v1.Secret, req.body or {}))
        if req.method == "secrets.addVersion":
            assert (req.body or {}).get("payload", {}).get("data") == GENERATED
            return await ctx.call(client.add_secret_version, what, parent=req.parent,
                                  payload=secretmanager_v1.SecretPayload(data=new_api_key()))
    raise ValueError(f"unknown request {req.api} {req.method}")


async def apply_plan(ctx: CloudContext, plan: DeployPlan, profile: Profile, *, progress: Progress | None = None,
                     wait: bool = True, timeout: float = 3600.0, poll: float = 10.0,
                     created: set[str] | None = None, queued_is_waiting: bool = False) -> DeploymentStatus:
    """Send the plan's requests in order, then wait until ready (or failed, with the reason).

    ``created`` collects the ids of what this apply created (a multi-zone deploy shares one set across zones,
    to clean up exactly those); ``queued_is_waiting``: when the wait runs out while a TPU request is still in
    the queue, it is returned (waiting) instead of raising CloudTimeout.
    """
    say = progress or (lambda _msg: None)
    profile = profile if profile.project else profile.with_project()
    created = created if created is not None else set()
    for req in plan.requests:
        if req.only_if_created and req.only_if_created not in created:
            say(f"skip {req.method} {req.resource_id}: it already existed")
            continue
        say(f"{req.http_method} {req.url}")
        try:
            await execute(ctx, req)
        except AlreadyExists:
            if not req.skip_if_exists:
                raise
            say(f"{req.method} {req.resource_id}: already exists, kept")
            continue
        if req.resource_id:
            created.add(req.resource_id)
    if not wait:
        return await describe(ctx, profile)
    if queued_is_waiting:
        return await wait_ready(ctx, profile, progress=say, timeout=timeout, poll=poll, queued_is_waiting=True)
    return await wait_ready(ctx, profile, progress=say, timeout=timeout, poll=poll)


QUEUED_STATES = ("ACCEPTED", "WAITING_FOR_RESOURCES")  # in the TPU queue: waiting is not failing


async def clean_failed(ctx: CloudContext, profile: Profile) -> str | None:
    """Delete what a failed deploy left in its location (a FAILED queued resource, a failed Cloud Run service),
    only when it carries this profile's labels. Returns the deleted resource's name, or None."""
    from inferctl.cloud.ownership import owned_by

    st = await describe(ctx, profile)
    if not st.exists or not owned_by(st.labels, profile):
        return None
    try:
        await platform_module(profile).delete(ctx, profile)
    except ResourceNotFound:
        return None
    return st.resource_name


async def describe(ctx: CloudContext, profile: Profile) -> DeploymentStatus:
    """The live status of a profile's resource."""
    if profile.platform == "cloudrun":
        return cloudrun.status(profile, await cloudrun.get(ctx, profile))
    if profile.platform == "gce":
        return gce.status(profile, await gce.get(ctx, profile))
    qr = await tpu.get(ctx, profile)
    node = await tpu.get_node(ctx, profile) if qr and (qr.get("state") or {}).get("state") == "ACTIVE" else None
    return tpu.status(profile, qr, node)


async def wait_ready(ctx: CloudContext, profile: Profile, *, progress: Progress | None = None,
                     timeout: float = 3600.0, poll: float = 10.0, queued_is_waiting: bool = False) -> DeploymentStatus:
    """Poll until ready; a failed state raises DeployFailed (ZoneExhausted for TPU stockouts).

    ``queued_is_waiting``: when the time runs out while a TPU queued resource is still in the queue (ACCEPTED /
    WAITING_FOR_RESOURCES), return it, so a multi-zone deploy reports it waiting instead of trying elsewhere."""
    import anyio

    say = progress or (lambda _msg: None)
    deadline = time.monotonic() + timeout
    last = None
    while True:
        st = await describe(ctx, profile)
        line = f"{st.state or st.phase}" + (f": {st.reason}" if st.reason else "")
        if line != last:
            say(line)
            last = line
        if st.phase == "ready":
            return st
        if st.phase == "failed" or (st.phase == "stopped" and profile.platform == "tpu"):
            reason = st.reason or "no reason given"
            low = reason.lower()
            if is_stockout(reason) or (profile.platform == "tpu" and ("capacity" in low or "resources" in low
                                                                       or "exhausted" in low)):
                raise ZoneExhausted(f"{profile.location} has no {profile.accelerator} capacity ({reason}); try "
                                    "another zone from `inferctl capacity` or a longer valid_until_s.")
            if "quota" in low:
                raise QuotaExceeded(f"{st.resource_name} failed for quota in {profile.location}: {reason}")
            raise DeployFailed(f"{st.resource_name} failed: {reason}")
        if time.monotonic() >= deadline:
            if queued_is_waiting and st.state in QUEUED_STATES:
                return st
            raise CloudTimeout(f"{st.resource_name} is still {st.state or st.phase} after {timeout:.0f}s; check its "
                               f"state and logs (CLI: `inferctl describe {profile.name}`, `inferctl logs --target "
                               f"{profile.name}`).")
        await anyio.sleep(poll)
