"""Stage Hugging Face weights into Cloud Storage with a Cloud Run Job in the user's project.

    plan = stage_plan(project, region, "google/gemma-4-12b-it", "my-bucket", "models/gemma-4-12b-it")
    result = await apply_stage(ctx, plan)       # creates (or reuses) the job, runs it, waits, verifies

No weights pass through the user's machine: the job (``python:3.12-slim``, the copier cloud/hf_copy.py as an
environment value, ``google-cloud-storage`` installed at start) streams the files from the hub into the bucket.
The Hugging Face token reaches the job only as a Secret Manager reference (``valueSource.secretKeyRef``): it is
never read by inferctl, never an argument, never in a request. Afterwards inferctl compares the bucket with the
manifest the job wrote (sizes, config.json, the safetensors index or single weights file).
"""

from __future__ import annotations

import hashlib
import re
import time
from importlib import resources
from typing import Any

from pydantic import BaseModel, Field

from inferctl.cloud.clients import CloudContext, to_dict
from inferctl.cloud.errors import AlreadyExists, CloudTimeout, DeployFailed, NotManaged
from inferctl.cloud.requests import PlannedRequest, gcloud_command
from inferctl.cloud.storage import StagedCheck, check_staged
from inferctl.errors import ConfigError
from inferctl.profiles.profile import MANAGED_LABEL, MANAGED_VALUE

IMAGE = "python:3.12-slim"
PROGRAM_ENV = "INFERCTL_PROGRAM"
STAGE_LABEL = "inferctl-stage"
COMMAND = ["sh", "-c", 'pip install --quiet --no-cache-dir "google-cloud-storage>=2.16" && '
                       f'exec python -c "${PROGRAM_ENV}"']
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9_.-]+$")
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$")


class StagePlan(BaseModel):
    """`inferctl artifacts stage`: the job, the requests that create and run it, and the profile setting."""

    model: str = Field(description="Hugging Face repository id.")
    revision: str
    bucket: str
    prefix: str = Field(description="Folder in the bucket the files go to.")
    project: str
    region: str
    job_name: str = Field(description="Full name of the Cloud Run Job.")
    token_secret: str | None = Field(description="Secret Manager secret with the HF token (None: public model).")
    requests: list[PlannedRequest]
    gcloud: list[str]
    profile_setting: str = Field(description="What to put in a profile to serve the staged folder.")
    notes: list[str] = Field(default_factory=list)


class StageResult(BaseModel):
    plan: StagePlan
    execution: str | None = Field(default=None, description="The job execution that ran.")
    check: StagedCheck


def program() -> str:
    """The copier the job runs: the text of cloud/hf_copy.py, exactly."""
    return (resources.files("inferctl.cloud") / "hf_copy.py").read_text(encoding="utf-8")


def parse_bucket_url(url: str, model: str) -> tuple[str, str]:
    """gs://BUCKET[/PREFIX] -> (bucket, prefix); the prefix defaults to the repository id."""
    rest = url.removeprefix("gs://").strip("/")
    bucket, _, prefix = rest.partition("/")
    if not _BUCKET.match(bucket):
        raise ConfigError(f"--bucket takes a gs:// address whose bucket name is valid (lowercase letters, digits, "
                          f"-, _ and .); got {url[:100]!r}.")
    prefix = prefix.strip("/") or model
    if ".." in prefix.split("/") or not re.fullmatch(r"[A-Za-z0-9_./-]+", prefix):
        raise ConfigError(f"The folder {prefix[:100]!r} in --bucket is not a plain path.")
    return bucket, prefix


def job_id(model: str, bucket: str, prefix: str) -> str:
    """Same staging, same job (a re-run reuses it); Cloud Run job ids: lowercase, <= 49 characters here."""
    slug = re.sub(r"[^a-z0-9]+", "-", model.split("/")[-1].lower()).strip("-")[:26]
    digest = hashlib.sha256(f"{model}|{bucket}|{prefix}".encode()).hexdigest()[:8]
    return f"inferctl-stage-{slug}-{digest}"


def job_body(plan_args: dict[str, Any]) -> dict[str, Any]:
    a = plan_args
    env: list[dict[str, Any]] = [{"name": "INFERCTL_REPO", "value": a["model"]},
                                 {"name": "INFERCTL_REVISION", "value": a["revision"]},
                                 {"name": "INFERCTL_BUCKET", "value": a["bucket"]},
                                 {"name": "INFERCTL_PREFIX", "value": a["prefix"]},
                                 {"name": PROGRAM_ENV, "value": program()}]
    if a["token_secret"]:
        env.append({"name": "HF_TOKEN", "valueSource": {"secretKeyRef": {"secret": a["token_secret"],
                                                                          "version": "latest"}}})
    task: dict[str, Any] = {"maxRetries": 1, "timeout": "21600s", "containers": [{
        "name": "stage", "image": IMAGE, "command": COMMAND, "env": env,
        "resources": {"limits": {"cpu": "2", "memory": "4Gi"}}}]}
    if a.get("service_account"):
        task["serviceAccount"] = a["service_account"]
    labels = {MANAGED_LABEL: MANAGED_VALUE, STAGE_LABEL: a["job_id"][len("inferctl-stage-"):][:63]}
    return {"labels": labels, "template": {"taskCount": 1, "parallelism": 1, "template": task}}


def stage_plan(project: str, region: str, model: str, bucket_url: str, *, revision: str = "main",
               token_secret: str | None = "hf-token", service_account: str | None = None) -> StagePlan:
    """Pure: the requests that create and run the staging job. Needs no credentials."""
    if not _REPO.match(model):
        raise ConfigError(f"MODEL must be a Hugging Face repository id like google/gemma-4-12b-it; got "
                          f"{model[:100]!r}.")
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", revision):
        raise ConfigError(f"--revision must be a branch, tag or commit; got {revision[:100]!r}.")
    if not re.fullmatch(r"[a-z]+-[a-z]+[0-9]+", region):
        raise ConfigError(f"--region must be a region like us-central1; got {region[:60]!r}.")
    bucket, prefix = parse_bucket_url(bucket_url, model)
    jid = job_id(model, bucket, prefix)
    parent = f"projects/{project}/locations/{region}"
    args = {"model": model, "revision": revision, "bucket": bucket, "prefix": prefix, "token_secret": token_secret,
            "service_account": service_account, "job_id": jid}
    requests = [
        PlannedRequest(api="run", method="jobs.create", parent=parent, collection="jobs", resource_id=jid,
                       id_param="jobId", body=job_body(args), skip_if_exists=True,
                       why="Create the Cloud Run Job that copies the repository into the bucket (an existing job "
                           "of this same staging is reused)."),
        PlannedRequest(api="run", method="jobs.run", parent=f"{parent}/jobs/{jid}", collection=":run", body={},
                       why="Run it; inferctl waits for the execution, then checks the bucket against its manifest."),
    ]
    env_flags = [f"--set-env-vars=INFERCTL_REPO={model},INFERCTL_REVISION={revision},INFERCTL_BUCKET={bucket},"
                 f"INFERCTL_PREFIX={prefix}", f"--set-env-vars={PROGRAM_ENV}=\"$(cat hf_copy.py)\""]
    if token_secret:
        env_flags.append(f"--set-secrets=HF_TOKEN={token_secret}:latest")
    gcloud = [gcloud_command("run", "jobs", "create", jid, f"--project={project}", f"--region={region}",
                             f"--image={IMAGE}", "--command=sh", "--args=-c," + COMMAND[2], "--cpu=2",
                             "--memory=4Gi", "--task-timeout=21600s", "--max-retries=1", *env_flags,
                             f"--labels={MANAGED_LABEL}={MANAGED_VALUE}"),
              gcloud_command("run", "jobs", "execute", jid, f"--project={project}", f"--region={region}", "--wait")]
    setting = (f'[profiles.NAME.model]\nbucket = "{bucket}"\npath = "{prefix}"\n'
               f'# mounted read-only at /mnt/models/{prefix} (model.mount_path); the server starts with '
               'HF_HUB_OFFLINE=1, no hub download')
    notes = ["The job's service account (default: the Compute Engine default) needs roles/storage.objectAdmin on "
             "the bucket" + (f" and roles/secretmanager.secretAccessor on {token_secret}" if token_secret else "")
             + "; the job reaches huggingface.co and PyPI over the internet.",
             "The token is a Secret Manager reference: inferctl never reads it and no request carries it."]
    return StagePlan(model=model, revision=revision, bucket=bucket, prefix=prefix, project=project, region=region,
                     job_name=f"{parent}/jobs/{jid}", token_secret=token_secret, requests=requests, gcloud=gcloud,
                     profile_setting=setting, notes=notes)


async def apply_stage(ctx: CloudContext, plan: StagePlan, *, progress: Any = None, timeout: float = 21600.0,
                      poll: float = 15.0) -> StageResult:
    """Create (or reuse) the job, run it, wait for the execution, and check the bucket."""
    import json

    import anyio
    from google.cloud import run_v2

    say = progress or (lambda _msg: None)
    create, run = plan.requests
    jobs = ctx.jobs()
    say(f"{create.http_method} {create.url}")
    try:
        await ctx.call(jobs.create_job, f"create job {create.resource_id}", parent=create.parent,
                       job_id=create.resource_id,
                       job=run_v2.Job.from_json(json.dumps(create.body), ignore_unknown_fields=False))
    except AlreadyExists:
        existing = to_dict(await ctx.call(jobs.get_job, "get the staging job", name=plan.job_name))
        if (existing.get("labels") or {}).get(MANAGED_LABEL) != MANAGED_VALUE:
            raise NotManaged(f"A job named {plan.job_name} exists and inferctl did not create it; nothing was "
                             "run.") from None
        say(f"{plan.job_name} already exists (an earlier staging of the same folder): reused")
    say(f"{run.http_method} {run.url}")
    op = await ctx.call(jobs.run_job, f"run job {create.resource_id}", name=plan.job_name)
    execution = getattr(getattr(op, "metadata", None), "name", None) or None
    if not execution:
        raise DeployFailed(f"Running {plan.job_name} returned no execution name.")
    deadline = time.monotonic() + timeout
    while True:
        ex = to_dict(await ctx.call(ctx.executions().get_execution, "get the staging execution", name=execution))
        if ex.get("completionTime") or ex.get("failedCount") or ex.get("succeededCount"):
            break
        if time.monotonic() > deadline:
            raise CloudTimeout(f"{execution} is still running after {timeout:.0f}s; `inferctl artifacts "
                               f"gs://{plan.bucket}/{plan.prefix}` shows how far it got.")
        say(f"running: {ex.get('runningCount', 0)} task(s)")
        await anyio.sleep(poll)
    if int(ex.get("failedCount", 0)) or not int(ex.get("succeededCount", 0)):
        why = "; ".join(c.get("message", "") for c in ex.get("conditions") or [] if c.get("message")) or "no reason"
        raise DeployFailed(f"The staging job failed ({why}); its logs are in Cloud Logging (resource "
                           f"cloud_run_job, job {create.resource_id}). Nothing is marked complete.")
    say("execution succeeded; checking the bucket")
    check = await check_staged(ctx, plan.bucket, plan.prefix)
    return StageResult(plan=plan, execution=execution, check=check)
