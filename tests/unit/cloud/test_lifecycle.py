"""describe, destroy and scale: only the named resource, and only what inferctl created unless forced."""

from __future__ import annotations

import asyncio

import pytest

from inferctl.cloud.clients import CloudContext
from inferctl.cloud.deploy import apply_plan, build_plan
from inferctl.cloud.errors import NotManaged
from inferctl.errors import ConfigError
from inferctl.ops.lifecycle import describe_deployment, destroy_deployment, scale_deployment
from inferctl.profiles.profile import load_profile


def deploy(name: str):
    p = load_profile(name).with_project()
    return asyncio.run(apply_plan(CloudContext(p.project), build_plan(p), p, poll=0.01, timeout=20))


def test_describe_absent_then_ready(gcp):
    st = asyncio.run(describe_deployment("cloudrun-l4-12b-qat"))
    assert not st.exists and st.phase == "absent"
    deploy("cloudrun-l4-12b-qat")
    st = asyncio.run(describe_deployment("cloudrun-l4-12b-qat"))
    assert st.phase == "ready" and st.managed and st.authenticated
    assert st.url == "https://cloudrun-l4-12b-qat-123456789012.us-east4.run.app"
    assert st.revision and st.accelerator == "1x nvidia-l4" and st.max_instances == 1


def test_destroy_refuses_what_inferctl_did_not_create(gcp):
    name = "projects/test-proj/locations/us-east4/services/cloudrun-l4-12b-qat"
    gcp.state.services[name] = {"name": name, "labels": {"team": "other"}, "reconciling": False,
                                "terminalCondition": {"type": "Ready", "state": "CONDITION_SUCCEEDED"}}
    gcp.state.service_polls[name] = 0
    with pytest.raises(NotManaged, match="not created by inferctl.*--force"):
        asyncio.run(destroy_deployment("cloudrun-l4-12b-qat"))
    assert name in gcp.state.services and not gcp.state.sent("run.services.delete")
    result = asyncio.run(destroy_deployment("cloudrun-l4-12b-qat", force=True))
    assert result.action == "destroyed" and name not in gcp.state.services


def test_destroy_touches_only_its_own_queued_resource(gcp):
    other = "projects/test-proj/locations/us-east5-b/queuedResources/someone-elses"
    gcp.state.queued[other] = {"name": other, "tpu": {"nodeSpec": []}, "state": {"state": "ACTIVE"}}
    deploy("tpu-v6e-1-12b")
    result = asyncio.run(destroy_deployment("tpu-v6e-1-12b"))
    assert result.action == "destroyed"
    deletes = gcp.state.sent("tpu.queuedResources.delete")
    assert len(deletes) == 1 and deletes[0].path.endswith("/queuedResources/tpu-v6e-1-12b")
    assert deletes[0].query.get("force") == "true"
    assert other in gcp.state.queued
    assert not gcp.state.sent("tpu.queuedResources.list")  # never lists-and-deletes


def test_destroy_absent_is_nothing(gcp):
    assert asyncio.run(destroy_deployment("gce-g2-48-31b")).action == "nothing"


def test_scale_cloud_run(gcp):
    deploy("cloudrun-l4-12b-qat")
    result = asyncio.run(scale_deployment("cloudrun-l4-12b-qat", min_instances=1, max_instances=3))
    assert result.action == "scaled"
    patch = gcp.state.sent("run.services.patch")[-1].body
    assert patch["template"]["scaling"] == {"minInstanceCount": 1, "maxInstanceCount": 3}
    assert patch["labels"]["managed-by"] == "inferctl"


def test_scale_vm_machine_type(gcp):
    deploy("gce-g2-48-31b")
    result = asyncio.run(scale_deployment("gce-g2-48-31b", machine_type="g2-standard-96"))
    assert result.status.machine_type == "g2-standard-96"
    verbs = [r.path.rsplit("/", 1)[-1] for r in gcp.state.sent("compute.instances.action")]
    assert verbs == ["stop", "setMachineType", "start"]


@pytest.mark.parametrize("name,kw,words", [
    ("tpu-v6e-1-12b", {"machine_type": "x"}, "cannot be resized"),
    ("cloudrun-l4-12b-qat", {}, "--min-instances"),
    ("cloudrun-l4-12b-qat", {"machine_type": "g2-standard-8"}, "for GCE profiles"),
    ("gce-g2-48-31b", {"min_instances": 1}, "--machine-type"),
])
def test_scale_bad_input(gcp, name, kw, words):
    with pytest.raises(ConfigError, match=words):
        asyncio.run(scale_deployment(name, **kw))
