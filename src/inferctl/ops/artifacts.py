"""`artifacts [BUCKET]`: model files in Cloud Storage and their sizes."""

from __future__ import annotations

from inferctl.cloud.storage import ArtifactList
from inferctl.errors import ConfigError


def _default_bucket() -> str | None:
    """A bucket named by some profile's model source (the first, alphabetically)."""
    from inferctl.profiles.profile import list_profiles

    for profile, shipped in list_profiles():
        if profile.model.bucket and not shipped:
            return profile.model.bucket
    return None


async def list_artifacts(bucket: str | None = None, *, prefix: str | None = None, project: str | None = None,
                         limit: int = 1000) -> ArtifactList:
    """Objects in ``bucket`` (default: the bucket of a user profile) and the model folders they form."""
    from inferctl.cloud import storage
    from inferctl.cloud.clients import CloudContext
    from inferctl.profiles.profile import resolve_project

    bucket = (bucket or _default_bucket() or "").removeprefix("gs://").strip("/")
    if not bucket:
        raise ConfigError("Name a bucket (`inferctl artifacts BUCKET`); no profile in the config file names one.")
    if "/" in bucket and prefix is None:
        bucket, prefix = bucket.split("/", 1)
    return await storage.list_artifacts(CloudContext(resolve_project(project)), bucket, prefix=prefix, limit=limit)
