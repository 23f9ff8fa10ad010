"""deployments: every accelerator resource in the project across Cloud Run, GCE and TPU, with the catalog's hourly
price and a month-to-date estimate; what inferctl did not create is shown only when asked and never modified."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from typer.testing import CliRunner

from inferctl.catalog.prices import price_per_hour
from inferctl.cli.app import app
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.ops.deployments import list_deployments
from inferctl.profiles.profile import load_profile

NOW = datetime(2026, 11, 22, 18, 0, tzinfo=UTC)
FOREIGN_VM = "projects/test-proj/zones/europe-west4-a/instances/someones-a100"
FOREIGN_NODE = "projects/test-proj/locations/us-east5-b/nodes/hand-made-v6e"


def deploy(name: str):
    p = load_profile(name).with_project()
    return asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))


def populate(gcp) -> None:
    for name in ("gce-g2-48-31b", "tpu-v6e-1-12b", "cloudrun-l4-12b-qat"):
        deploy(name)
    s = gcp.state
    s.instances[FOREIGN_VM] = {"name": "someones-a100", "status": "RUNNING", "labels": {"team": "research"},
                               "machineType": "zones/europe-west4-a/machineTypes/a2-highgpu-1g",
                               "creationTimestamp": "2026-11-01T00:00:00.000-07:00"}
    s.instances["projects/test-proj/zones/europe-west4-a/instances/web"] = {
        "name": "web", "status": "RUNNING", "machineType": "zones/europe-west4-a/machineTypes/e2-standard-2"}
    s.nodes[FOREIGN_NODE] = {"name": FOREIGN_NODE, "acceleratorType": "v6e-8", "state": "READY",
                             "createTime": "2026-11-21T06:00:00Z"}


def test_managed_resources_with_catalog_prices_and_month_to_date(gcp, fast_poll):
    populate(gcp)
    before = len(gcp.state.requests)
    d = asyncio.run(list_deployments(now=NOW))
    assert not any(r.method != "GET" for r in gcp.state.requests[before:])  # read-only
    by_kind = {row.resource.kind: row for row in d.rows}
    assert set(by_kind) == {"gce-instance", "tpu-queued-resource", "cloudrun-service"}
    assert all(row.resource.managed for row in d.rows)
    vm = by_kind["gce-instance"]
    assert vm.resource.accelerator == "nvidia-l4" and vm.resource.accelerator_count == 4
    assert vm.usd_per_hour == price_per_hour("gce-g2-standard-48")
    started = datetime.fromisoformat(gcp.state.now)
    hours = (NOW - started).total_seconds() / 3600
    assert vm.month_to_date_usd == round(vm.usd_per_hour * hours, 2) and "last start" in vm.cost_basis
    tpu = by_kind["tpu-queued-resource"]
    assert tpu.resource.state == "ACTIVE" and tpu.resource.spot  # the profile asks for spot: priced as spot
    assert tpu.usd_per_hour == price_per_hour("tpu-v6e-1", "spot")
    run = by_kind["cloudrun-service"]  # min instances 0: billed only while serving
    assert run.resource.running is False and run.month_to_date_usd is None and run.usd_per_hour > 0
    assert d.running == 2
    assert any("did not create are not shown" in n for n in d.notes)


def test_unmanaged_accelerators_are_shown_and_never_touched(gcp, fast_poll):
    populate(gcp)
    before = len(gcp.state.requests)
    d = asyncio.run(list_deployments(now=NOW, unmanaged=True))
    foreign = {row.resource.name: row for row in d.rows if not row.resource.managed}
    assert set(foreign) == {FOREIGN_VM, FOREIGN_NODE}  # the e2 web server has no accelerator: not listed
    assert foreign[FOREIGN_VM].resource.accelerator_count == 1 and foreign[FOREIGN_VM].price_key == \
        "gce-a2-highgpu-1g"
    assert foreign[FOREIGN_NODE].resource.kind == "tpu-node"
    assert not any(r.method != "GET" for r in gcp.state.requests[before:])
    assert gcp.state.instances[FOREIGN_VM]["status"] == "RUNNING"


def test_cli_json_and_exit_code_for_a_cron_job(gcp, fast_poll):
    runner = CliRunner()
    empty = runner.invoke(app, ["deployments", "--exit-code", "--json"])
    assert empty.exit_code == 0, empty.output + (empty.stderr or "")
    assert json.loads(empty.output)["running"] == 0
    populate(gcp)
    out = runner.invoke(app, ["deployments", "--exit-code", "--json", "--unmanaged"])
    assert out.exit_code == 3, out.output
    data = json.loads(out.output)
    assert data["running"] == 4 and data["unmanaged_included"] is True
    table = runner.invoke(app, ["deployments", "--unmanaged"], env={"COLUMNS": "220"})
    assert table.exit_code == 0 and "NO (not touched)" in table.output and "so far this month" in table.output


def test_a_resource_the_catalog_cannot_price_says_so(gcp, fast_poll):
    gcp.state.instances["projects/test-proj/zones/us-central1-a/instances/odd"] = {
        "name": "odd", "status": "RUNNING", "labels": {"managed-by": "inferctl"},
        "machineType": "zones/us-central1-a/machineTypes/n1-standard-8",
        "guestAccelerators": [{"acceleratorType": "zones/us-central1-a/acceleratorTypes/nvidia-tesla-t4",
                               "acceleratorCount": 2}]}
    d = asyncio.run(list_deployments(now=NOW))
    row = d.rows[0]
    assert row.usd_per_hour is None and row.month_to_date_usd is None
    assert "no catalog price for gce-n1-standard-8" in row.cost_basis


def test_all_regions_lists_every_region_and_zone(gcp, fast_poll):
    gcp.state.tpu_zones = {"asia-east1-c": ["v6e-4"]}
    asyncio.run(list_deployments(all_regions=True, now=NOW))
    assert gcp.state.sent("compute.regions.list")
    assert [r.path for r in gcp.state.sent("tpu.queuedResources.list")] == \
        ["/v2/projects/test-proj/locations/asia-east1-c/queuedResources"]
