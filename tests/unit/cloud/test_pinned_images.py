"""Pinned images (issue 14.4): every shipped profile names a vLLM release, `describe` shows the image a deployment
runs and the vLLM version its server reports, and a run against a deployment records both in meta.json."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM, free_port
from typer.testing import CliRunner

from inferctl.bench.store import RunDir
from inferctl.cli.app import app
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.ops.lifecycle import describe_deployment
from inferctl.profiles.profile import list_profiles, load_profile
from inferctl.profiles.serve import validate


def deploy(name: str):
    p = load_profile(name).with_project()
    return asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))


@pytest.mark.parametrize("name", sorted(p.name for p, shipped in list_profiles() if shipped))
def test_every_shipped_profile_pins_a_vllm_release(name):
    p = load_profile(name)
    assert p.image in ("vllm/vllm-openai:v0.26.0-cu129", "vllm/vllm-tpu:v0.26.0"), p.image
    assert (p.platform == "tpu") == p.image.startswith("vllm/vllm-tpu:")
    assert not [w for w in validate(p).warnings if "not pinned" in w]


@pytest.mark.parametrize("image, pinned", [
    ("vllm/vllm-openai:latest", False), ("vllm/vllm-openai:nightly", False), ("vllm/vllm-openai", False),
    ("vllm/vllm-tpu:gemma4", False), ("vllm/vllm-openai:v0.26.0", True), ("vllm/vllm-openai:v0.26.0-cu129", True),
    ("registry.example:5000/vllm:0.26.1", True), ("vllm/vllm-openai@sha256:" + "a" * 64, True),
])
def test_an_unpinned_image_is_a_warning(image, pinned):
    p = load_profile("cloudrun-l4-12b-qat").model_copy(update={"image": image})
    warned = [w for w in validate(p).warnings if "not pinned" in w]
    assert bool(warned) is not pinned, warned


@pytest.mark.parametrize("name", ["cloudrun-l4-12b-qat", "gce-g2-4-12b-qat", "tpu-v5e-1-e2b"])
def test_describe_shows_the_image_the_resource_runs(gcp, name):
    deploy(name)
    st = asyncio.run(describe_deployment(name))
    assert st.exists and st.image == load_profile(name).image


@pytest.fixture
def vm_with_server(gcp, isolated, monkeypatch):
    """A deployed GCE profile whose address is a fake vLLM on 127.0.0.1 that wants the profile's API key."""
    cfg = FakeConfig(model="gemma-4-12b", version="0.26.0")
    with FakeVLLM(cfg) as server:
        (isolated / "config.toml").write_text(
            f'[profiles.my-vm]\nbase = "gce-g2-4-12b-qat"\nport = {server.port}\n'
            'allowed_source_ranges = ["203.0.113.0/24"]\n')
        deploy("my-vm")
        cfg.require_token = gcp.state.secret_value("inferctl-my-vm-api-key").decode()
        monkeypatch.setattr("inferctl.cloud.gce.addresses", lambda inst: ("127.0.0.1", None))
        yield server


def test_describe_shows_the_servers_vllm_version(vm_with_server):
    assert asyncio.run(describe_deployment("my-vm")).vllm_version is None  # Google Cloud's view only
    st = asyncio.run(describe_deployment("my-vm", ask_server=True))
    assert st.phase == "ready" and st.vllm_version == "0.26.0" and st.image == "vllm/vllm-openai:v0.26.0-cu129"
    out = CliRunner().invoke(app, ["describe", "my-vm"], env={"COLUMNS": "120"})
    assert out.exit_code == 0, out.output
    assert "vllm/vllm-openai:v0.26.0-cu129" in out.stdout and "0.26.0" in out.stdout


def test_describe_without_an_answering_server_has_no_version(gcp, isolated, monkeypatch):
    port = free_port()  # nothing listens there
    (isolated / "config.toml").write_text(f'[profiles.my-vm]\nbase = "gce-g2-4-12b-qat"\nport = {port}\n')
    deploy("my-vm")
    monkeypatch.setattr("inferctl.cloud.gce.addresses", lambda inst: ("127.0.0.1", None))
    st = asyncio.run(describe_deployment("my-vm", ask_server=True))
    assert st.phase == "ready" and st.vllm_version is None and st.image
    out = CliRunner().invoke(app, ["describe", "my-vm"], env={"COLUMNS": "120"})
    assert out.exit_code == 0 and "vLLM" not in out.stdout, out.output


def test_a_run_against_a_deployment_records_image_and_version(vm_with_server, tmp_path):
    r = CliRunner().invoke(app, ["bench", "run", "--target", "my-vm", "--context", "64", "-c", "1",
                                 "--output-tokens", "4", "-n", "2", "--warmup", "0", "--runs-dir",
                                 str(tmp_path / "runs"), "--json"])
    assert r.exit_code == 0, r.output
    meta = RunDir.open(json.loads(r.stdout)["path"]).read_meta()
    assert meta.target["image"] == "vllm/vllm-openai:v0.26.0-cu129" and meta.vllm_version == "0.26.0"
    assert set(meta.target) == {"name", "url", "image"}  # and no credentials
