"""One builder: the dry run makes no call, and apply sends exactly what the dry run printed."""

from __future__ import annotations

import asyncio
import base64
import json
import shlex

import pytest
from tests.fakes import fake_gcp

from inferctl.cloud import errors as cerr
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.cloud.requests import GENERATED
from inferctl.profiles.profile import load_profile

RANGES = ["203.0.113.0/24"]


def profile(name: str, **update):
    p = load_profile(name)
    if p.platform != "cloudrun":
        update.setdefault("allowed_source_ranges", RANGES)
    return p.model_copy(update=update).with_project()


def _message_cls(method: str):
    from google.cloud import compute_v1, run_v2, secretmanager_v1, tpu_v2

    return {"services.create": run_v2.Service, "queuedResources.create": tpu_v2.QueuedResource,
            "instances.insert": compute_v1.Instance, "firewalls.insert": compute_v1.Firewall,
            "secrets.create": secretmanager_v1.Secret}.get(method)


def test_dry_run_needs_no_credentials_and_makes_no_call(monkeypatch, gcp):
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/key.json")
    for name in ("cloudrun-l4-12b-qat", "gce-g2-48-31b", "tpu-v6e-4-26b-moe"):
        plan = build_plan(profile(name))
        assert plan.requests and plan.gcloud
    assert gcp.state.requests == []


def test_dry_run_carries_the_planner_fit_check(tmp_path):
    """The fit check moved from the profile checks to ops (profiles sit below the planner); deploy still runs it."""
    from tests.unit.cloud.conftest import write_config

    from inferctl.errors import ConfigError
    from inferctl.ops.deploy import plan_deployment

    assert plan_deployment("cloudrun-l4-12b-qat").fit.startswith("fits")
    write_config(tmp_path, '[profiles.too-big]\nbase = "cloudrun-l4-12b-qat"\n'
                           'model.hf_repo = "google/gemma-4-31B-it"\n')
    with pytest.raises(ConfigError, match="does not fit"):
        plan_deployment("too-big")


@pytest.mark.parametrize("name", ["cloudrun-l4-12b-qat", "cloudrun-rtx6000-12b-qat-mtp", "gce-g2-48-31b",
                                  "tpu-v6e-1-12b", "tpu-v6e-4-26b-moe"])
def test_plan_bodies_are_valid_api_messages(name):
    for req in build_plan(profile(name)).requests:
        cls = _message_cls(req.method)
        if cls is not None:  # unknown fields raise: the plan speaks the real schema
            cls.from_json(json.dumps(req.body), ignore_unknown_fields=False)


def test_cloud_run_requires_authentication_by_default():
    plan = build_plan(profile("cloudrun-l4-12b-qat"))
    body = plan.requests[0].body
    assert "invokerIamDisabled" not in body
    assert "--no-allow-unauthenticated" in plan.gcloud[0] and "--allow-unauthenticated " not in plan.gcloud[0]
    open_plan = build_plan(profile("cloudrun-l4-12b-qat", allow_unauthenticated=True))
    assert open_plan.requests[0].body["invokerIamDisabled"] is True
    assert any("anyone on the internet" in w for w in open_plan.warnings)


def test_everything_created_is_labelled():
    for name in ("cloudrun-l4-12b-qat", "gce-g2-48-31b", "tpu-v6e-1-12b"):
        for req in build_plan(profile(name)).requests:
            body = req.body or {}
            labels = (body.get("labels") or body.get("tpu", {}).get("nodeSpec", [{}])[0].get("node", {}).get("labels")
                      or {})
            if req.method in ("services.create", "instances.insert", "queuedResources.create", "secrets.create"):
                assert labels.get("managed-by") == "inferctl", req.method


def test_hf_token_is_a_secret_reference_on_cloud_run():
    env = build_plan(profile("cloudrun-l4-12b-qat")).requests[0].body["template"]["containers"][0]["env"]
    hf = next(e for e in env if e["name"] == "HF_TOKEN")
    assert hf == {"name": "HF_TOKEN", "valueSource": {"secretKeyRef": {"secret": "hf-token", "version": "latest"}}}


def test_startup_script_reads_secrets_at_boot_and_quotes_args():
    plan = build_plan(profile("tpu-v6e-1-12b"))
    qr = next(r for r in plan.requests if r.method == "queuedResources.create").body
    script = qr["tpu"]["nodeSpec"][0]["node"]["metadata"]["startup-script"]
    assert "fetch_secret HF_TOKEN hf-token" in script and "secretmanager.googleapis.com" in script
    assert "HF_TOKEN=hf_" not in script and "set +x" in script
    docker = script.strip().splitlines()[-1]
    argv = shlex.split(docker)
    assert argv[:2] == ["docker", "run"] and "-e" in argv and "HF_TOKEN" in argv  # copied from env, no value
    assert "vllm/vllm-tpu:v0.26.0" in argv  # the pinned image


def test_no_firewall_without_ranges_and_never_world_open():
    plan = build_plan(load_profile("gce-g2-48-31b").with_project())
    assert not [r for r in plan.requests if r.method == "firewalls.insert"]
    assert any("No allowed_source_ranges" in w for w in plan.warnings)
    fw = next(r for r in build_plan(profile("gce-g2-48-31b")).requests if r.method == "firewalls.insert").body
    assert fw["sourceRanges"] == RANGES and fw["targetTags"]
    with pytest.raises(Exception, match="whole internet"):
        build_plan(profile("gce-g2-48-31b", allowed_source_ranges=["0.0.0.0/0"]))


def _apply(p, **kw):
    ctx = CloudContext(p.project)
    seen: list[str] = []
    plan = build_plan(p)
    status = asyncio.run(apply_plan(ctx, plan, p, progress=seen.append, poll=0.01, timeout=20, **kw))
    return plan, status, seen


@pytest.mark.parametrize("name,key", [
    ("cloudrun-l4-12b-qat", "run.services.create"),
    ("cloudrun-rtx6000-12b-qat-mtp", "run.services.create"),
    ("gce-g2-48-31b", "compute.instances.insert"),
    ("tpu-v6e-1-12b", "tpu.queuedResources.create"),
    ("tpu-v6e-4-26b-moe", "tpu.queuedResources.create"),
])
def test_apply_sends_exactly_the_dry_run(gcp, name, key):
    p = profile(name)
    plan, status, progress = _apply(p)
    assert status.phase == "ready" and status.managed
    sent = {r.key: r for r in gcp.state.requests}
    for req in plan.requests:
        cls = _message_cls(req.method)
        wire_key = {"services.create": "run.services.create", "instances.insert": "compute.instances.insert",
                    "firewalls.insert": "compute.firewalls.insert", "secrets.create": "secretmanager.secrets.create",
                    "queuedResources.create": "tpu.queuedResources.create",
                    "secrets.addVersion": "secretmanager.secrets.addVersion"}[req.method]
        got = sent[wire_key]
        if req.id_param:
            assert got.query[req.id_param] == req.resource_id
        assert got.path.endswith(req.path)
        if cls is not None:
            assert cls.from_json(got.raw) == cls.from_json(json.dumps(req.body)), req.method
        else:  # the API key: generated at apply, never in the plan
            assert req.body == {"payload": {"data": GENERATED}}
            assert base64.b64decode(got.body["payload"]["data"])
    assert key in sent
    assert progress and any("POST" in line for line in progress)


def test_tpu_wait_reports_the_state_progression(gcp):
    _, status, progress = _apply(profile("tpu-v6e-4-26b-moe", network_access="external"))
    text = "\n".join(progress)
    for state in ("ACCEPTED", "WAITING_FOR_RESOURCES", "PROVISIONING", "ACTIVE"):
        assert state in text
    assert status.url == "http://198.51.100.7:8000"


def test_tpu_zone_exhausted_is_a_clear_error(gcp):
    gcp.state.qr_failure = "There is no more capacity in the zone \"us-east5-b\"; resources exhausted."
    with pytest.raises(cerr.ZoneExhausted, match="no v6e-1 capacity.*inferctl capacity"):
        _apply(profile("tpu-v6e-1-12b"))


def test_cloud_run_revision_failure_carries_the_reason(gcp):
    gcp.state.service_failure = "The user-provided container failed the configured startup probe checks."
    with pytest.raises(cerr.DeployFailed, match="startup probe"):
        _apply(profile("cloudrun-l4-12b-qat"))


@pytest.mark.parametrize("failure,exc,words", [
    (fake_gcp.api_not_enabled("run.googleapis.com"), cerr.ApiNotEnabled, "run.googleapis.com is not enabled"),
    (fake_gcp.permission_denied(), cerr.PermissionDenied, "IAM role"),
    (fake_gcp.quota_exceeded(), cerr.QuotaExceeded, "inferctl capacity"),
    (fake_gcp.already_exists(), cerr.AlreadyExists, "already exists"),
])
def test_api_errors_become_one_sentence(gcp, failure, exc, words):
    gcp.state.fail["run.services.create"] = failure
    with pytest.raises(exc, match=words) as info:
        _apply(profile("cloudrun-l4-12b-qat"))
    assert "\n" not in str(info.value)


def test_transient_errors_are_retried(gcp):
    gcp.state.fail["run.services.create"] = fake_gcp.unavailable(times=2)
    _, status, _ = _apply(profile("cloudrun-l4-12b-qat"))
    assert status.phase == "ready"
    assert len(gcp.state.sent("run.services.create")) == 3


def test_existing_api_key_secret_is_kept(gcp):
    gcp.state.secrets["projects/test-proj/secrets/inferctl-gce-g2-48-31b-api-key"] = {
        "secret": {}, "versions": [b"old-key"]}
    _apply(profile("gce-g2-48-31b"))
    assert gcp.state.secret_value("inferctl-gce-g2-48-31b-api-key") == b"old-key"
    assert not gcp.state.sent("secretmanager.secrets.addVersion")
