"""An API request as data: what the dry run prints is what apply sends.

A ``PlannedRequest`` names the API method, the parent and resource id, and the JSON body in the
REST shape documented by Google (camelCase, enum names). ``inferctl deploy`` prints these; with
``--apply`` the same objects are turned into client calls by ``deploy.execute``. A body value that
is only known at apply time and must never be shown (a generated API key) is ``GENERATED``.
"""

from __future__ import annotations

import shlex
from typing import Any, Literal
from urllib.parse import quote, urlencode

from pydantic import BaseModel, Field

Api = Literal["run", "compute", "tpu", "secretmanager"]
GENERATED = "<generated at apply time, never shown>"

_HOSTS = {
    "run": "https://run.googleapis.com/v2/",
    "compute": "https://compute.googleapis.com/compute/v1/",
    "tpu": "https://tpu.googleapis.com/v2/",
    "secretmanager": "https://secretmanager.googleapis.com/v1/",
}


class PlannedRequest(BaseModel):
    """One Google Cloud API call of a deployment plan."""

    api: Api = Field(description="Which API: run, compute, tpu or secretmanager.")
    method: str = Field(description="REST method, e.g. services.create, instances.insert.")
    http_method: str = Field(default="POST", description="HTTP verb.")
    parent: str = Field(description="Parent resource, e.g. projects/P/locations/us-east4.")
    collection: str = Field(description="Collection under the parent, e.g. services.")
    resource_id: str | None = Field(default=None, description="Id of the resource created.")
    id_param: str | None = Field(default=None, description="Query parameter carrying the id (serviceId, ...).")
    body: dict[str, Any] | None = Field(default=None, description="JSON body in Google's REST shape.")
    skip_if_exists: bool = Field(default=False, description="An existing resource is fine (shared secrets).")
    only_if_created: str | None = Field(
        default=None, description="Run only when the request with this resource id was created by this apply.")
    why: str = Field(default="", description="What the request is for.")

    @property
    def path(self) -> str:
        if self.collection.startswith(":"):  # custom verbs: projects/P/secrets/S:addVersion
            return f"{self.parent}{self.collection}"
        return f"{self.parent}/{self.collection}"

    @property
    def url(self) -> str:
        """The full REST URL, as ``curl`` would send it."""
        query = {self.id_param: self.resource_id} if self.id_param and self.resource_id else {}
        suffix = f"?{urlencode(query)}" if query else ""
        return _HOSTS[self.api] + quote(self.path, safe="/:") + suffix


class ZoneChoice(BaseModel):
    """One location a multi-zone deploy (``--zones``) would try (cloud/zones.py)."""

    location: str = Field(description="Zone (GCE, TPU) or region (Cloud Run).")
    why: str = Field(description="Why it is in the list, at this place.")
    quota_available: float | None = Field(default=None, description="Quota left there (None: unknown).")


class DeployPlan(BaseModel):
    """Everything ``inferctl deploy PROFILE`` would do, in order, and nothing else."""

    profile: str = Field(description="Profile name.")
    platform: str = Field(description="cloudrun, gce or tpu.")
    project: str = Field(description="Google Cloud project id.")
    location: str = Field(description="Region (Cloud Run) or zone (GCE, TPU).")
    resource_name: str = Field(description="Full name of the service / instance / queued resource.")
    requests: list[PlannedRequest] = Field(description="The API requests, in the order apply sends them.")
    gcloud: list[str] = Field(description="Equivalent gcloud commands, for people who know them (never run).")
    warnings: list[str] = Field(default_factory=list, description="Things to know before applying.")
    fit: str | None = Field(default=None, description="The planner's verdict, when available.")
    zones: list[ZoneChoice] = Field(default_factory=list, description="--zones: the locations apply tries, in "
                                    "order; the requests are shown for the first, the others differ only in it.")


def gcloud_command(*parts: str) -> str:
    """A gcloud command line for display; quoted so it can be pasted into a shell."""
    return shlex.join(["gcloud", *parts])
