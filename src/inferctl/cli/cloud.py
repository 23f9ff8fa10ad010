"""capacity, artifacts, `secrets set-hf-token`, `profiles list|show`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from inferctl.cli.common import JsonOpt, console, emit, fail, run, styled
from inferctl.cli.deploy import ProjectOpt

secrets_app = typer.Typer(help="Secrets in Secret Manager (values are never printed).", no_args_is_help=True)
profiles_app = typer.Typer(help="Deployment profiles: shipped examples and your config file's.",
                           no_args_is_help=True)


def _gb(n: float) -> str:
    return f"{n / 1e9:,.2f} GB"


def capacity(
    accelerator: Annotated[str, typer.Option("--accelerator", "-a",
                                             help="l4, rtx-pro-6000, v6e or v5e (or any alias: nvidia-l4, "
                                                  "tpu-v6e, v6e-4...).")],
    regions: Annotated[str | None, typer.Option("--regions", show_default=False,
                                                help="Comma-separated regions (default: all offered).")] = None,
    platform: Annotated[list[str] | None, typer.Option("--platform", show_default=False,
                                                       help="gce, cloudrun or tpu (repeatable).")] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Where an accelerator is offered and how much quota is left (creates nothing)."""
    from inferctl.ops.capacity import find_capacity

    wanted = [r.strip() for r in regions.split(",") if r.strip()] if regions else None
    for p in platform or []:
        if p not in ("gce", "cloudrun", "tpu"):
            raise fail(f"--platform must be gce, cloudrun or tpu (got {p!r}).", 2)
    report = run(lambda: find_capacity(accelerator, regions=wanted, project=project,
                                       platforms=platform or None))  # type: ignore[arg-type]

    def render(r) -> None:
        from rich.table import Table

        from inferctl.cli.tables import keep_whole

        t = Table(title=f"{r.accelerator} in project {r.project}")
        for col in ("platform", "location", "offered", "quota limit", "in use", "available", "zones / types"):
            t.add_column(col)

        def num(v):
            return "?" if v is None else f"{v:g}"

        for row in r.rows:
            t.add_row(row.platform, row.location, "yes" if row.offered else "no", num(row.quota_limit),
                      num(row.quota_usage), num(row.available), ", ".join(row.zones))
        c = console()
        c.print(keep_whole(t, ["location"]))
        for note in r.notes:
            c.print(styled("[dim]{}[/]", note))

    emit(report, as_json, render)


class _DefaultList(TyperGroup):
    """`artifacts [BUCKET]` lists (as before); `artifacts stage MODEL ...` stages: a first word that is not a
    subcommand goes to `list`."""

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = ["list", *args]
        return super().parse_args(ctx, args)


artifacts_app = typer.Typer(cls=_DefaultList, no_args_is_help=False,
                            help="Model files in Cloud Storage (`artifacts [BUCKET]`), and staging Hugging Face "
                                 "weights into a bucket (`artifacts stage`).")


@artifacts_app.command("list")
def artifacts(
    bucket: Annotated[str | None, typer.Argument(help="Bucket (or gs://bucket/prefix); default: a profile's.",
                                                 show_default=False)] = None,
    prefix: Annotated[str | None, typer.Option(help="Only objects under this prefix.", show_default=False)] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most objects to list.")] = 1000,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Model files in a Cloud Storage bucket, their sizes, and the loadable model folders."""
    from inferctl.ops.artifacts import list_artifacts

    result = run(lambda: list_artifacts(bucket, prefix=prefix, project=project, limit=limit))

    def render(r) -> None:
        from rich.table import Table

        from inferctl.cli.tables import keep_whole

        c = console()
        if r.models:
            t = Table(title=f"Model folders in gs://{r.bucket}")
            for col in ("path", "files", "weights", "size", "staged"):
                t.add_column(col)
            for m in r.models:
                staged = "" if not m.staged else ("complete" if m.complete else "INCOMPLETE")
                t.add_row(m.path, str(m.files), str(m.weights), _gb(m.size_bytes), staged)
            c.print(keep_whole(t, ["path"]))
            for m in r.models:
                for problem in m.problems[:10]:
                    c.print(styled("[yellow]{}:[/] {}", m.path, problem))
        t = Table(title=f"Objects in gs://{r.bucket}/{r.prefix or ''}")
        t.add_column("name")
        t.add_column("size", justify="right")
        for a in r.artifacts:
            t.add_row(a.name, _gb(a.size_bytes))
        c.print(keep_whole(t, ["name"]))
        if r.truncated:
            c.print(styled("[yellow]More objects exist; raise --limit or narrow --prefix.[/]"))

    emit(result, as_json, render)


def render_stage_plan(plan) -> None:
    import json

    from rich.syntax import Syntax

    from inferctl.cloud.staging import PROGRAM_ENV

    c = console()
    c.print(styled("[bold]Stage {}@{}[/] into gs://{}/{} (project {}, {})", plan.model, plan.revision, plan.bucket,
                   plan.prefix, plan.project, plan.region))
    for n, req in enumerate(plan.requests, 1):
        c.print(styled("\n[bold]{}. {} {}[/]  [dim]{}[/]", n, req.http_method, req.url, req.method), soft_wrap=True)
        c.print(f"   {req.why}", markup=False)
        body = json.loads(json.dumps(req.body))
        for container in ((body.get("template") or {}).get("template") or {}).get("containers") or []:
            for var in container.get("env") or []:
                if var.get("name") == PROGRAM_ENV:  # shown in full by --json; here, what it is
                    var["value"] = f"<the text of inferctl/cloud/hf_copy.py, {len(var['value'])} characters>"
        c.print(Syntax(json.dumps(body, indent=2), "json", word_wrap=True, background_color="default"))
    c.print(styled("\n[bold]Equivalent gcloud commands[/] (for reference; inferctl does not run them):"))
    for line in plan.gcloud:
        c.print(line, soft_wrap=True, markup=False)
    for note in plan.notes:
        c.print(styled("[dim]{}[/]", note))
    c.print(styled("\n[bold]Profile setting[/] that serves the staged folder:"))
    c.print(plan.profile_setting, markup=False)


@artifacts_app.command("stage")
def stage(
    model: Annotated[str, typer.Argument(help="Hugging Face repository id, e.g. google/gemma-4-12b-it.")],
    bucket: Annotated[str, typer.Option("--bucket", help="gs://BUCKET[/PREFIX] (default prefix: the repo id).")],
    apply: Annotated[bool, typer.Option("--apply", help="Create and run the job (default: plan only).")] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    region: Annotated[str, typer.Option(help="Region the Cloud Run Job runs in.")] = "us-central1",
    revision: Annotated[str, typer.Option(help="Branch, tag or commit of the repository.")] = "main",
    secret: Annotated[str, typer.Option(help="Secret Manager secret with the HF token ('' for a public "
                                             "model).")] = "hf-token",
    service_account: Annotated[str | None, typer.Option("--service-account", show_default=False,
                                                        help="The job's service account.")] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Plan (and with --apply run) a Cloud Run Job in your project that copies a Hugging Face repository into
    Cloud Storage, then check the folder and print the profile setting that mounts it. No weights pass through
    this machine; the HF token stays in Secret Manager."""
    from inferctl.cli.deploy import confirm, progress_printer
    from inferctl.ops.staging import apply_staging, plan_staging

    plan = run(lambda: plan_staging(model, bucket, region=region, revision=revision, token_secret=secret,
                                    service_account=service_account, project=project))
    if not apply:
        emit(plan, as_json, render_stage_plan)
        if not as_json:
            console().print(styled("\n[bold]Nothing was created.[/] Run again with --apply to stage it."))
        return
    if not as_json:
        render_stage_plan(plan)
    confirm(f"Create and run {plan.job_name} (it uses Cloud Run and writes to gs://{plan.bucket})?", yes)
    result = run(lambda: apply_staging(plan, progress=progress_printer()))

    def render(r) -> None:
        c = console()
        ok = r.check.complete
        c.print(styled("[" + ("green" if ok else "red") + "]{}[/] gs://{}/{}: {} files, {}",
                       "complete" if ok else "INCOMPLETE", r.check.bucket, r.check.prefix, r.check.files,
                       _gb(r.check.size_bytes)))
        for problem in r.check.problems:
            c.print(styled("  [yellow]{}[/]", problem))
        if ok:
            c.print(styled("\n[bold]Profile setting:[/]"))
            c.print(r.plan.profile_setting, markup=False)

    emit(result, as_json, render)
    if not result.check.complete:
        raise typer.Exit(1)


@secrets_app.command("set-hf-token")
def set_hf_token(
    from_env: Annotated[str | None, typer.Option("--from-env", show_default=False,
                                                 help="Read the token from this environment variable.")] = None,
    secret: Annotated[str, typer.Option(help="Secret Manager secret id.")] = "hf-token",
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Store the Hugging Face token in Secret Manager, read from stdin or --from-env (never an argument)."""
    from inferctl.ops.cloud_secrets import read_token, set_hf_token

    if from_env:
        stdin_text = None
    elif sys.stdin.isatty():
        import getpass

        stdin_text = getpass.getpass("Hugging Face token (input hidden): ")
    else:
        stdin_text = sys.stdin.read()
    token = run(lambda: read_token(from_env=from_env, stdin_text=stdin_text))
    result = run(lambda: set_hf_token(token, secret=secret, project=project))
    emit(result, as_json, lambda r: console().print(
        f"Stored a new version of {r.secret}" + (" (secret created)" if r.created_secret else "") + ".", markup=False))


@profiles_app.command("list")
def profiles_list(as_json: JsonOpt = False) -> None:
    """Every deployment profile: shipped examples and the config file's."""
    from inferctl.ops.profiles import list_profile_summaries

    def render(items) -> None:
        from rich.table import Table

        from inferctl.cli.tables import keep_whole

        t = Table()
        for col in ("name", "platform", "location", "accelerator", "model", "source"):
            t.add_column(col)
        for p in items:
            t.add_row(p.name, p.platform, p.location or "", p.accelerator, p.model,
                      "shipped" if p.shipped else "config")
        console().print(keep_whole(t, ["name", "model"]))

    items = run(list_profile_summaries)
    if as_json:
        sys.stdout.write("[" + ",\n".join(i.model_dump_json(indent=2) for i in items) + "]\n")
        return
    render(items)


@profiles_app.command("show")
def profiles_show(name: Annotated[str, typer.Argument(help="Profile name.")], as_json: JsonOpt = False) -> None:
    """One profile, the `vllm serve` command it runs, and what validation says."""
    import shlex

    from inferctl.ops.profiles import show_profile

    def render(d) -> None:
        c = console()
        c.print_json(d.profile.model_dump_json(exclude_none=True))
        c.print(styled("\n[bold]Server command[/]"))
        c.print(shlex.join(d.serve_command), markup=False, soft_wrap=True)
        for e in d.errors:
            c.print(styled("[red]error:[/] {}", e))
        for w in d.warnings:
            c.print(styled("[yellow]warning:[/] {}", w))

    emit(run(lambda: show_profile(name)), as_json, render)


@profiles_app.command("new")
def profiles_new(
    name: Annotated[str, typer.Argument(help="Name of the new profile (also the Cloud Run service / VM name).")],
    source: Annotated[str, typer.Option("--from", help="Profile to start from (see `inferctl profiles list`).",
                                        show_default=False)],
    sets: Annotated[list[str] | None, typer.Option(
        "--set", help="key=value to change, e.g. region=europe-west4 or vllm.max_model_len=16384 (repeatable).",
        show_default=False)] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write a new profile into the config file: another profile plus what you change, validated first."""
    from inferctl.ops.profile_new import new_profile

    def render(r) -> None:
        c = console()
        c.print(f"Added profile {r.name} (from {r.based_on}) to {r.config_file}.", markup=False)
        if r.fit:
            c.print(f"fit: {r.fit}", markup=False)
        for w in r.warnings:
            c.print(f"warning: {w}", markup=False, style="yellow")
        c.print(f"Next: inferctl profiles show {r.name}; inferctl deploy {r.name}", markup=False)

    emit(run(lambda: new_profile(name, source, sets)), as_json, render)


def register(app: typer.Typer) -> None:
    app.command()(capacity)
    app.add_typer(artifacts_app, name="artifacts")
    app.add_typer(secrets_app, name="secrets")
    app.add_typer(profiles_app, name="profiles")
