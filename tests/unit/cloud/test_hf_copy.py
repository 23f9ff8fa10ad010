"""The staging job's program (cloud/hf_copy.py): hub listing with pages, resolve with a CDN redirect, streamed
resumable uploads with the official storage client, the manifest; the token goes to the hub only."""

from __future__ import annotations

import json

import pytest
from tests.fakes.fake_hub import FakeHub, HubState
from tests.unit.cloud.conftest import HF_TOKEN

from inferctl.cloud.clients import CloudContext
from inferctl.cloud.hf_copy import MANIFEST, copy_repo

FILES = {"config.json": b'{"architectures": ["Gemma3ForCausalLM"]}',
         "model.safetensors.index.json": b'{"weight_map": {}}',
         # over the client's 8 MiB multipart limit: a resumable upload in 1 MiB chunks, as real shards go
         "model-00001-of-00002.safetensors": bytes(range(256)) * 36_000,
         "model-00002-of-00002.safetensors": b"\x01" * 300_000,
         "tokenizer.json": b"{}"}


@pytest.fixture
def hub():
    with FakeHub(HubState(token=HF_TOKEN, files=dict(FILES))) as fake:
        yield fake


def bucket_of(gcp, name="weights"):
    gcp.state.blobs.setdefault(name, [])
    return CloudContext("test-proj").storage().bucket(name)


def test_copies_every_file_and_writes_the_manifest(gcp, hub):
    lines: list[str] = []
    manifest = copy_repo(bucket_of(gcp), repo="google/gemma-4-12b-it", prefix="models/gemma-12b", token=HF_TOKEN,
                         hub=hub.url, chunk_size=1024 * 1024, log=lines.append)
    assert manifest["files"] == {k: len(v) for k, v in FILES.items()}
    for path, data in FILES.items():
        assert gcp.state.blob_data[("weights", f"models/gemma-12b/{path}")] == data
    stored = json.loads(gcp.state.blob_data[("weights", f"models/gemma-12b/{MANIFEST}")])
    assert stored["repo"] == "google/gemma-4-12b-it" and stored["files"] == manifest["files"]
    # every file streams through a resumable session (the blob writer); the 9.2 MB shard in 1 MiB chunks
    assert len(gcp.state.uploads) == len(FILES) and len(gcp.state.sent("storage.objects.upload")) >= 9 + 4
    # three listing pages (page size 2), followed through the Link header
    assert sum("/tree/main" in url for url, _ in hub.state.requests) == 3
    # the token went to the hub's own endpoints and never to the CDN or to storage
    for url, headers in hub.state.requests:
        assert ("authorization" in headers) == ("/cdn/" not in url), url
    assert HF_TOKEN not in json.dumps([r.raw for r in gcp.state.requests]) and HF_TOKEN not in "".join(lines)


def test_a_rerun_skips_what_is_already_there(gcp, hub):
    bucket = bucket_of(gcp)
    copy_repo(bucket, repo="google/gemma-4-12b-it", prefix="m", token=HF_TOKEN, hub=hub.url, log=lambda _l: None)
    before = len([u for u, _ in hub.state.requests if "/resolve/" in u])
    lines: list[str] = []
    copy_repo(bucket, repo="google/gemma-4-12b-it", prefix="m", token=HF_TOKEN, hub=hub.url, log=lines.append)
    assert len([u for u, _ in hub.state.requests if "/resolve/" in u]) == before
    assert all("already there" in line for line in lines)


def test_a_gated_repo_without_the_token_fails_before_any_manifest(gcp, hub):
    with pytest.raises(Exception, match="401"):
        copy_repo(bucket_of(gcp), repo="google/gemma-4-12b-it", prefix="m", token=None, hub=hub.url,
                  log=lambda _l: None)
    assert ("weights", f"m/{MANIFEST}") not in gcp.state.blob_data
