"""`deploy`: the plan of a profile (dry run), and applying exactly that plan — in one location, or in the
first of several (``--zones auto|Z1,Z2``) that has capacity.

A multi-zone apply tries the locations in the plan's order. A stockout or quota refusal in one (the errors
docs/cloud.md lists) deletes what this deploy left there — a FAILED queued resource, a failed service — when
it carries this profile's labels, and moves on. A TPU request that reached the queue is *waiting*, not failed:
when the wait runs out while it is still queued it is reported with its state and not retried elsewhere (a
request the queue FAILS for capacity moves on like any stockout). When every location refuses, the API-key secret and
firewall rule this apply created are deleted too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.cloud.requests import DeployPlan
from inferctl.cloud.status import DeploymentStatus
from inferctl.profiles.profile import Profile, load_profile


def plan_deployment(profile_name: str, *, project: str | None = None) -> DeployPlan:
    """The dry run: every API request and the equivalent gcloud commands. Needs no credentials."""
    from inferctl.cloud.deploy import build_plan
    from inferctl.ops.profiles import check_profile

    profile = _profile(profile_name, project)
    return build_plan(profile, check_profile(profile))


async def plan_zoned_deployment(profile_name: str, zones: str, *, project: str | None = None) -> DeployPlan:
    """The dry run of ``--zones``: the zone order and why, with the requests for the first zone.

    ``auto`` reads capacity (offered types and quota; needs credentials, creates nothing); a list is taken as
    given, in its order.
    """
    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.zones import parse_zones, zone_order, zone_order_given

    profile = _profile(profile_name, project)
    given = parse_zones(zones)
    if given is not None:
        order = zone_order_given(profile, given)
    else:
        order = await zone_order(CloudContext(profile.project or ""), profile, "auto")
    plan = plan_deployment(profile_name, project=project) if order[0].location == profile.location else \
        _plan_at(profile, order[0].location)
    return plan.model_copy(update={"zones": order})


def _at(profile: Profile, location: str) -> Profile:
    return profile.model_copy(update={"region" if profile.platform == "cloudrun" else "zone": location})


def _plan_at(profile: Profile, location: str) -> DeployPlan:
    from inferctl.cloud.deploy import build_plan
    from inferctl.ops.profiles import check_profile

    moved = _at(profile, location)
    return build_plan(moved, check_profile(moved))


async def apply_deployment(plan: DeployPlan, *, project: str | None = None,
                           progress: Callable[[str], None] | None = None, wait: bool = True,
                           timeout: float = 3600.0, poll: float = 10.0) -> DeploymentStatus:
    """Send the plan's requests (the same objects the dry run printed) and wait until ready."""
    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.deploy import apply_plan

    profile = _profile(plan.profile, project or plan.project)
    if plan.location != profile.location:
        profile = _at(profile, plan.location)
    ctx = CloudContext(profile.project or plan.project)
    return await apply_plan(ctx, plan, profile, progress=progress, wait=wait, timeout=timeout, poll=poll)


class ZoneAttempt(BaseModel):
    """What happened in one location of a multi-zone deploy."""

    location: str
    outcome: Literal["ready", "waiting", "pending", "stockout", "quota"] = Field(
        description="ready; waiting (TPU request in the queue, not retried elsewhere); pending (--no-wait); "
                    "stockout or quota (moved on).")
    detail: str = Field(description="The state, or Google's refusal in one sentence.")
    cleaned: list[str] = Field(default_factory=list, description="What this deploy left there and deleted.")


class ZonedDeployResult(BaseModel):
    """`deploy --zones ... --apply`: where it landed and what each location said."""

    profile: str
    location: str | None = Field(description="Where the deployment now is (None: nowhere had capacity).")
    status: DeploymentStatus | None = None
    attempts: list[ZoneAttempt]
    cleaned: list[str] = Field(default_factory=list, description="Resources created beside it and deleted "
                               "because no location had capacity (API-key secret, firewall rule).")
    detail: str


async def apply_in_zones(plan: DeployPlan, *, project: str | None = None,
                         progress: Callable[[str], None] | None = None, wait: bool = True,
                         timeout: float = 3600.0, poll: float = 10.0) -> ZonedDeployResult:
    """Apply ``plan`` in the first of ``plan.zones`` that has capacity (see the module doc)."""
    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.deploy import QUEUED_STATES, apply_plan, clean_failed
    from inferctl.cloud.errors import QuotaExceeded, ZoneExhausted

    say = progress or (lambda _msg: None)
    base = _profile(plan.profile, project or plan.project)
    ctx = CloudContext(base.project or plan.project)
    created: set[str] = set()
    attempts: list[ZoneAttempt] = []
    order = [z.location for z in plan.zones] or [plan.location]
    for n, location in enumerate(order, 1):
        profile = _at(base, location)
        zplan = plan if location == plan.location else _plan_at(base, location)
        say(f"zone {n}/{len(order)}: {location}")
        try:
            st = await apply_plan(ctx, zplan, profile, progress=say, wait=wait, timeout=timeout, poll=poll,
                                  created=created, queued_is_waiting=True)
        except (ZoneExhausted, QuotaExceeded) as exc:
            kind: Literal["stockout", "quota"] = "quota" if isinstance(exc, QuotaExceeded) else "stockout"
            gone = await clean_failed(ctx, profile)
            attempts.append(ZoneAttempt(location=location, outcome=kind, detail=str(exc),
                                        cleaned=[gone] if gone else []))
            say(f"{location}: {kind}" + (f"; deleted {gone}" if gone else "") + "; trying the next location")
            continue
        if st.phase == "ready":
            outcome: Literal["ready", "waiting", "pending"] = "ready"
            detail = f"{st.resource_name} is ready in {location}."
        elif st.state in QUEUED_STATES:
            outcome = "waiting"
            detail = (f"{st.resource_name} is in the TPU queue in {location} ({st.state}: {st.reason}); the API "
                      "does not give a queue position. It is left waiting, not retried elsewhere; follow it with "
                      f"`inferctl describe {base.name}`, or destroy it and deploy with other --zones.")
        else:
            outcome = "pending"
            detail = f"{st.resource_name} was created in {location} and is {st.state or st.phase}."
        attempts.append(ZoneAttempt(location=location, outcome=outcome, detail=detail))
        return ZonedDeployResult(profile=base.name, location=location, status=st, attempts=attempts, detail=detail)
    cleaned = await _clean_extras(ctx, base, plan, created)
    tried = "; ".join(f"{a.location}: {a.outcome}" for a in attempts)
    return ZonedDeployResult(profile=base.name, location=None, attempts=attempts, cleaned=cleaned,
                             detail=f"No location had capacity ({tried}); nothing of this deploy is left running."
                                    + (f" Deleted {', '.join(cleaned)}." if cleaned else ""))


async def _clean_extras(ctx, profile: Profile, plan: DeployPlan, created: set[str]) -> list[str]:
    """Delete the secret / firewall rule this apply created (they are not tied to a zone)."""
    from inferctl.ops.lifecycle import delete_recorded

    names = []
    for req in plan.requests:
        if req.resource_id not in created:
            continue
        if req.api == "secretmanager" and req.method == "secrets.create":
            names.append(f"{req.parent}/secrets/{req.resource_id}")
        elif req.api == "compute" and req.method == "firewalls.insert":
            names.append(f"{req.parent}/global/firewalls/{req.resource_id}")
    return await delete_recorded(ctx, profile, names)


def _profile(name: str, project: str | None) -> Profile:
    profile = load_profile(name)
    if project:
        profile = profile.model_copy(update={"project": project})
    return profile.with_project()
