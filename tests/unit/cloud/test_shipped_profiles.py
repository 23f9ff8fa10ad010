"""The seed's deployments ship as profiles, each one passing the planner's fit check (issue 14.5)."""

from __future__ import annotations

import pytest

from inferctl.ops.profiles import check_profile
from inferctl.profiles.profile import list_profiles, load_profile

# The seed's deployments that had no profile: TPU v5e-1 with E2B and E4B in us-west4-a, a g2-standard-4 VM with
# E2B / E4B / 12B QAT, 26B-A4B and 31B on a Cloud Run RTX PRO 6000, 12B QAT with MTP on a Cloud Run L4.
SEED = {
    "tpu-v5e-1-e2b": ("tpu", "v5litepod-1", "us-west4-a", "gemma-4-E2B"),
    "tpu-v5e-1-e4b-qat": ("tpu", "v5litepod-1", "us-west4-a", "gemma-4-E4B"),
    "gce-g2-4-e2b-qat": ("gce", "nvidia-l4", "us-east4-a", "gemma-4-E2B-it-qat"),
    "gce-g2-4-e4b-qat": ("gce", "nvidia-l4", "us-east4-a", "gemma-4-E4B-it-qat"),
    "gce-g2-4-12b-qat": ("gce", "nvidia-l4", "us-east4-a", "gemma-4-12B-it-qat"),
    "cloudrun-rtx6000-26b-a4b": ("cloudrun", "nvidia-rtx-pro-6000", "europe-west4", "gemma-4-26B-A4B"),
    "cloudrun-rtx6000-31b-qat": ("cloudrun", "nvidia-rtx-pro-6000", "europe-west4", "gemma-4-31B-it-qat"),
    "cloudrun-l4-12b-qat-mtp": ("cloudrun", "nvidia-l4", "us-east4", "gemma-4-12B-it-qat"),
}


@pytest.mark.parametrize("name", sorted(SEED))
def test_seed_deployment_has_a_profile(name):
    p = load_profile(name)
    platform, accelerator, location, model = SEED[name]
    assert (p.platform, p.accelerator, p.location) == (platform, accelerator, location)
    assert model in (p.model.hf_repo or "")
    if p.platform == "gce":
        assert p.machine_type == "g2-standard-4" and p.accelerator_count == 1
    if name.endswith("-mtp"):
        assert p.vllm.speculative_config and "assistant" in p.vllm.speculative_config["model"]


@pytest.mark.parametrize("name", sorted(p.name for p, shipped in list_profiles() if shipped))
def test_every_shipped_profile_passes_the_planners_fit_check(name):
    report = check_profile(load_profile(name))
    assert report.errors == [], report.errors
    assert report.fit and report.fit.startswith("fits:"), report.fit  # the planner knew the model and it fits
