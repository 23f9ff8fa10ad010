"""What `describe` reports about a deployment, the same shape for every platform."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from inferctl.profiles.profile import MANAGED_LABEL, MANAGED_VALUE

Phase = Literal["absent", "pending", "ready", "failed", "stopped", "deleting"]


class Condition(BaseModel):
    type: str = Field(description="Condition type (Ready, RoutesReady, ...).")
    state: str = Field(description="CONDITION_SUCCEEDED, CONDITION_FAILED, ...")
    message: str | None = Field(default=None, description="Why, when the API says.")


IMAGE_KEY = "inferctl-image"  # VM / TPU metadata item naming the container image (Cloud Run's spec says it)


class DeploymentStatus(BaseModel):
    """A deployed (or absent) profile as Google Cloud sees it."""

    profile: str = Field(description="Profile name.")
    platform: str = Field(description="cloudrun, gce or tpu.")
    resource_name: str = Field(description="Full resource name.")
    exists: bool = Field(description="Whether the resource exists.")
    phase: Phase = Field(description="absent, pending, ready, failed, stopped or deleting.")
    state: str | None = Field(default=None, description="The platform's own state (RUNNING, ACTIVE, Ready...).")
    reason: str | None = Field(default=None, description="Why it failed or is not ready yet.")
    conditions: list[Condition] = Field(default_factory=list, description="Cloud Run conditions.")
    revision: str | None = Field(default=None, description="Cloud Run: latest ready revision.")
    url: str | None = Field(default=None, description="Cloud Run URL or http://IP:PORT of the VM / TPU.")
    internal_url: str | None = Field(default=None, description="VM / TPU: http://INTERNAL_IP:PORT.")
    accelerator: str | None = Field(default=None, description="GPU / TPU type and count.")
    machine_type: str | None = Field(default=None, description="GCE machine type.")
    min_instances: int | None = Field(default=None, description="Cloud Run minimum instances.")
    max_instances: int | None = Field(default=None, description="Cloud Run maximum instances.")
    labels: dict[str, str] = Field(default_factory=dict, description="Labels on the resource.")
    managed: bool = Field(description="Created by inferctl (carries managed-by=inferctl).")
    network_access: str | None = Field(default=None, description="VM / TPU: tunnel (no external IP) or external.")
    access_hint: str | None = Field(default=None, description="VM / TPU: how to reach the server.")
    created_with: list[str] = Field(default_factory=list, description="VM / TPU: what deploy created beside it "
                                    "(API-key secret, firewall rule), as recorded on it; destroy deletes these.")
    authenticated: bool | None = Field(default=None, description="Cloud Run: callers need IAM (not public).")
    image: str | None = Field(default=None, description="Container image the resource runs.")
    vllm_version: str | None = Field(default=None, description="vLLM version the server reports (/version).")


def is_managed(labels: dict[str, str] | None) -> bool:
    """Whether a resource carries inferctl's label (destroy refuses the rest unless forced)."""
    return (labels or {}).get(MANAGED_LABEL) == MANAGED_VALUE
