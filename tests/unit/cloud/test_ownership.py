"""Cloud clean-up is complete and touches only our own: destroy deletes exactly what the deploy created (the
resource, its API-key secret, its firewall rule, as recorded on the resource), and destroy / scale refuse a
resource of another profile. Official clients against the fake Google Cloud."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.unit.cloud.conftest import write_config
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.cloud.errors import NotManaged
from inferctl.ops.lifecycle import destroy_deployment, scale_deployment
from inferctl.profiles.profile import load_profile

P = "projects/test-proj"
CONFIG = """
[profiles.tpu-open]
base = "tpu-v6e-1-12b"
allowed_source_ranges = ["203.0.113.0/24"]

[profiles.gce-open]
base = "gce-g2-48-31b"
allowed_source_ranges = ["198.51.100.0/24"]
"""


def deploy(name: str):
    p = load_profile(name).with_project()
    return asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))


def others(gcp) -> None:
    """Resources that are not this deployment's: they must survive every destroy."""
    s = gcp.state
    s.firewalls[f"{P}/global/firewalls/default-allow-ssh"] = {"name": "default-allow-ssh", "description": "ssh"}
    s.secrets[f"{P}/secrets/hf-token"] = {"secret": {"name": f"{P}/secrets/hf-token",
                                                     "labels": {"managed-by": "inferctl"}}, "versions": [b"x"]}
    s.secrets[f"{P}/secrets/team-db"] = {"secret": {"name": f"{P}/secrets/team-db"}, "versions": [b"y"]}


def test_tpu_destroy_deletes_its_firewall_and_api_key_secret_and_the_dry_run_lists_them(gcp, isolated):
    write_config(isolated, CONFIG)
    others(gcp)
    deploy("tpu-open")
    s = gcp.state
    fw, key = f"{P}/global/firewalls/inferctl-tpu-open-8000", f"{P}/secrets/inferctl-tpu-open-api-key"
    assert fw in s.firewalls and key in s.secrets

    dry = asyncio.run(destroy_deployment("tpu-open", dry_run=True))
    qr = f"{P}/locations/us-east5-b/queuedResources/tpu-open"
    assert dry.action == "nothing" and dry.resources == [qr, key, fw]
    assert "would be deleted" in dry.detail and fw in dry.detail and key in dry.detail
    assert qr in s.queued and fw in s.firewalls and key in s.secrets  # a dry run deletes nothing

    done = asyncio.run(destroy_deployment("tpu-open"))
    assert done.action == "destroyed" and done.resources == [qr, key, fw]
    assert qr not in s.queued and fw not in s.firewalls and key not in s.secrets
    assert f"{P}/global/firewalls/default-allow-ssh" in s.firewalls
    assert {f"{P}/secrets/hf-token", f"{P}/secrets/team-db"} <= set(s.secrets)


def test_gce_destroy_deletes_the_recorded_firewall_after_the_profile_dropped_its_ranges(gcp, isolated):
    write_config(isolated, CONFIG)
    deploy("gce-open")
    fw = f"{P}/global/firewalls/inferctl-gce-open-8000"
    assert fw in gcp.state.firewalls
    write_config(isolated, CONFIG.replace('allowed_source_ranges = ["198.51.100.0/24"]', "allowed_source_ranges = []"))
    done = asyncio.run(destroy_deployment("gce-open"))
    assert done.action == "destroyed" and fw in done.resources
    assert fw not in gcp.state.firewalls and f"{P}/secrets/inferctl-gce-open-api-key" not in gcp.state.secrets


def test_a_recorded_resource_that_is_not_ours_any_more_is_kept_and_said(gcp, isolated):
    write_config(isolated, CONFIG)
    deploy("gce-open")
    key = f"{P}/secrets/inferctl-gce-open-api-key"
    gcp.state.secrets[key]["secret"]["labels"] = {"managed-by": "someone-else"}
    fw = f"{P}/global/firewalls/inferctl-gce-open-8000"
    gcp.state.firewalls[fw]["description"] = "hand-edited"
    done = asyncio.run(destroy_deployment("gce-open"))
    assert done.resources == [done.resource_name]  # the VM only
    assert key in gcp.state.secrets and fw in gcp.state.firewalls
    assert len(done.kept) == 2 and "Kept" in done.detail
    assert not gcp.state.sent("secretmanager.secrets.delete") and not gcp.state.sent("compute.firewalls.delete")


def _foreign_service(gcp, labels: dict) -> str:
    name = f"{P}/locations/us-east4/services/cloudrun-l4-12b-qat"
    gcp.state.services[name] = {"name": name, "labels": labels, "reconciling": False,
                                "terminalCondition": {"type": "Ready", "state": "CONDITION_SUCCEEDED"},
                                "template": {"scaling": {"minInstanceCount": 0, "maxInstanceCount": 1}}}
    gcp.state.service_polls[name] = 0
    return name


@pytest.mark.parametrize("labels, words", [
    ({"managed-by": "inferctl", "inferctl-profile": "other-profile"}, "belongs to profile 'other-profile'"),
    ({"managed-by": "inferctl"}, "no inferctl-profile label"),
])
def test_destroy_and_scale_refuse_another_profiles_resource(gcp, labels, words):
    name = _foreign_service(gcp, labels)
    with pytest.raises(NotManaged, match=words):
        asyncio.run(destroy_deployment("cloudrun-l4-12b-qat"))
    with pytest.raises(NotManaged, match=words):
        asyncio.run(scale_deployment("cloudrun-l4-12b-qat", max_instances=3))
    dry = asyncio.run(destroy_deployment("cloudrun-l4-12b-qat", dry_run=True))
    assert "REFUSED" in dry.detail and words in dry.detail
    assert name in gcp.state.services and not gcp.state.sent("run.services.delete")
    assert not gcp.state.sent("run.services.patch")


def test_cli_destroy_dry_run_lists_everything_and_deletes_nothing(gcp, isolated):
    write_config(isolated, CONFIG)
    deploy("tpu-open")
    r = CliRunner().invoke(app, ["destroy", "tpu-open", "--dry-run", "--json"])
    assert r.exit_code == 0, r.output + (r.stderr or "")
    out = json.loads(r.output)
    assert len(out["resources"]) == 3 and out["action"] == "nothing"
    assert not gcp.state.sent("tpu.queuedResources.delete")
