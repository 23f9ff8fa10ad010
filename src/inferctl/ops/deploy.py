"""`deploy`: the plan of a profile (dry run), and applying exactly that plan."""

from __future__ import annotations

from collections.abc import Callable

from inferctl.cloud.requests import DeployPlan
from inferctl.cloud.status import DeploymentStatus
from inferctl.profiles.profile import Profile, load_profile


def plan_deployment(profile_name: str, *, project: str | None = None) -> DeployPlan:
    """The dry run: every API request and the equivalent gcloud commands. Needs no credentials."""
    from inferctl.cloud.deploy import build_plan
    from inferctl.ops.profiles import check_profile

    profile = _profile(profile_name, project)
    return build_plan(profile, check_profile(profile))


async def apply_deployment(plan: DeployPlan, *, project: str | None = None,
                           progress: Callable[[str], None] | None = None, wait: bool = True,
                           timeout: float = 3600.0, poll: float = 10.0) -> DeploymentStatus:
    """Send the plan's requests (the same objects the dry run printed) and wait until ready."""
    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.deploy import apply_plan

    profile = _profile(plan.profile, project or plan.project)
    ctx = CloudContext(profile.project or plan.project)
    return await apply_plan(ctx, plan, profile, progress=progress, wait=wait, timeout=timeout, poll=poll)


def _profile(name: str, project: str | None) -> Profile:
    profile = load_profile(name)
    if project:
        profile = profile.model_copy(update={"project": project})
    return profile.with_project()
