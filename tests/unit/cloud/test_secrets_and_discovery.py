"""The HF token reaches Secret Manager and nothing else; a deployed profile works as --target."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from tests.unit.cloud.conftest import HF_TOKEN
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.errors import ConfigError
from inferctl.ops.targets import resolve_target
from inferctl.profiles.profile import load_profile


def deploy(name: str, **update):
    p = load_profile(name).model_copy(update=update).with_project()
    return asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))


def _files_contain(root: Path, needle: str) -> list[Path]:
    return [f for f in root.rglob("*") if f.is_file() and needle.encode() in f.read_bytes()]


def test_set_hf_token_from_stdin(gcp, isolated):
    result = CliRunner().invoke(app, ["secrets", "set-hf-token"], input=HF_TOKEN + "\n")
    assert result.exit_code == 0, result.output
    assert gcp.state.secret_value("hf-token") == HF_TOKEN.encode()
    assert HF_TOKEN not in result.output and HF_TOKEN not in (result.stderr or "")
    created = gcp.state.secrets["projects/test-proj/secrets/hf-token"]["secret"]
    assert created["labels"]["managed-by"] == "inferctl"
    assert _files_contain(isolated, HF_TOKEN) == []


def test_set_hf_token_from_env_and_json(gcp, monkeypatch):
    monkeypatch.setenv("MY_HF", HF_TOKEN)
    result = CliRunner().invoke(app, ["secrets", "set-hf-token", "--from-env", "MY_HF", "--json"])
    assert result.exit_code == 0, result.output
    assert HF_TOKEN not in result.output and '"created_secret": true' in result.output


def test_token_is_never_a_command_line_argument(gcp):
    result = CliRunner().invoke(app, ["secrets", "set-hf-token", HF_TOKEN])
    assert result.exit_code != 0 and gcp.state.secret_value("hf-token") is None
    result = CliRunner().invoke(app, ["secrets", "set-hf-token"], input="\n")
    assert result.exit_code != 0 and "No token on stdin" in result.stderr


def test_hf_token_only_ever_goes_to_secret_manager(gcp, isolated, fast_poll):
    runner = CliRunner()
    assert runner.invoke(app, ["secrets", "set-hf-token"], input=HF_TOKEN).exit_code == 0
    outputs = []
    for name in ("cloudrun-l4-12b-qat", "tpu-v6e-1-12b"):
        outputs.append(runner.invoke(app, ["deploy", name]).output)
        r = runner.invoke(app, ["deploy", name, "--apply", "--yes"])
        assert r.exit_code == 0, r.output + (r.stderr or "")
        outputs += [r.output, r.stderr or ""]
        outputs.append(runner.invoke(app, ["describe", name, "--json", "--no-server"]).output)
    for text in outputs:
        assert HF_TOKEN not in text
    for req in gcp.state.requests:
        if req.key != "secretmanager.secrets.addVersion":
            assert HF_TOKEN not in req.raw, req.key
    assert _files_contain(isolated, HF_TOKEN) == []


def test_cloud_run_profile_resolves_to_url_and_id_token(gcp):
    deploy("cloudrun-l4-12b-qat")
    t = resolve_target("cloudrun-l4-12b-qat")
    assert t.url == "https://cloudrun-l4-12b-qat-123456789012.us-east4.run.app"
    assert t.auth == "google-id-token" and t.audience == t.url and t.model == "gemma-4-12b"


def test_vm_profile_resolves_to_ip_and_api_key(gcp):
    deploy("gce-g2-48-31b", allowed_source_ranges=["203.0.113.0/24"], network_access="external")
    t = resolve_target("gce-g2-48-31b")
    assert t.url == "http://198.51.100.9:8000" and t.auth == "bearer"
    key = gcp.state.secret_value("inferctl-gce-g2-48-31b-api-key")
    assert key and os.environ[t.token_env] == key.decode()
    assert key.decode() not in t.model_dump_json()


def test_undeployed_profile_is_a_clear_error(gcp):
    with pytest.raises(ConfigError, match="not deployed.*deploy tpu-v6e-1-12b --apply"):
        resolve_target("tpu-v6e-1-12b")


def test_config_targets_still_win_and_unknown_names_fail(isolated):
    (isolated / "config.toml").write_text('[targets.cloudrun-l4-12b-qat]\nurl = "http://192.0.2.5:8000"\n')
    assert resolve_target("cloudrun-l4-12b-qat").url == "http://192.0.2.5:8000"
    with pytest.raises(ConfigError, match="Unknown target 'nope'"):
        resolve_target("nope")


def test_existing_commands_work_with_a_profile_target(gcp, monkeypatch, isolated):
    """`inferctl models --target PROFILE` reaches the VM with the API key from Secret Manager."""
    from tests.fakes.fake_vllm import FakeConfig, FakeVLLM

    with FakeVLLM(FakeConfig(model="gemma-4-31b")) as probe_port:
        port = probe_port.port
    (isolated / "config.toml").write_text(
        f'[profiles.my-vm]\nbase = "gce-g2-48-31b"\nport = {port}\nallowed_source_ranges = ["203.0.113.0/24"]\n')
    deploy_name = "my-vm"
    p = load_profile(deploy_name).with_project()
    asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))
    key = gcp.state.secret_value("inferctl-my-vm-api-key").decode()
    monkeypatch.setattr("inferctl.cloud.gce.addresses", lambda inst: ("127.0.0.1", None))
    cfg = FakeConfig(model="gemma-4-31b", require_token=key)
    from tests.fakes.fake_vllm import ServerThread, build_app

    app_, _ = build_app(cfg)
    server = ServerThread(app_)
    server.port = port
    import uvicorn

    server.server = uvicorn.Server(uvicorn.Config(app_, host="127.0.0.1", port=port, log_level="error",
                                                  lifespan="off"))
    import threading

    server.thread = threading.Thread(target=server.server.run, daemon=True)
    with server:
        result = CliRunner().invoke(app, ["models", "--target", "my-vm", "--json"])
    assert result.exit_code == 0, result.output + (result.stderr or "")
    assert "gemma-4-31b" in result.output and key not in result.output
