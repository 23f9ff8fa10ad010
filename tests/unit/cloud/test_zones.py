"""deploy --zones: the order and why (dry run), fallback after a stockout or quota refusal with clean-up of what
this deploy left in the refusing zone, a queued TPU left waiting, and nothing left behind when no zone says yes."""

from __future__ import annotations

import asyncio
import json

from tests.fakes.fake_gcp import (
    gce_quota_op,
    gce_stockout_503,
    gce_stockout_op,
    quota_exceeded,
    tpu_no_capacity,
)
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.cloud.errors import ZoneExhausted
from inferctl.ops.deploy import apply_in_zones, plan_zoned_deployment
from inferctl.profiles.profile import load_profile

CREATES = ("tpu.queuedResources.create", "compute.instances.insert", "run.services.create",
           "secretmanager.secrets.create", "compute.firewalls.insert")


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def tpu_capacity(state) -> None:
    state.tpu_zones = {"us-east5-b": ["v6e-1", "v6e-4"], "us-east5-a": ["v6e-1"], "europe-west4-a": ["v6e-4"],
                       "us-central1-b": ["v6e-4"], "asia-east1-c": ["v6e-4"]}
    dims = [("us-east5-b", "8"), ("europe-west4-a", "16"), ("us-central1-b", "2"), ("asia-east1-c", "4")]
    state.quota_infos["tpu.googleapis.com"] = [{"quotaId": "TPUV6EPerProjectPerZoneForTPUAPI", "dimensionsInfos": [
        {"dimensions": {"zone": z}, "details": {"value": v}} for z, v in dims]}]


def test_dry_run_shows_the_zone_order_and_why_and_creates_nothing(gcp):
    tpu_capacity(gcp.state)
    result = invoke("deploy", "tpu-v6e-4-26b-moe", "--zones", "auto")
    assert result.exit_code == 0, result.output + (result.stderr or "")
    out = result.output
    order = [line.split()[1] for line in out.splitlines() if line.strip()[:2] in ("1.", "2.", "3.", "4.")
             and "-" in line.split()[1]][:3]
    # the profile's own zone first, then by quota left; us-central1-b has 2 chips of quota (< 4), us-east5-a no v6e-4
    assert order == ["us-east5-b", "europe-west4-a", "asia-east1-c"], out
    assert "the profile's own location" in out and "quota left 16 chips" in out
    assert "us-central1-b" not in out.split("Zone order")[1].split("POST")[0]
    assert "Nothing was created" in out
    assert not [r for r in gcp.state.requests if r.key in CREATES]
    plan = json.loads(invoke("deploy", "tpu-v6e-4-26b-moe", "--zones", "auto", "--json").output)
    assert [z["location"] for z in plan["zones"]] == ["us-east5-b", "europe-west4-a", "asia-east1-c"]


def test_a_given_zone_list_keeps_its_order_and_the_plan_is_for_the_first(gcp):
    plan = asyncio.run(plan_zoned_deployment("tpu-v6e-4-26b-moe", "europe-west4-a,us-east5-b"))
    assert [z.location for z in plan.zones] == ["europe-west4-a", "us-east5-b"]
    assert plan.location == "europe-west4-a" and "/locations/europe-west4-a" in plan.requests[-1].parent
    bad = invoke("deploy", "tpu-v6e-4-26b-moe", "--zones", "us-east5")
    assert bad.exit_code != 0 and "not a zone" in bad.stderr and "Traceback" not in bad.output
    bad = invoke("deploy", "tpu-v6e-4-26b-moe", "--zones", "us east;rm")
    assert bad.exit_code != 0 and "--zones takes 'auto'" in bad.stderr


def test_tpu_stockout_moves_on_and_deletes_only_its_failed_request(gcp, fast_poll):
    s = gcp.state
    s.qr_zone_failure["us-east5-b"] = tpu_no_capacity("us-east5-b")
    foreign = "projects/test-proj/locations/us-east5-b/queuedResources/someone-elses"
    s.queued[foreign] = {"name": foreign, "tpu": {"nodeSpec": []}, "state": {"state": "FAILED"}}
    plan = asyncio.run(plan_zoned_deployment("tpu-v6e-4-26b-moe", "us-east5-b,europe-west4-a"))
    r = asyncio.run(apply_in_zones(plan, poll=0.01, timeout=20))
    assert [a.outcome for a in r.attempts] == ["stockout", "ready"]
    assert "no more capacity" in r.attempts[0].detail.lower() or "no v6e-4 capacity" in r.attempts[0].detail
    mine_b = "projects/test-proj/locations/us-east5-b/queuedResources/tpu-v6e-4-26b-moe"
    assert r.attempts[0].cleaned == [mine_b] and mine_b not in s.queued
    assert foreign in s.queued  # never touched
    deletes = [x.path for x in s.sent("tpu.queuedResources.delete")]
    assert deletes == ["/v2/" + mine_b]
    assert r.location == "europe-west4-a" and r.status.phase == "ready"
    assert "projects/test-proj/locations/europe-west4-a/queuedResources/tpu-v6e-4-26b-moe" in s.queued
    # the API-key secret was created once and kept for the zone that worked
    assert len([x for x in s.sent("secretmanager.secrets.create") if x.query["secretId"].endswith("api-key")]) == 2
    assert "projects/test-proj/secrets/inferctl-tpu-v6e-4-26b-moe-api-key" in s.secrets


def test_a_queued_tpu_request_is_left_waiting_not_retried_elsewhere(gcp, fast_poll):
    s = gcp.state
    s.qr_zone_hold.add("us-east5-b")
    plan = asyncio.run(plan_zoned_deployment("tpu-v6e-4-26b-moe", "us-east5-b,europe-west4-a"))
    r = asyncio.run(apply_in_zones(plan, poll=0.01, timeout=0.5))
    assert [a.outcome for a in r.attempts] == ["waiting"]
    assert r.location == "us-east5-b" and r.status.state == "WAITING_FOR_RESOURCES"
    assert "not retried elsewhere" in r.detail and "queue position" in r.detail
    creates = s.sent("tpu.queuedResources.create")
    assert len(creates) == 1 and "/locations/us-east5-b/" in creates[0].path
    assert not s.sent("tpu.queuedResources.delete")


def test_gce_stockout_at_insert_and_in_the_operation_both_move_on(gcp, fast_poll):
    s = gcp.state
    s.vm_zone_refusal["us-central1-a"] = gce_stockout_503("test-proj", "us-central1-a")
    s.vm_zone_refusal["us-central1-b"] = gce_stockout_op("test-proj", "us-central1-b")
    plan = asyncio.run(plan_zoned_deployment("gce-g2-48-31b", "us-central1-a,us-central1-b,us-central1-c"))
    r = asyncio.run(apply_in_zones(plan, poll=0.01, timeout=20))
    assert [a.outcome for a in r.attempts] == ["stockout", "stockout", "ready"]
    assert "ZONE_RESOURCE_POOL_EXHAUSTED" in r.attempts[1].detail
    inserts = [x.path.split("/")[6] for x in s.sent("compute.instances.insert")]
    assert inserts == ["us-central1-a", "us-central1-b", "us-central1-c"]  # the 503 stockout is not retried
    assert list(s.instances) == ["projects/test-proj/zones/us-central1-c/instances/gce-g2-48-31b"]


def test_a_single_zone_vm_whose_insert_operation_fails_says_so(gcp, fast_poll):
    """Regression: the error of a polled Compute operation was ignored, and deploy waited for a VM that never
    existed."""
    gcp.state.vm_zone_refusal["us-central1-a"] = gce_stockout_op("test-proj", "us-central1-a")
    p = load_profile("gce-g2-48-31b").with_project()
    try:
        asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=5))
    except ZoneExhausted as exc:
        assert "us-central1-a" in str(exc) and "another zone" in str(exc)
    else:
        raise AssertionError("no ZoneExhausted")


def test_quota_everywhere_leaves_nothing_behind(gcp, fast_poll):
    s = gcp.state
    s.secrets["projects/test-proj/secrets/hf-token"] = {"secret": {"name": "projects/test-proj/secrets/hf-token"},
                                                      "versions": [b"x"]}
    for z in ("us-central1-a", "us-central1-b"):
        s.vm_zone_refusal[z] = gce_quota_op("us-central1")
    result = invoke("deploy", "gce-g2-48-31b", "--zones", "us-central1-a,us-central1-b", "--apply", "--yes")
    assert result.exit_code == 1, result.output
    assert "quota" in result.output and "No location had capacity" in result.output
    assert not s.instances
    assert "projects/test-proj/secrets/inferctl-gce-g2-48-31b-api-key" not in s.secrets  # created here: deleted
    assert "projects/test-proj/secrets/hf-token" in s.secrets  # not ours: kept


def test_cloud_run_quota_in_one_region_moves_to_the_next(gcp, fast_poll):
    gcp.state.run_region_refusal["us-east4"] = quota_exceeded()
    plan = asyncio.run(plan_zoned_deployment("cloudrun-l4-12b-qat", "us-east4,europe-west1"))
    r = asyncio.run(apply_in_zones(plan, poll=0.01, timeout=20))
    assert [a.outcome for a in r.attempts] == ["quota", "ready"] and r.location == "europe-west1"
    assert list(gcp.state.services) == ["projects/test-proj/locations/europe-west1/services/cloudrun-l4-12b-qat"]
