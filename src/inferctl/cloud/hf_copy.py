"""Copy a Hugging Face model repository into Cloud Storage: the program the staging Cloud Run Job runs.

Self-contained on purpose (the standard library and ``google-cloud-storage`` only, no inferctl import): the job
sends this file's text as an environment value to ``python:3.12-slim`` (cloud/staging.py), so the program that
runs in the user's project is exactly the one the plan shows and these tests run.

    INFERCTL_REPO=google/gemma-4-12b-it INFERCTL_BUCKET=b INFERCTL_PREFIX=models/gemma python hf_copy.py

The token comes from ``HF_TOKEN`` (Cloud Run fills it from Secret Manager); it is sent only to the hub, never
to the storage host or a redirect target (``add_unredirected_header``), and never printed. Files stream from
the hub to the bucket in chunks; nothing is written to local disk. At the end the program writes
``PREFIX/.inferctl-staged.json`` (repo, revision, every file with the size the hub listed), which
``inferctl artifacts`` compares with what is in the bucket.

The hub side is two documented endpoints: ``GET /api/models/{repo}/tree/{revision}?recursive=true`` (pages
linked by a ``Link: <...>; rel="next"`` header) and ``GET /{repo}/resolve/{revision}/{path}`` (large files
redirect to a CDN). ``INFERCTL_HUB`` replaces ``https://huggingface.co`` (the test seam: a local server).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import urllib.parse
import urllib.request
from typing import Any

MANIFEST = ".inferctl-staged.json"
DEFAULT_HUB = "https://huggingface.co"
CHUNK = 16 * 1024 * 1024  # resumable upload chunk: a multiple of 256 KiB


def _request(url: str, token: str | None) -> urllib.request.Request:
    req = urllib.request.Request(url, headers={"User-Agent": "inferctl-stage/1"})
    if token:
        req.add_unredirected_header("Authorization", f"Bearer {token}")  # not sent on to a redirect's host
    return req


def list_files(hub: str, repo: str, revision: str, token: str | None) -> list[tuple[str, int]]:
    """(path, size) of every file of the repository at ``revision``."""
    quoted = urllib.parse.quote(revision, safe="")
    url: str | None = f"{hub}/api/models/{repo}/tree/{quoted}?recursive=true"
    files: list[tuple[str, int]] = []
    while url:
        with urllib.request.urlopen(_request(url, token), timeout=60) as resp:
            for entry in json.loads(resp.read()):
                if entry.get("type") == "file":
                    size = (entry.get("lfs") or {}).get("size", entry.get("size", 0))
                    files.append((entry["path"], int(size)))
            m = re.search(r'<([^>]+)>;\s*rel="next"', resp.headers.get("Link", ""))
            url = urllib.parse.urljoin(hub + "/", m.group(1)) if m else None
    return files


def copy_repo(bucket: Any, *, repo: str, prefix: str, revision: str = "main", token: str | None = None,
              hub: str = DEFAULT_HUB, chunk_size: int = CHUNK, log: Any = None) -> dict[str, Any]:
    """Stream every file of ``repo`` into ``bucket`` under ``prefix``; write and return the manifest.

    ``bucket`` is a ``google.cloud.storage.Bucket``. A file whose object already has the listed size is skipped
    (a re-run resumes). Raises on any failure, before the manifest is written: no manifest, no "complete".
    """
    log = log or (lambda line: print(line, flush=True))  # noqa: T201 - the job's log is its stdout
    prefix = prefix.strip("/")
    files = list_files(hub, repo, revision, token)
    if not files:
        raise RuntimeError(f"{repo}@{revision} lists no files.")
    quoted = urllib.parse.quote(revision, safe="")
    for n, (path, size) in enumerate(files, 1):
        name = f"{prefix}/{path}" if prefix else path
        existing = bucket.get_blob(name)
        if existing is not None and existing.size == size:
            log(f"[{n}/{len(files)}] {path}: already there ({size} bytes)")
            continue
        url = f"{hub}/{repo}/resolve/{quoted}/{urllib.parse.quote(path)}"
        blob = bucket.blob(name, chunk_size=chunk_size)
        # an HTTP body cannot seek, which upload_from_file's resumable path needs; the blob writer streams it
        with urllib.request.urlopen(_request(url, token), timeout=300) as resp, \
                blob.open("wb", chunk_size=chunk_size, ignore_flush=True,
                          content_type="application/octet-stream") as out:
            shutil.copyfileobj(resp, out, 1024 * 1024)
        blob.reload()
        if blob.size != size:
            raise RuntimeError(f"{path}: {blob.size} bytes in the bucket, the hub lists {size}.")
        log(f"[{n}/{len(files)}] {path}: {size} bytes")
    manifest = {"repo": repo, "revision": revision, "files": dict(files)}
    bucket.blob(f"{prefix}/{MANIFEST}" if prefix else MANIFEST).upload_from_string(
        json.dumps(manifest, indent=1), content_type="application/json")
    return manifest


def main() -> int:
    from google.cloud import storage

    env = os.environ
    token = env.get("HF_TOKEN") or None
    try:
        bucket = storage.Client().bucket(env["INFERCTL_BUCKET"])
        manifest = copy_repo(bucket, repo=env["INFERCTL_REPO"], prefix=env.get("INFERCTL_PREFIX", ""),
                             revision=env.get("INFERCTL_REVISION", "main"), token=token,
                             hub=env.get("INFERCTL_HUB", DEFAULT_HUB))
    except Exception as exc:  # one line, with the token (if it ever appeared) removed
        text = f"{type(exc).__name__}: {exc}"
        print("staging failed: " + (text.replace(token, "***") if token else text), file=sys.stderr)  # noqa: T201
        return 1
    print(f"staged {len(manifest['files'])} files of {manifest['repo']}@{manifest['revision']}")  # noqa: T201
    return 0


if __name__ == "__main__":
    sys.exit(main())
