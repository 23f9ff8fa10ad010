"""deploy, destroy, scale, describe: a deployment profile's lifecycle on Google Cloud.

`deploy PROFILE` only prints the plan; `--apply` sends exactly that plan, after confirmation
unless `--yes`. `destroy` and `scale` confirm too, and refuse resources inferctl did not create
unless `--force`.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Annotated

import typer

from inferctl.cli.common import JsonOpt, console, emit, fail, run, styled

ProjectOpt = Annotated[
    str | None,
    typer.Option("--project", show_default=False,
                 help="Google Cloud project (default: GOOGLE_CLOUD_PROJECT or `project` in the config file's "
                 "\\[cloud] table)."),
]
YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
ForceOpt = Annotated[bool, typer.Option("--force", help="Act even on a resource inferctl did not create.")]


def confirm(question: str, yes: bool) -> None:
    """Ask before a write; without a terminal, --yes is required."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise fail(f"{question} Needs confirmation: run in a terminal or pass --yes.", 2)
    if not typer.confirm(question, default=False, err=True):
        raise fail("cancelled; nothing was changed.", 1)


def progress_printer():
    start = time.monotonic()
    err = console()
    err.stderr = True

    def say(message: str) -> None:
        err.print(styled("[dim]\\[{}s][/] {}", f"{time.monotonic() - start:6.0f}", message), highlight=False,
                  soft_wrap=True)

    return say


def render_plan(plan) -> None:
    from rich.syntax import Syntax

    c = console()
    c.print(styled("[bold]Plan for profile {}[/] ({}, project {}, {})", plan.profile, plan.platform, plan.project,
                   plan.location))
    for w in plan.warnings:
        c.print(styled("[yellow]warning:[/] {}", w))
    if plan.fit:
        c.print(f"fit: {plan.fit}", markup=False)
    if plan.zones:
        c.print(styled("[bold]Zone order[/] (apply tries each until one has capacity; the requests below are for "
                       "the first, the others differ only in the location):"))
        for n, z in enumerate(plan.zones, 1):
            c.print(f"  {n}. {z.location}  {z.why}", markup=False)
    for n, req in enumerate(plan.requests, 1):
        c.print(styled("\n[bold]{}. {} {}[/]  [dim]{}[/]", n, req.http_method, req.url, req.method), soft_wrap=True)
        if req.why:
            c.print(f"   {req.why}")
        if req.body is not None:
            c.print(Syntax(json.dumps(req.body, indent=2), "json", word_wrap=True, background_color="default"))
    c.print(styled("\n[bold]Equivalent gcloud commands[/] (for reference; inferctl does not run them):"))
    for line in plan.gcloud:
        c.print(line, soft_wrap=True, markup=False)


def render_status(st) -> None:
    c = console()
    colour = {"ready": "green", "failed": "red", "absent": "dim"}.get(st.phase, "yellow")
    c.print(styled("[bold]{}[/] ({}) [" + colour + "]{}[/]{}", st.profile, st.platform, st.phase,
                   f" — {st.state}" if st.state else ""))
    rows = [("resource", st.resource_name), ("reason", st.reason), ("url", st.url), ("internal url", st.internal_url),
            ("revision", st.revision), ("image", st.image), ("vLLM", st.vllm_version),
            ("accelerator", st.accelerator), ("machine type", st.machine_type),
            ("instances", f"{st.min_instances}..{st.max_instances}" if st.min_instances is not None else None),
            ("authenticated", None if st.authenticated is None else ("yes" if st.authenticated else "NO (public)")),
            ("created by inferctl", ("yes" if st.managed else "no") if st.exists else None),
            ("created with it", ", ".join(st.created_with)), ("network access", st.network_access),
            ("reach it", st.access_hint)]
    for key, value in rows:
        if value:
            c.print(f"  {key:20} {value}", markup=False)
    for cond in st.conditions:
        c.print(f"  condition {cond.type}: {cond.state}" + (f" — {cond.message}" if cond.message else ""), markup=False)


def render_zoned(r) -> None:
    c = console()
    for a in r.attempts:
        colour = {"ready": "green", "waiting": "yellow", "pending": "yellow"}.get(a.outcome, "red")
        c.print(styled("  {} [" + colour + "]{}[/] {}", a.location, a.outcome, a.detail), soft_wrap=True)
        for name in a.cleaned:
            c.print(styled("    [dim]deleted {}[/]", name))
    if r.status is not None:
        render_status(r.status)
    c.print(r.detail, markup=False, soft_wrap=True)


def deploy(
    profile: Annotated[str, typer.Argument(help="Deployment profile (see `inferctl profiles list`).")],
    apply: Annotated[bool, typer.Option("--apply", help="Create the resources (default: plan only).")] = False,
    yes: YesOpt = False,
    project: ProjectOpt = None,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Wait until ready / ACTIVE.")] = True,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for readiness.")] = 3600.0,
    zones: Annotated[str | None, typer.Option(
        "--zones", show_default=False,
        help="'auto' (locations with the accelerator and quota, from `capacity`) or Z1,Z2,... (regions for Cloud "
             "Run): apply tries them in order, moving on after a stockout or quota error.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Print the deployment plan (API requests + equivalent gcloud); --apply creates it and waits until ready."""
    from inferctl.ops.deploy import apply_deployment, apply_in_zones, plan_deployment, plan_zoned_deployment

    if zones is not None:
        plan = run(lambda: plan_zoned_deployment(profile, zones, project=project))
    else:
        plan = run(lambda: plan_deployment(profile, project=project))
    if not apply:
        emit(plan, as_json, render_plan)
        if not as_json:
            console().print(styled("\n[bold]Nothing was created.[/] Run again with --apply to create it."))
        return
    if not as_json:
        render_plan(plan)
    confirm(f"Create {plan.resource_name} (this costs money)?", yes)
    if zones is not None:
        zoned = run(lambda: apply_in_zones(plan, project=project, progress=progress_printer(), wait=wait,
                                           timeout=timeout))
        emit(zoned, as_json, render_zoned)
        if zoned.location is None or (zoned.status and zoned.status.phase == "failed"):
            raise typer.Exit(1)
        return
    status = run(lambda: apply_deployment(plan, project=project, progress=progress_printer(), wait=wait,
                                          timeout=timeout))
    emit(status, as_json, render_status)
    if status.phase == "failed":
        raise typer.Exit(1)


def destroy(
    profile: Annotated[str, typer.Argument(help="Deployment profile whose resource to delete.")],
    yes: YesOpt = False,
    force: ForceOpt = False,
    project: ProjectOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="List what would be deleted; delete nothing.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete the profile's service / VM / queued resource and what its deploy created beside it (API-key
    secret, firewall rule) — only those, and only if they are this profile's."""
    from inferctl.ops.lifecycle import destroy_deployment
    from inferctl.ops.profiles import show_profile

    run(lambda: show_profile(profile))  # an unknown or empty name is its own sentence, before any question
    if not dry_run:
        confirm(f"Delete the resource of profile {profile}?", yes)
    result = run(lambda: destroy_deployment(profile, project=project, force=force, dry_run=dry_run))
    emit(result, as_json, lambda r: console().print(r.detail, markup=False))


def scale(
    profile: Annotated[str, typer.Argument(help="Deployment profile to scale.")],
    min_instances: Annotated[int | None, typer.Option("--min-instances", min=0, show_default=False,
                                                      help="Cloud Run minimum instances.")] = None,
    max_instances: Annotated[int | None, typer.Option("--max-instances", min=1, show_default=False,
                                                      help="Cloud Run maximum instances.")] = None,
    machine_type: Annotated[str | None, typer.Option("--machine-type", show_default=False,
                                                     help="GCE machine type (stops and restarts the VM).")] = None,
    yes: YesOpt = False,
    force: ForceOpt = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change Cloud Run min/max instances, or a VM's machine type."""
    from inferctl.ops.lifecycle import scale_deployment
    from inferctl.ops.profiles import show_profile

    run(lambda: show_profile(profile))  # an unknown or empty name is its own sentence, before any question
    confirm(f"Scale the resource of profile {profile}?", yes)
    result = run(lambda: scale_deployment(profile, project=project, min_instances=min_instances,
                                          max_instances=max_instances, machine_type=machine_type, force=force))
    emit(result, as_json, lambda r: console().print(r.detail, markup=False))


def _power(action: str, profile: str, yes: bool, force: bool, project: str | None, dry_run: bool,
           as_json: bool) -> None:
    from inferctl.ops.lifecycle import power_deployment

    if not dry_run:
        confirm(f"{action.capitalize()} the resource of profile {profile}?", yes)
    result = run(lambda: power_deployment(profile, action, project=project, force=force, dry_run=dry_run))
    emit(result, as_json, lambda r: console().print(r.detail, markup=False, soft_wrap=True))


DryRunOpt = Annotated[bool, typer.Option("--dry-run", help="Say what would change; change nothing.")]


def stop(
    profile: Annotated[str, typer.Argument(help="Deployment profile to stop.")],
    yes: YesOpt = False,
    force: ForceOpt = False,
    project: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Stop paying without destroying: stop the VM (its disk and cached weights stay) or TPU node, or set a Cloud
    Run service's minimum instances to 0. `inferctl start` undoes it."""
    _power("stop", profile, yes, force, project, dry_run, as_json)


def start(
    profile: Annotated[str, typer.Argument(help="Deployment profile to start.")],
    yes: YesOpt = False,
    force: ForceOpt = False,
    project: ProjectOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Start a stopped VM or TPU node again, or restore a Cloud Run service's minimum instances from the profile."""
    _power("start", profile, yes, force, project, dry_run, as_json)


def describe(
    profile: Annotated[str, typer.Argument(help="Deployment profile.")],
    project: ProjectOpt = None,
    server: Annotated[bool, typer.Option("--server/--no-server", help="Also ask the running server its vLLM "
                                         "version (/version).")] = True,
    as_json: JsonOpt = False,
) -> None:
    """State, conditions, revision, URL/IP, image, vLLM version, accelerator, and whether inferctl created it."""
    from inferctl.ops.lifecycle import describe_deployment

    emit(run(lambda: describe_deployment(profile, project=project, ask_server=server)), as_json, render_status)


def render_deployments(d) -> None:
    from rich.table import Table

    c = console()
    t = Table(title=f"Accelerator resources in project {d.project}" + (" (managed and unmanaged)"
                                                                        if d.unmanaged_included else ""))
    for col in ("kind", "name", "location", "state", "accelerator", "age", "$/h", "month so far", "inferctl"):
        t.add_column(col)

    def money(v, digits=2):
        return "?" if v is None else f"{v:,.{digits}f}"

    for row in d.rows:
        r = row.resource
        acc = f"{r.accelerator_count}x {r.accelerator}" if r.accelerator_count else (r.accelerator or "")
        age = "" if row.age_hours is None else (f"{row.age_hours / 24:.1f} d" if row.age_hours >= 48
                                                else f"{row.age_hours:.1f} h")
        owner = f"yes ({r.profile})" if r.managed else "NO (not touched)"
        t.add_row(r.kind, r.name.rsplit("/", 1)[-1], r.location, r.state or "", acc, age,
                  money(row.usd_per_hour, 4), money(row.month_to_date_usd), owner)
    c.print(t)
    for row in d.rows:
        c.print(styled("  [dim]{}: {}[/]", row.resource.name.rsplit("/", 1)[-1], row.cost_basis))
    c.print(styled("[bold]{} running[/], ${} per hour now, about ${} so far this month (known prices).",
                   d.running, f"{d.usd_per_hour_now:,.2f}", f"{d.month_to_date_usd:,.2f}"))
    for p in d.problems:
        c.print(styled("[yellow]could not list:[/] {}", p))
    for n in d.notes:
        c.print(styled("[dim]{}[/]", n))


def deployments(
    all_regions: Annotated[bool, typer.Option("--all-regions", help="Every region and zone (default: the GPU "
                                              "regions and your profiles' zones; GCE is always every zone).")] = False,
    unmanaged: Annotated[bool, typer.Option("--unmanaged", help="Also list accelerator resources inferctl did not "
                                            "create (shown, never touched).")] = False,
    exit_code: Annotated[bool, typer.Option("--exit-code", help="Exit 3 when anything listed is running (its "
                                            "accelerators billed): for a cron job that warns about forgotten "
                                            "GPUs.")] = False,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Everything you pay for: inferctl's Cloud Run GPU services, GPU VMs and TPUs, with state, age, the catalog's
    hourly price and the cost so far this month. Read-only."""
    from inferctl.ops.deployments import list_deployments

    d = run(lambda: list_deployments(project=project, all_regions=all_regions, unmanaged=unmanaged))
    emit(d, as_json, render_deployments)
    if exit_code and d.running:
        raise typer.Exit(3)


def register(app: typer.Typer) -> None:
    for fn in (deploy, destroy, scale, stop, start, describe, deployments):
        app.command()(fn)
