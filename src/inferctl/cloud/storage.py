"""Model files in a Cloud Storage bucket: what is there, how big, which folders are loadable."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from inferctl.cloud.clients import CloudContext, plain
from inferctl.cloud.hf_copy import MANIFEST


class Artifact(BaseModel):
    name: str = Field(description="Object name in the bucket.")
    size_bytes: int = Field(description="Object size.")
    updated: str | None = Field(default=None, description="Last update, RFC 3339.")


class ModelFolder(BaseModel):
    path: str = Field(description="Folder with a config.json: what a profile's model.path points at.")
    files: int = Field(description="Objects in the folder.")
    size_bytes: int = Field(description="Total size of the folder.")
    weights: int = Field(description="Weight files (.safetensors / .bin / .gguf).")
    staged: bool = Field(default=False, description="Staged by `inferctl artifacts stage` (has its manifest).")
    complete: bool | None = Field(default=None, description="Staged: every file of the manifest is there with "
                                  "its size, with config.json and the safetensors index (None: not staged).")
    problems: list[str] = Field(default_factory=list, description="Staged but incomplete: what is wrong.")


class ArtifactList(BaseModel):
    """`inferctl artifacts BUCKET`: objects and the model folders they form."""

    bucket: str
    prefix: str | None = None
    artifacts: list[Artifact] = Field(description="Objects, up to the limit.")
    models: list[ModelFolder] = Field(description="Folders that contain config.json.")
    truncated: bool = Field(description="More objects exist than the limit.")


_WEIGHTS = (".safetensors", ".bin", ".gguf", ".pt")


class StagedCheck(BaseModel):
    """A staged folder compared with the manifest its staging job wrote."""

    bucket: str
    prefix: str
    complete: bool = Field(description="Every listed file present with its size; config.json and the index.")
    files: int = Field(description="Files the manifest lists.")
    size_bytes: int = Field(description="Their total size.")
    problems: list[str] = Field(default_factory=list)


def verify_manifest(manifest: dict[str, Any], objects: dict[str, int]) -> list[str]:
    """What is wrong with a staged folder (pure): ``objects`` maps paths inside the folder to their sizes."""
    files = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
    problems = []
    for path, size in sorted(files.items()):
        have = objects.get(path)
        if have is None:
            problems.append(f"{path} is missing")
        elif have != size:
            problems.append(f"{path} has {have} bytes; the hub listed {size}")
    if "config.json" not in files:
        problems.append("the repository has no config.json")
    shards = [p for p in files if p.endswith(".safetensors")]
    if "model.safetensors.index.json" not in files and len(shards) != 1:
        problems.append("no model.safetensors.index.json and not a single .safetensors file")
    return problems


async def _manifest(ctx: CloudContext, bucket: str, name: str) -> dict[str, Any] | None:
    import json

    client = ctx.storage()

    def fetch() -> dict[str, Any] | None:
        blob = client.bucket(bucket).get_blob(name, timeout=ctx.timeout)
        return json.loads(blob.download_as_bytes(timeout=ctx.timeout)) if blob is not None else None

    try:
        found = await ctx.call(plain(fetch), f"read gs://{bucket}/{name}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


async def check_staged(ctx: CloudContext, bucket: str, prefix: str) -> StagedCheck:
    """Compare gs://bucket/prefix with its staging manifest."""
    prefix = prefix.strip("/")
    listing = await list_artifacts(ctx, bucket, prefix=prefix + "/", limit=100_000)
    objects = {a.name[len(prefix) + 1:]: a.size_bytes for a in listing.artifacts}
    manifest = await _manifest(ctx, bucket, f"{prefix}/{MANIFEST}")
    if manifest is None:
        return StagedCheck(bucket=bucket, prefix=prefix, complete=False, files=0, size_bytes=0,
                           problems=[f"no {MANIFEST}: the staging job has not finished, or did not stage this folder"])
    problems = verify_manifest(manifest, objects)
    files = manifest.get("files") if isinstance(manifest.get("files"), dict) else {}
    return StagedCheck(bucket=bucket, prefix=prefix, complete=not problems, files=len(files),
                       size_bytes=sum(int(v) for v in files.values()), problems=problems)


def summarise(bucket: str, prefix: str | None, artifacts: list[Artifact], truncated: bool) -> ArtifactList:
    """Group objects into model folders (pure)."""
    folders = {a.name.rsplit("/", 1)[0] if "/" in a.name else "" for a in artifacts
               if a.name.endswith("config.json") and a.name.rsplit("/", 1)[-1] == "config.json"}
    models = []
    for folder in sorted(folders):
        inside = [a for a in artifacts if (a.name.startswith(folder + "/") if folder else "/" not in a.name)]
        models.append(ModelFolder(path=folder or ".", files=len(inside), size_bytes=sum(a.size_bytes for a in inside),
                                  weights=sum(a.name.endswith(_WEIGHTS) for a in inside),
                                  staged=any(a.name == (f"{folder}/{MANIFEST}" if folder else MANIFEST)
                                             for a in inside)))
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
    out = summarise(bucket, prefix, items[:limit], truncated=len(items) > limit)
    for folder in out.models:
        if folder.staged:
            base = "" if folder.path == "." else folder.path
            manifest = await _manifest(ctx, bucket, f"{base}/{MANIFEST}" if base else MANIFEST) or {}
            objects = {a.name[len(base) + 1:] if base else a.name: a.size_bytes for a in items
                       if (a.name.startswith(base + "/") if base else True)}
            folder.problems = verify_manifest(manifest, objects)
            folder.complete = not folder.problems
    return out
