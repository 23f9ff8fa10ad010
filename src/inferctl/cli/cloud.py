"""capacity, artifacts, `secrets set-hf-token`, `profiles list|show`."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

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
            for col in ("path", "files", "weights", "size"):
                t.add_column(col)
            for m in r.models:
                t.add_row(m.path, str(m.files), str(m.weights), _gb(m.size_bytes))
            c.print(keep_whole(t, ["path"]))
        t = Table(title=f"Objects in gs://{r.bucket}/{r.prefix or ''}")
        t.add_column("name")
        t.add_column("size", justify="right")
        for a in r.artifacts:
            t.add_row(a.name, _gb(a.size_bytes))
        c.print(keep_whole(t, ["name"]))
        if r.truncated:
            c.print(styled("[yellow]More objects exist; raise --limit or narrow --prefix.[/]"))

    emit(result, as_json, render)


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
    app.command()(artifacts)
    app.add_typer(secrets_app, name="secrets")
    app.add_typer(profiles_app, name="profiles")
