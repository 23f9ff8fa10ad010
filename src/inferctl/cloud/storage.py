"""Model files in a Cloud Storage bucket: what is there, how big, which folders are loadable."""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.cloud.clients import CloudContext, plain


class Artifact(BaseModel):
    name: str = Field(description="Object name in the bucket.")
    size_bytes: int = Field(description="Object size.")
    updated: str | None = Field(default=None, description="Last update, RFC 3339.")


class ModelFolder(BaseModel):
    path: str = Field(description="Folder with a config.json: what a profile's model.path points at.")
    files: int = Field(description="Objects in the folder.")
    size_bytes: int = Field(description="Total size of the folder.")
    weights: int = Field(description="Weight files (.safetensors / .bin / .gguf).")


class ArtifactList(BaseModel):
    """`inferctl artifacts BUCKET`: objects and the model folders they form."""

    bucket: str
    prefix: str | None = None
    artifacts: list[Artifact] = Field(description="Objects, up to the limit.")
    models: list[ModelFolder] = Field(description="Folders that contain config.json.")
    truncated: bool = Field(description="More objects exist than the limit.")


_WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt")


def summarise(bucket: str, prefix: str | None, artifacts: list[Artifact], truncated: bool) -> ArtifactList:
    """Group objects into model folders (pure)."""
    folders = {a.name.rsplit("/", 1)[0] if "/" in a.name else "" for a in artifacts
               if a.name.endswith("config.json") and a.name.rsplit("/", 1)[-1] == "config.json"}
    models = []
    for folder in sorted(folders):
        inside = [a for a in artifacts if (a.name.startswith(folder + "/") if folder else "/" not in a.name)]
        models.append(ModelFolder(path=folder or ".", files=len(inside), size_bytes=sum(a.size_bytes for a in inside),
                                  weights=sum(a.name.endswith(_WEIGHTS) for a in inside)))
    return ArtifactList(bucket=bucket, prefix=prefix, artifacts=artifacts, models=models, truncated=truncated)


async def list_artifacts(ctx: CloudContext, bucket: str, *, prefix: str | None = None,
                         limit: int = 1000) -> ArtifactList:
    """Objects in ``bucket`` (under ``prefix``) with sizes."""
    client = ctx.storage()

    def fetch() -> list[Artifact]:
        out = []
        for blob in client.list_blobs(bucket, prefix=prefix, max_results=limit + 1, timeout=ctx.timeout):
            out.append(Artifact(name=blob.name, size_bytes=int(blob.size or 0),
                                updated=blob.updated.isoformat() if blob.updated else None))
        return out

    items = await ctx.call(plain(fetch), f"list gs://{bucket}")
    return summarise(bucket, prefix, items[:limit], truncated=len(items) > limit)
