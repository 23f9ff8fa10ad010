"""stop / start: stop paying without destroying, only what inferctl created for this profile."""

from __future__ import annotations

import asyncio

import pytest
from tests.fakes.fake_gcp import Failure
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.cloud.errors import CloudError, NotManaged
from inferctl.ops.lifecycle import power_deployment
from inferctl.profiles.profile import load_profile

VM = "projects/test-proj/zones/us-central1-a/instances/gce-g2-48-31b"


def deploy(name: str):
    p = load_profile(name).with_project()
    return asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_vm_stop_start_round_trip_keeps_the_vm_and_its_disk(gcp, fast_poll):
    deploy("gce-g2-48-31b")
    disks = gcp.state.instances[VM]["disks"]
    dry = invoke("stop", "gce-g2-48-31b", "--dry-run")
    assert dry.exit_code == 0 and "Dry run: would stop the VM" in dry.output
    assert not gcp.state.sent("compute.instances.action")
    no = invoke("stop", "gce-g2-48-31b")  # not a terminal and no --yes: refused
    assert no.exit_code == 2 and "--yes" in no.stderr and gcp.state.instances[VM]["status"] == "RUNNING"
    stopped = invoke("stop", "gce-g2-48-31b", "--yes")
    assert stopped.exit_code == 0, stopped.output + (stopped.stderr or "")
    assert "boot disk and cached weights are kept" in stopped.output
    assert gcp.state.instances[VM]["status"] == "TERMINATED" and gcp.state.instances[VM]["disks"] == disks
    again = invoke("stop", "gce-g2-48-31b", "--yes")
    assert again.exit_code == 0 and "already stopped" in again.output
    started = invoke("start", "gce-g2-48-31b", "--yes")
    assert started.exit_code == 0 and gcp.state.instances[VM]["status"] == "RUNNING"
    verbs = [r.path.rsplit("/", 1)[-1] for r in gcp.state.sent("compute.instances.action")]
    assert verbs == ["stop", "start"]
    assert not gcp.state.sent("compute.instances.delete")


def test_stop_refuses_what_inferctl_did_not_create(gcp):
    gcp.state.instances[VM] = {"name": "gce-g2-48-31b", "status": "RUNNING", "labels": {"team": "x"},
                               "networkInterfaces": [{}],
                               "machineType": "zones/us-central1-a/machineTypes/g2-standard-48"}
    gcp.state.instance_polls[VM] = 0
    with pytest.raises(NotManaged, match="not created by inferctl"):
        asyncio.run(power_deployment("gce-g2-48-31b", "stop"))
    assert not gcp.state.sent("compute.instances.action") and gcp.state.instances[VM]["status"] == "RUNNING"


def test_cloud_run_stop_is_min_zero_and_start_restores_the_profile_min(gcp, fast_poll, tmp_path):
    (tmp_path / "config.toml").write_text('[profiles.warm-run]\nbase = "cloudrun-l4-12b-qat"\n'
                                          '[profiles.warm-run.scaling]\nmin_instances = 1\n', encoding="utf-8")
    deploy("warm-run")
    r = asyncio.run(power_deployment("warm-run", "stop"))
    assert r.action == "stopped" and r.status.min_instances == 0
    assert "minInstanceCount" not in gcp.state.sent("run.services.patch")[-1].body["template"]["scaling"]  # 0
    again = asyncio.run(power_deployment("warm-run", "stop"))
    assert again.action == "nothing" and "only while it serves" in again.detail
    r = asyncio.run(power_deployment("warm-run", "start"))
    assert r.action == "started" and r.status.min_instances == 1
    assert gcp.state.sent("run.services.patch")[-1].body["template"]["scaling"]["minInstanceCount"] == 1
    assert not gcp.state.sent("run.services.delete")


def test_tpu_node_stop_start_and_a_refusal_in_one_sentence(gcp, fast_poll):
    deploy("tpu-v6e-1-12b")
    node = "projects/test-proj/locations/us-east5-b/nodes/tpu-v6e-1-12b-node"
    r = asyncio.run(power_deployment("tpu-v6e-1-12b", "stop"))
    assert r.action == "stopped" and gcp.state.nodes[node]["state"] == "STOPPED" and r.status.phase == "stopped"
    r = asyncio.run(power_deployment("tpu-v6e-1-12b", "start"))
    assert r.action == "started" and gcp.state.nodes[node]["state"] == "READY" and r.status.phase == "ready"
    gcp.state.tpu_stop_refusal = Failure(400, "FAILED_PRECONDITION", "Stopping is not supported for this node.")
    with pytest.raises(CloudError, match=r"would not stop .*inferctl destroy tpu-v6e-1-12b"):
        asyncio.run(power_deployment("tpu-v6e-1-12b", "stop"))
    assert gcp.state.nodes[node]["state"] == "READY"


def test_stop_of_nothing_says_so(gcp):
    r = invoke("stop", "gce-g2-48-31b", "--yes")
    assert r.exit_code != 0 and "does not exist" in r.stderr and "Traceback" not in r.output
