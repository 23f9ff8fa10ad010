"""`artifacts stage MODEL --bucket gs://B/prefix`: plan (and with apply, run) a Cloud Run Job that copies a
Hugging Face repository into Cloud Storage, then check the folder is complete. See cloud/staging.py."""

from __future__ import annotations

from collections.abc import Callable

from inferctl.cloud.staging import StagePlan, StageResult


def plan_staging(model: str, bucket: str, *, region: str = "us-central1", revision: str = "main",
                 token_secret: str | None = "hf-token", service_account: str | None = None,
                 project: str | None = None) -> StagePlan:
    """The dry run: the job and the requests that create and run it. Needs no credentials."""
    from inferctl.cloud.staging import stage_plan
    from inferctl.profiles.profile import resolve_project

    return stage_plan(resolve_project(project), region, model, bucket, revision=revision,
                      token_secret=token_secret or None, service_account=service_account)


async def apply_staging(plan: StagePlan, *, progress: Callable[[str], None] | None = None,
                        timeout: float = 21600.0, poll: float = 15.0) -> StageResult:
    """Create (or reuse) and run the job, wait for it, and verify the folder against its manifest."""
    from inferctl.cloud.clients import CloudContext
    from inferctl.cloud.staging import apply_stage

    return await apply_stage(CloudContext(plan.project), plan, progress=progress, timeout=timeout, poll=poll)
