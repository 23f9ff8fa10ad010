"""`profiles list | show`: the deployment profiles inferctl knows."""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.profiles.profile import Profile
from inferctl.profiles.serve import ValidationReport


class ProfileSummary(BaseModel):
    name: str
    platform: str
    location: str | None = Field(description="Region (Cloud Run) or zone (GCE, TPU).")
    accelerator: str = Field(description="Accelerator type and count.")
    model: str = Field(description="HF repo id or gs://bucket/path.")
    shipped: bool = Field(description="A shipped example (not from the config file).")
    description: str = ""


class ProfileDetail(BaseModel):
    profile: Profile
    serve_command: list[str] = Field(description="`vllm serve` argv the server runs.")
    errors: list[str] = Field(description="Validation errors (deploy refuses).")
    warnings: list[str] = Field(description="Validation warnings.")


def list_profile_summaries() -> list[ProfileSummary]:
    """Every profile, shipped examples and the config file's."""
    from inferctl.profiles.profile import list_profiles

    out = []
    for p, shipped in list_profiles():
        model = p.model.hf_repo or f"gs://{p.model.bucket}/{p.model.path}"
        out.append(ProfileSummary(name=p.name, platform=p.platform, location=p.region or p.zone,
                                  accelerator=f"{p.accelerator_count}x {p.accelerator}", model=model,
                                  shipped=shipped, description=p.description))
    return out


def show_profile(name: str) -> ProfileDetail:
    """One profile with its server command line and validation results (no project needed)."""
    from inferctl.profiles.profile import load_profile
    from inferctl.profiles.serve import serve_args

    p = load_profile(name)
    report = check_profile(p)
    return ProfileDetail(profile=p, serve_command=["vllm", "serve", *serve_args(p)], errors=report.errors,
                         warnings=report.warnings)


def check_profile(profile: Profile) -> ValidationReport:
    """Every check that needs no API call, then the planner's fit check (issue 6); what `deploy` and `profiles
    show` report. The fit check lives here, not in ``profiles/``, because profiles are data below the planner."""
    from inferctl.profiles.serve import validate

    report = validate(profile)
    report.fit = _fit_check(profile, report)
    return report


def _fit_check(profile: Profile, r: ValidationReport) -> str | None:
    """A model the catalog does not know is a warning, not a refusal."""
    from inferctl.plan.memory import plan_memory
    from inferctl.profiles.serving import serving_config

    try:
        plan = plan_memory(serving_config(profile))
    except Exception as exc:  # the planner may not know every model or accelerator; never block on that
        r.warnings.append(f"Fit check skipped: {exc}")
        return None
    if not plan.fits:
        r.errors.append(f"The planner says this does not fit: {plan.reason or 'not enough memory'}")
        return f"does not fit: {plan.reason}"
    return (f"fits: {plan.weights_gib:.1f} GiB weights and {plan.kv_memory_gib:.1f} GiB KV cache per device "
            f"(of {plan.device_memory_gib:.0f} GiB)")
