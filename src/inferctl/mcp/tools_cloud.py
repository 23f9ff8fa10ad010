"""Google Cloud tools: capacity, artifacts, describe, deploy / scale / destroy, the HF token.

Deploy, scale and destroy default to a dry run. A real run needs a server started with --allow-write and
the user's answer to an elicitation question (``Resolve`` + ``Elicit``: the confirmation is a parameter
the model can neither see nor fill). The HF token never passes through the model: the tool reads it from
an environment variable of the server process and returns only the secret's name.
"""

import os
import re
from typing import Annotated, Literal

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from inferctl.cloud.capacity import CapacityReport
from inferctl.cloud.requests import DeployPlan
from inferctl.cloud.secrets import SecretResult
from inferctl.cloud.status import DeploymentStatus
from inferctl.cloud.storage import ArtifactList
from inferctl.mcp.adapt import fmt, guard, in_thread, result
from inferctl.mcp.policy import ToolSpec, can_ask, cannot_ask
from inferctl.ops.deploy import ZonedDeployResult
from inferctl.ops.deployments import DeploymentList
from inferctl.ops.lifecycle import ChangeResult
from inferctl.ops.profiles import ProfileDetail

ProfileArg = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                                  description="Deployment profile name (see list_targets, kind 'profile').")]
ProjectArg = Annotated[str | None, Field(max_length=100, pattern=r"^[a-z][a-z0-9-]{3,62}$", description="Google "
                                         "Cloud project (default: GOOGLE_CLOUD_PROJECT or the config file).")]
DryRunArg = Annotated[bool, Field(description="True (default): only show what would happen. False: do it "
                                  "(the user is asked to confirm).")]


class Confirm(BaseModel):
    confirm: bool = Field(description="Check to go ahead.")


async def _ask(ctx: Context, question: str) -> Confirm | Elicit[Confirm]:
    if can_ask(ctx):
        return Elicit(question, Confirm)
    if ctx.mcp_server.policy.confirm_fallback == "allow":
        return Confirm(confirm=True)
    raise cannot_ask(question.split("?")[0])


# The questions depend only on the arguments: the multi-round elicitation flow re-asks a changed question.
async def confirm_deploy(ctx: Context, profile: str, dry_run: bool = True) -> Confirm | Elicit[Confirm]:
    if dry_run:
        return Confirm(confirm=True)
    return await _ask(ctx, f"Create the Google Cloud resources of profile '{profile}'? They cost money until "
                           "destroyed.")


async def confirm_scale(ctx: Context, profile: str, dry_run: bool = True, min_instances: int | None = None,
                        max_instances: int | None = None, machine_type: str | None = None,
                        force: bool = False, power: str | None = None) -> Confirm | Elicit[Confirm]:
    if dry_run:
        return Confirm(confirm=True)
    if power:
        return await _ask(ctx, f"{power.capitalize()} the Google Cloud resource of profile '{profile}'"
                               + (" even if inferctl did not create it" if force else "")
                               + ("? The server goes away until started again." if power == "stop" else "?"))
    change = ", ".join(f"{k}={v}" for k, v in (("min_instances", min_instances), ("max_instances", max_instances),
                                               ("machine_type", machine_type)) if v is not None)
    return await _ask(ctx, f"Scale profile '{profile}' ({change})? A machine-type change restarts the VM"
                           + (", and force acts on a resource inferctl did not create" if force else "") + ".")


async def confirm_destroy(ctx: Context, profile: str, dry_run: bool = True,
                          force: bool = False) -> Confirm | Elicit[Confirm]:
    if dry_run:
        return Confirm(confirm=True)
    return await _ask(ctx, f"Delete the Google Cloud resource of profile '{profile}'"
                           + (" even if inferctl did not create it" if force else "") + "? This cannot be undone.")


def _confirmed(answer: ElicitationResult[Confirm]) -> None:
    """Go ahead only on an explicit yes; a decline or cancel is a normal answer, said plainly."""
    if answer.action != "accept" or not answer.data.confirm:
        how = {"accept": "answered no", "decline": "declined", "cancel": "cancelled"}.get(answer.action, answer.action)
        raise ToolError(f"The user {how}; nothing was changed.")


# -- read -----------------------------------------------------------------------------------------------


@guard()
async def find_capacity(
    accelerator: Annotated[str, Field(min_length=1, max_length=40, description="nvidia-l4, nvidia-rtx-pro-6000, "
                                      "v6e or v5e (aliases like l4 work).")],
    regions: Annotated[list[Annotated[str, Field(max_length=40)]] | None, Field(
        max_length=20, description="Limit to these regions.")] = None,
    platforms: Annotated[list[Literal["gce", "cloudrun", "tpu"]] | None, Field(
        description="Limit to these platforms.")] = None,
    project: ProjectArg = None,
) -> Annotated[CallToolResult, CapacityReport]:
    """Where an accelerator is offered (regions/zones) and how much quota is free, for GCE, Cloud Run and TPU.
    Creates nothing. Use before deploy, or when a deploy failed on quota or stockout.
    """
    from inferctl.ops.capacity import find_capacity as op

    r = await op(accelerator, regions=regions, project=project, platforms=platforms)
    offered = [x for x in r.rows if x.offered]
    lines = [f"**{r.accelerator}** in {r.project}: offered in {len(offered)} of {len(r.rows)} locations"]
    lines += [f"- {x.platform} {x.location}: quota {fmt(x.quota_limit, '', 0)}, available {fmt(x.available, '', 0)}"
              for x in offered[:25]]
    return result(r, "\n".join(lines + [f"note: {n}" for n in r.notes]))


@guard()
async def list_artifacts(
    bucket: Annotated[str | None, Field(max_length=300, description="gs://bucket[/prefix] (default: the bucket "
                                        "of a configured profile).")] = None,
    prefix: Annotated[str | None, Field(max_length=300, description="Object prefix.")] = None,
    limit: Annotated[int, Field(ge=1, le=1000, description="Most objects to list.")] = 200,
    project: ProjectArg = None,
) -> Annotated[CallToolResult, ArtifactList]:
    """Model files in Cloud Storage and their sizes, grouped into model folders (folders with config.json).
    Use to check which checkpoints (QAT, fp8...) are staged before deploying from a bucket.
    """
    from inferctl.ops.artifacts import list_artifacts as op

    r = await op(bucket, prefix=prefix, project=project, limit=limit)
    lines = [f"**gs://{r.bucket}/{r.prefix or ''}**: {len(r.artifacts)} objects"
             + (" (truncated)" if r.truncated else "") + f", {len(r.models)} model folders"]
    lines += [f"- {m.model_dump_json(exclude_none=True)[:200]}" for m in r.models[:20]]
    return result(r, "\n".join(lines))


class DeploymentOverview(BaseModel):
    """A profile, its validation, its live state, and (on request) the exact deployment plan; without a profile,
    every accelerator resource in the project with its cost."""

    detail: ProfileDetail | None = Field(default=None, description="The profile (None when listing).")
    status: DeploymentStatus | None = Field(default=None, description="Live state in Google Cloud.")
    status_problem: str | None = Field(default=None, description="Why the live state could not be read.")
    plan: DeployPlan | None = Field(default=None, description="The API requests deploy would send.")
    deployments: DeploymentList | None = Field(default=None, description="Without a profile: everything with an "
                                               "accelerator, its hourly price and cost so far this month.")


@guard()
async def describe_deployment(
    profile: Annotated[str | None, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$",
                                         description="Deployment profile name. Leave out to list every "
                                         "accelerator resource in the project (`inferctl deployments`).")] = None,
    include_plan: Annotated[bool, Field(description="Also return the exact API requests deploy would send.")] = False,
    all_regions: Annotated[bool, Field(description="Listing: every region and zone (slower).")] = False,
    unmanaged: Annotated[bool, Field(description="Listing: also resources inferctl did not create (shown, never "
                                     "touched).")] = False,
    project: ProjectArg = None,
) -> Annotated[CallToolResult, DeploymentOverview]:
    """A deployment profile (model, accelerator, vLLM command line, validation) and its live state in Google
    Cloud: phase, URL, revision, instances, and whether inferctl created it. With include_plan, the dry run
    of deploy. Without a profile: everything you pay for - every Cloud Run GPU service, GPU VM and TPU inferctl
    created (with unmanaged, the others too), state, age, catalog price per hour and cost so far this month.
    Use for "show the Cloud Run status" or "what GPUs are still running?"; get_status(target=profile) then
    checks the endpoint.
    """
    from inferctl.errors import InferctlError
    from inferctl.ops.lifecycle import describe_deployment as describe
    from inferctl.ops.profiles import show_profile

    if profile is None:
        if include_plan:
            raise ToolError("include_plan needs a profile.")
        from inferctl.ops.deployments import list_deployments

        d = await list_deployments(project=project, all_regions=all_regions, unmanaged=unmanaged)
        lines = [f"**{d.running} running** in {d.project}: ${d.usd_per_hour_now:,.2f}/h now, about "
                 f"${d.month_to_date_usd:,.2f} so far this month"]
        for row in d.rows[:40]:
            r = row.resource
            lines.append(f"- {r.kind} {r.name.rsplit('/', 1)[-1]} ({r.location}) {r.state or '-'} {r.accelerator or ''}"
                         f" ${fmt(row.usd_per_hour, '', 4)}/h, month ${fmt(row.month_to_date_usd, '', 2)}"
                         f"{'' if r.managed else ' NOT created by inferctl (not touched)'}")
        lines += [f"could not list: {p}" for p in d.problems] + [f"note: {n}" for n in d.notes]
        return result(DeploymentOverview(deployments=d), "\n".join(lines))
    detail = await in_thread(lambda: show_profile(profile))
    out = DeploymentOverview(detail=detail)
    try:
        out.status = await describe(profile, project=project)
    except InferctlError as exc:
        out.status_problem = str(exc)
    if include_plan:
        from inferctl.ops.deploy import plan_deployment

        out.plan = await in_thread(lambda: plan_deployment(profile, project=project))
    st = out.status
    lines = [f"**{profile}**: " + (f"{st.phase} ({st.state or '-'}) {st.url or ''}, instances "
                                   f"{st.min_instances}..{st.max_instances}, created by inferctl: {st.managed}"
                                   if st else f"live state unknown: {out.status_problem}"),
             "serve: " + " ".join(detail.serve_command)[:400]]
    lines += [f"error: {e}" for e in detail.errors] + [f"warning: {w}" for w in detail.warnings]
    if out.plan:
        lines += [f"{i}. {r.http_method} {r.method} {r.resource_id or ''}" for i, r in enumerate(out.plan.requests, 1)]
    return result(out, "\n".join(lines))


# -- write ------------------------------------------------------------------------------------------------


class DeployResult(BaseModel):
    dry_run: bool
    plan: DeployPlan
    status: DeploymentStatus | None = Field(default=None, description="After applying (None for a dry run).")
    zoned: ZonedDeployResult | None = Field(default=None, description="With zones: what each location said.")


@guard()
async def deploy(
    ctx: Context,
    profile: ProfileArg,
    dry_run: DryRunArg = True,
    project: ProjectArg = None,
    zones: Annotated[str | None, Field(max_length=300, pattern=r"^(auto|[a-z0-9-]+(,[a-z0-9-]+)*)$", description=(
        "'auto' (locations offering the accelerator with quota left, from find_capacity) or 'Z1,Z2' (regions for "
        "Cloud Run): tried in order, moving on after a stockout or quota error."))] = None,
    *,
    confirmation: Annotated[ElicitationResult[Confirm], Resolve(confirm_deploy)],
) -> Annotated[CallToolResult, DeployResult]:
    """Deploy a profile to Google Cloud (Cloud Run GPU, GCE GPU VM or TPU VM). dry_run=True (default) returns
    the exact API requests and equivalent gcloud commands (with zones: the zone order and why); dry_run=False
    sends exactly those, after the user confirms, and returns without waiting for readiness: poll
    describe_deployment until phase is ready.
    """
    from inferctl.ops.deploy import apply_deployment, apply_in_zones, plan_deployment, plan_zoned_deployment

    if zones:
        plan = await plan_zoned_deployment(profile, zones, project=project)
    else:
        plan = await in_thread(lambda: plan_deployment(profile, project=project))
    if dry_run:
        out = DeployResult(dry_run=True, plan=plan)
        steps = "\n".join(f"{i}. {r.http_method} {r.method} {r.resource_id or ''} - {r.why}"
                          for i, r in enumerate(plan.requests, 1))
        order = "".join(f"\nzone {i}: {z.location} - {z.why}" for i, z in enumerate(plan.zones, 1))
        return result(out, f"**Dry run** for {plan.resource_name} in {plan.project}; nothing was created.\n{steps}"
                      + order + "".join(f"\nwarning: {w}" for w in plan.warnings)
                      + "\nCall deploy(dry_run=false) to apply.")
    ctx.mcp_server.policy.require("write", "deploy")
    _confirmed(confirmation)
    if zones:
        zoned = await apply_in_zones(plan, project=project, wait=False)
        return result(DeployResult(dry_run=False, plan=plan, status=zoned.status, zoned=zoned),
                      f"**Applied**: {zoned.detail}")
    st = await apply_deployment(plan, project=project, wait=False)
    return result(DeployResult(dry_run=False, plan=plan, status=st),
                  f"**Applied** {plan.resource_name}: {st.phase}; poll describe_deployment('{profile}') until ready.")


@guard()
async def scale_deployment(
    ctx: Context,
    profile: ProfileArg,
    power: Annotated[Literal["stop", "start"] | None, Field(description=(
        "stop: stop paying without destroying (VM / TPU node stopped, its disk kept; Cloud Run min instances 0); "
        "start: undo it. Not combined with the other changes."))] = None,
    min_instances: Annotated[int | None, Field(ge=0, le=100, description="Cloud Run minimum instances.")] = None,
    max_instances: Annotated[int | None, Field(ge=1, le=100, description="Cloud Run maximum instances.")] = None,
    machine_type: Annotated[str | None, Field(max_length=60, pattern=r"^[a-z0-9-]+$",
                                              description="GCE machine type (restarts the VM).")] = None,
    dry_run: DryRunArg = True,
    force: Annotated[bool, Field(description="Act on a resource inferctl did not create.")] = False,
    project: ProjectArg = None,
    *,
    confirmation: Annotated[ElicitationResult[Confirm], Resolve(confirm_scale)],
) -> Annotated[CallToolResult, ChangeResult]:
    """Scale a deployed profile: Cloud Run min/max instances, or a GCE VM's machine type (TPUs cannot be
    resized in place); or power='stop' / 'start' it (`inferctl stop` / `start`). dry_run=True (default) shows
    the current state and the change; False applies it after the user confirms.
    """
    from inferctl.ops.lifecycle import describe_deployment, power_deployment
    from inferctl.ops.lifecycle import scale_deployment as op

    if power:
        if min_instances is not None or max_instances is not None or machine_type is not None:
            raise ToolError("power (stop / start) is not combined with min_instances, max_instances or machine_type.")
        if not dry_run:
            ctx.mcp_server.policy.require("destructive", "scale_deployment")
            _confirmed(confirmation)
        r = await power_deployment(profile, power, project=project, force=force, dry_run=dry_run)
        return result(r, r.detail)
    if dry_run:
        st = await describe_deployment(profile, project=project)
        change = ", ".join(f"{k} {v}" for k, v in (("min", min_instances), ("max", max_instances),
                                                    ("machine type", machine_type)) if v is not None) or "no change"
        out = ChangeResult(profile=profile, action="nothing", resource_name=st.resource_name, status=st,
                           detail=f"Dry run: would set {change} on {st.resource_name} (now {st.phase}, instances "
                                  f"{st.min_instances}..{st.max_instances}, machine {st.machine_type or '-'}).")
        return result(out, out.detail)
    ctx.mcp_server.policy.require("destructive", "scale_deployment")
    _confirmed(confirmation)
    r = await op(profile, project=project, min_instances=min_instances, max_instances=max_instances,
                 machine_type=machine_type, force=force)
    return result(r, r.detail)


@guard()
async def destroy_deployment(
    ctx: Context,
    profile: ProfileArg,
    dry_run: DryRunArg = True,
    force: Annotated[bool, Field(description="Delete even a resource inferctl did not create.")] = False,
    project: ProjectArg = None,
    *,
    confirmation: Annotated[ElicitationResult[Confirm], Resolve(confirm_destroy)],
) -> Annotated[CallToolResult, ChangeResult]:
    """Delete the one Google Cloud resource (service, VM or queued resource) a profile names, and refuse one
    inferctl did not create unless force. dry_run=True (default) says what would be deleted; False deletes
    after the user confirms. Cannot be undone.
    """
    from inferctl.ops.lifecycle import destroy_deployment as op

    if dry_run:
        out = await op(profile, project=project, force=force, dry_run=True)
        return result(out, out.detail)
    ctx.mcp_server.policy.require("destructive", "destroy_deployment")
    _confirmed(confirmation)
    r = await op(profile, project=project, force=force)
    return result(r, r.detail)


_ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,63}$")


@guard()
async def set_hf_token(
    ctx: Context,
    from_env: Annotated[str, Field(max_length=64, description="Name of the environment variable of the inferctl "
                                   "server process that holds the token (set in the MCP client's server config). "
                                   "Never pass the token itself.")] = "HF_TOKEN",
    project: ProjectArg = None,
) -> Annotated[CallToolResult, SecretResult]:
    """Store the Hugging Face token in Secret Manager (a new version of secret 'hf-token', created and
    labelled when missing) so deployments can pull gated Gemma weights. The token is read from the server's
    environment and never appears in arguments, results or logs. Only the secret's name comes back.
    """
    ctx.mcp_server.policy.require("write", "set_hf_token")
    from inferctl.ops.cloud_secrets import set_hf_token as op

    if not _ENV_NAME.match(from_env) or not re.search(r"HF|HUGGING", from_env):
        raise ToolError(f"from_env must name an environment variable for the Hugging Face token, like HF_TOKEN "
                        f"(got {from_env[:64]!r}).")
    value = os.environ.get(from_env, "").strip()
    if not value:
        raise ToolError(f"${from_env} is not set in the inferctl server's environment; add it to the MCP client's "
                        "server configuration (env) and restart the server.")
    if not value.startswith("hf_"):  # refuse to copy some other secret into Secret Manager
        raise ToolError(f"${from_env} does not hold a Hugging Face token (they start with hf_); nothing was stored.")
    r = await op(value.encode(), project=project)
    return result(r, f"Stored the token as {r.version}" + (" (secret created)" if r.created_secret else "") + ".")


def tools() -> list[ToolSpec]:
    return [
        ToolSpec(find_capacity, "read", True, True, "Find accelerator capacity"),
        ToolSpec(list_artifacts, "read", True, True, "List model artifacts"),
        ToolSpec(describe_deployment, "read", True, True, "Describe a deployment"),
        ToolSpec(deploy, "write", False, True, "Deploy a profile"),
        ToolSpec(scale_deployment, "destructive", True, True, "Scale a deployment"),
        ToolSpec(destroy_deployment, "destructive", True, True, "Destroy a deployment"),
        ToolSpec(set_hf_token, "write", True, True, "Store the HF token"),
    ]
