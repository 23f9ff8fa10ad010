"""`profiles list | show`: the deployment profiles inferctl knows."""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.cloud.profiles import Profile


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
    from inferctl.cloud.profiles import list_profiles

    out = []
    for p, shipped in list_profiles():
        model = p.model.hf_repo or f"gs://{p.model.bucket}/{p.model.path}"
        out.append(ProfileSummary(name=p.name, platform=p.platform, location=p.region or p.zone,
                                  accelerator=f"{p.accelerator_count}x {p.accelerator}", model=model,
                                  shipped=shipped, description=p.description))
    return out


def show_profile(name: str) -> ProfileDetail:
    """One profile with its server command line and validation results (no project needed)."""
    from inferctl.cloud.profiles import load_profile
    from inferctl.cloud.serve import serve_args, validate

    p = load_profile(name)
    report = validate(p)
    return ProfileDetail(profile=p, serve_command=["vllm", "serve", *serve_args(p)], errors=report.errors,
                         warnings=report.warnings)
