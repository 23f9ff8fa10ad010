"""Cloud tools against the fake Google Cloud: dry runs change nothing, real runs need --allow-write and the user's
yes through elicitation, and the HF token never passes through the model."""

from __future__ import annotations

import pytest
from mcp.types import ElicitResult
from tests.unit.mcp.conftest import HF_TOKEN, client, text

pytestmark = pytest.mark.anyio
PROFILE = "cloudrun-l4-12b-qat"


def answering(action: str, asked: list[str]):
    async def callback(context, params):
        asked.append(params.message)
        return ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)

    return callback


def writes(gcp) -> list[str]:
    return [r.key for r in gcp.state.requests if r.method in ("POST", "PATCH", "DELETE", "PUT")]


async def test_read_tools_capacity_artifacts_describe(gcp):
    gcp.state.gpu_zones = {"us-central1-a": ["nvidia-l4"]}
    gcp.state.region_quotas = {"us-central1": [{"metric": "NVIDIA_L4_GPUS", "limit": 8, "usage": 3}]}
    gcp.state.blobs["weights"] = [{"name": "google/gemma-4-12b/config.json", "size": "1200"},
                                  {"name": "google/gemma-4-12b/model-00001.safetensors", "size": "5000000000"}]
    async with client() as c:
        cap = await c.call_tool("find_capacity", {"accelerator": "nvidia-l4", "platforms": ["gce"]})
        assert not cap.is_error, text(cap)
        row = next(r for r in cap.structured_content["rows"] if r["location"] == "us-central1")
        assert row["available"] == 5
        arts = await c.call_tool("list_artifacts", {"bucket": "gs://weights"})
        assert arts.structured_content["models"][0]["path"] == "google/gemma-4-12b"
        desc = await c.call_tool("describe_deployment", {"profile": PROFILE, "include_plan": True})
        assert not desc.is_error, text(desc)
        out = desc.structured_content
        assert out["status"]["exists"] is False and out["plan"]["requests"]
        assert "vllm" in out["detail"]["serve_command"][0]
    assert writes(gcp) == []


async def test_deploy_defaults_to_a_dry_run_and_creates_nothing(gcp):
    async with client(allow_write=True) as c:
        r = await c.call_tool("deploy", {"profile": PROFILE})
    assert not r.is_error, text(r)
    assert r.structured_content["dry_run"] is True and "nothing was created" in r.content[0].text
    assert writes(gcp) == []


async def test_deploy_applies_only_after_the_user_confirms(gcp):
    asked: list[str] = []
    async with client(allow_write=True, elicitation_callback=answering("decline", asked)) as c:
        r = await c.call_tool("deploy", {"profile": PROFILE, "dry_run": False})
    assert r.is_error and "The user declined; nothing was changed" in text(r)
    assert writes(gcp) == [] and PROFILE in asked[0]
    async with client(allow_write=True, elicitation_callback=answering("accept", asked)) as c:
        r = await c.call_tool("deploy", {"profile": PROFILE, "dry_run": False})
        assert not r.is_error, text(r)
        assert r.structured_content["status"]["exists"] is True
        assert "run.services.create" in writes(gcp)
        # destroy: a dry run first, then the confirmed delete
        dry = await c.call_tool("destroy_deployment", {"profile": PROFILE})
        assert "would be deleted" in dry.structured_content["detail"]
        gone = await c.call_tool("destroy_deployment", {"profile": PROFILE, "dry_run": False})
        assert not gone.is_error, text(gone)
        assert gone.structured_content["action"] == "destroyed"
    assert len(asked) == 3 and "cannot be undone" in asked[-1]


async def test_an_unticked_confirmation_changes_nothing(gcp):
    async def no(context, params):
        return ElicitResult(action="accept", content={"confirm": False})

    async with client(allow_write=True, elicitation_callback=no) as c:
        r = await c.call_tool("destroy_deployment", {"profile": PROFILE, "dry_run": False})
    assert r.is_error and "The user answered no" in text(r) and writes(gcp) == []


async def test_destructive_calls_are_refused_when_the_client_cannot_ask(gcp):
    async with client(allow_write=True) as c:  # no elicitation callback
        r = await c.call_tool("destroy_deployment", {"profile": PROFILE, "dry_run": False})
        assert r.is_error and "cannot ask" in text(r) and "--confirm-fallback allow" in text(r)
        r = await c.call_tool("scale_deployment", {"profile": PROFILE, "max_instances": 2, "dry_run": False})
        assert r.is_error and "cannot ask" in text(r)
    assert writes(gcp) == []


async def test_confirm_fallback_allow_proceeds_without_asking(gcp):
    async with client(allow_write=True, confirm_fallback="allow") as c:
        r = await c.call_tool("deploy", {"profile": PROFILE, "dry_run": False})
        assert not r.is_error, text(r)
        r = await c.call_tool("scale_deployment", {"profile": PROFILE, "max_instances": 3, "dry_run": False})
        assert not r.is_error, text(r)
        assert r.structured_content["action"] == "scaled"


async def test_write_tools_are_unknown_on_a_read_only_server(gcp):
    async with client() as c:
        for name, args in (("deploy", {"profile": PROFILE}), ("destroy_deployment", {"profile": PROFILE}),
                           ("set_hf_token", {})):
            r = await c.call_tool(name, args)
            assert r.is_error and "Unknown tool" in text(r)
    assert writes(gcp) == []


async def test_hf_token_comes_from_the_server_environment_and_never_comes_back(gcp, monkeypatch, isolated, caplog):
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN)
    async with client(allow_write=True) as c:
        r = await c.call_tool("set_hf_token", {"from_env": "HF_TOKEN"})
        assert not r.is_error, text(r)
        assert gcp.state.secret_value("hf-token") == HF_TOKEN.encode()
        assert HF_TOKEN not in text(r) and HF_TOKEN not in str(r.structured_content)
        # only Hugging Face-looking variables and values: no copying other secrets into Secret Manager
        monkeypatch.setenv("HF_OTHER", "not-a-token")
        bad = await c.call_tool("set_hf_token", {"from_env": "HF_OTHER"})
        assert bad.is_error and "does not hold a Hugging Face token" in text(bad)
        bad = await c.call_tool("set_hf_token", {"from_env": "GOOGLE_APPLICATION_CREDENTIALS"})
        assert bad.is_error and "from_env must name" in text(bad)
        unset = await c.call_tool("set_hf_token", {"from_env": "HF_MISSING"})
        assert unset.is_error and "not set" in text(unset)
    assert HF_TOKEN not in caplog.text
    assert not [f for f in isolated.rglob("*") if f.is_file() and HF_TOKEN.encode() in f.read_bytes()]


async def test_cloud_logs_and_analysis_for_a_profile(gcp):
    gcp.state.log_entries = [
        {"logName": "projects/test-proj/logs/run.googleapis.com%2Fstdout", "timestamp": "2026-11-21T09:00:00Z",
         "severity": "ERROR", "textPayload": "ERROR 11-21 09:00:00 [core.py:1] CUDA out of memory",
         "resource": {"type": "cloud_run_revision", "labels": {"service_name": PROFILE}}, "insertId": "1"}]
    async with client() as c:
        logs = await c.call_tool("fetch_logs", {"target": PROFILE, "severity": "WARNING"})
        assert not logs.is_error, text(logs)
        assert "CUDA out of memory" in logs.structured_content["records"][0]["text"]
        analysis = await c.call_tool("analyze_logs", {"target": PROFILE, "ask_target": "nope"})
        assert not analysis.is_error, text(analysis)
        out = analysis.structured_content
        assert out["issue_counts"] and any("GPU memory" in x for x in out["known_causes"])
        assert out["summary"] is None and "could not be asked" in out["note"]


async def test_cloud_errors_become_actionable_tool_errors(gcp):
    from tests.fakes.fake_gcp import api_not_enabled

    gcp.state.fail["compute.regions.list"] = api_not_enabled("compute.googleapis.com")
    gcp.state.fail["compute.acceleratorTypes.aggregatedList"] = api_not_enabled("compute.googleapis.com")
    async with client() as c:
        r = await c.call_tool("find_capacity", {"accelerator": "nvidia-l4", "platforms": ["gce"]})
        assert r.is_error and "compute.googleapis.com" in text(r)
        r = await c.call_tool("get_status", {"target": "tpu-v6e-1-12b"})
        assert r.is_error and "not deployed" in text(r)
