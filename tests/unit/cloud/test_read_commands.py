"""capacity, logs, artifacts, and the CLI faces of deploy: read-only paths and safety of the faces."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from inferctl.cli.app import app

SRC = Path(__file__).resolve().parents[3] / "src" / "inferctl"


def invoke(*args: str, **kw):
    return CliRunner().invoke(app, list(args), **kw)


def test_capacity_gce_and_cloud_run(gcp):
    s = gcp.state
    s.gpu_zones = {"us-central1-a": ["nvidia-l4", "nvidia-tesla-t4"], "us-central1-b": ["nvidia-l4"],
                   "europe-west4-a": ["nvidia-tesla-t4"]}
    s.region_quotas = {"us-central1": [{"metric": "NVIDIA_L4_GPUS", "limit": 8, "usage": 3}]}
    s.quota_infos["run.googleapis.com"] = [{"quotaId": "NvidiaL4GpuAllocNoZonalRedundancyPerProjectRegion",
                                            "dimensionsInfos": [{"dimensions": {"region": "us-east4"},
                                                                 "details": {"value": "2"}}]}]
    result = invoke("capacity", "--accelerator", "nvidia-l4", "--json")
    assert result.exit_code == 0, result.output + (result.stderr or "")
    rows = json.loads(result.output)["rows"]
    gce = next(r for r in rows if r["platform"] == "gce" and r["location"] == "us-central1")
    assert gce["offered"] and gce["quota_limit"] == 8 and gce["available"] == 5
    assert gce["zones"] == ["us-central1-a", "us-central1-b"]
    run = next(r for r in rows if r["platform"] == "cloudrun" and r["location"] == "us-east4")
    assert run["offered"] and run["quota_limit"] == 2
    assert not [r for r in gcp.state.requests if r.method in ("POST", "DELETE", "PATCH")]  # creates nothing


def test_capacity_tpu(gcp):
    gcp.state.tpu_zones = {"us-east5-b": ["v6e-1", "v6e-4"], "us-east5-a": ["v5litepod-4"], "europe-west4-a": []}
    gcp.state.quota_infos["tpu.googleapis.com"] = [{"quotaId": "TPUV6EPerProjectPerZoneForTPUAPI", "dimensionsInfos": [
        {"dimensions": {"zone": "us-east5-b"}, "details": {"value": "8"}}]}]
    result = invoke("capacity", "-a", "v6e", "--regions", "us-east5", "--json")
    assert result.exit_code == 0, result.output + (result.stderr or "")
    rows = {r["location"]: r for r in json.loads(result.output)["rows"]}
    assert set(rows) == {"us-east5-a", "us-east5-b"}
    assert rows["us-east5-b"]["offered"] and rows["us-east5-b"]["available"] == 8
    assert not rows["us-east5-a"]["offered"]


def test_capacity_bad_accelerator_is_one_line(gcp):
    result = invoke("capacity", "-a", "h100")
    assert result.exit_code != 0 and "Unknown accelerator" in result.stderr and "Traceback" not in result.output


def test_capacity_api_not_enabled(gcp):
    from tests.fakes.fake_gcp import api_not_enabled

    gcp.state.tpu_zones = {"us-east5-b": ["v6e-1"]}
    gcp.state.fail["cloudquotas.quotaInfos.list"] = api_not_enabled("cloudquotas.googleapis.com")
    result = invoke("capacity", "-a", "v6e")
    assert result.exit_code != 0
    assert "cloudquotas.googleapis.com is not enabled" in result.stderr and len(result.stderr.splitlines()) == 1


def test_cloud_logs_for_a_profile(gcp):
    gcp.state.log_entries = [
        {"logName": "projects/test-proj/logs/run.googleapis.com%2Fstdout", "timestamp": "2026-11-21T09:00:00Z",
         "severity": "ERROR", "textPayload": "ERROR 11-21 09:00:00 [core.py:1] CUDA out of memory",
         "resource": {"type": "cloud_run_revision", "labels": {"service_name": "cloudrun-l4-12b-qat"}},
         "insertId": "1"}]
    result = invoke("logs", "--target", "cloudrun-l4-12b-qat", "--severity", "warning", "--json")
    assert result.exit_code == 0, result.output + (result.stderr or "")
    out = json.loads(result.output)
    assert out["source"] == "cloud-logging" and "CUDA out of memory" in out["records"][0]["text"]
    sent = gcp.state.sent("logging.entries.list")[0].body
    assert sent["resourceNames"] == ["projects/test-proj"]
    assert 'resource.labels.service_name="cloudrun-l4-12b-qat"' in sent["filter"]
    assert "severity>=WARNING" in sent["filter"] and "timestamp>=" in sent["filter"]


def test_logs_bad_flags(gcp):
    assert "--since must look like" in invoke("logs", "--target", "cloudrun-l4-12b-qat", "--since", "soon").stderr
    assert "--severity must be" in invoke("logs", "--target", "cloudrun-l4-12b-qat", "--severity", "loud").stderr


def test_artifacts(gcp):
    gcp.state.blobs["weights"] = [
        {"name": "google/gemma-4-12b/config.json", "size": "1200", "updated": "2026-11-01T00:00:00Z"},
        {"name": "google/gemma-4-12b/model-00001.safetensors", "size": "5000000000"},
        {"name": "google/gemma-4-12b/model-00002.safetensors", "size": "3000000000"},
        {"name": "README.md", "size": "10"}]
    result = invoke("artifacts", "gs://weights", "--json")
    assert result.exit_code == 0, result.output + (result.stderr or "")
    out = json.loads(result.output)
    assert len(out["artifacts"]) == 4
    assert out["models"] == [{"path": "google/gemma-4-12b", "files": 3, "size_bytes": 8000001200, "weights": 2,
                              "staged": False, "complete": None, "problems": []}]
    assert invoke("artifacts", "weights").exit_code == 0


def test_deploy_dry_run_cli_does_nothing(gcp):
    result = invoke("deploy", "gce-g2-48-31b")
    assert result.exit_code == 0, result.output
    assert "Nothing was created" in result.output and "gcloud compute instances create" in result.output
    assert gcp.state.requests == []
    plan = json.loads(invoke("deploy", "cloudrun-l4-12b-qat", "--json").output)
    assert plan["requests"][0]["method"] == "services.create" and plan["gcloud"]


def test_deploy_apply_needs_confirmation(gcp):
    result = invoke("deploy", "cloudrun-l4-12b-qat", "--apply")
    assert result.exit_code != 0 and "--yes" in result.stderr
    assert gcp.state.requests == []


def test_deploy_apply_yes_waits_with_progress(gcp, fast_poll):
    result = invoke("deploy", "tpu-v6e-1-12b", "--apply", "--yes")
    assert result.exit_code == 0, result.output + (result.stderr or "")
    assert "WAITING_FOR_RESOURCES" in result.stderr and "ACTIVE" in result.stderr
    assert "ready" in result.output


def test_destroy_cli_confirms_and_refuses_unmanaged(gcp):
    name = "projects/test-proj/zones/us-central1-a/instances/gce-g2-48-31b"
    gcp.state.instances[name] = {"name": "gce-g2-48-31b", "status": "RUNNING", "labels": {},
                                 "networkInterfaces": [{}]}
    gcp.state.instance_polls[name] = 0
    assert "--yes" in invoke("destroy", "gce-g2-48-31b").stderr
    result = invoke("destroy", "gce-g2-48-31b", "--yes")
    assert result.exit_code != 0 and "not created by inferctl" in result.stderr
    assert name in gcp.state.instances


def test_profiles_list_and_show():
    out = json.loads(invoke("profiles", "list", "--json").output)
    assert {p["name"] for p in out} >= {"cloudrun-l4-12b-qat", "tpu-v6e-4-26b-moe"}
    shown = json.loads(invoke("profiles", "show", "cloudrun-rtx6000-12b-qat-mtp", "--json").output)
    assert shown["errors"] == [] and "--speculative-config" in shown["serve_command"]


def test_project_missing_is_one_sentence(monkeypatch):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    result = invoke("deploy", "cloudrun-l4-12b-qat")
    assert result.exit_code != 0 and "GOOGLE_CLOUD_PROJECT" in result.stderr and "Traceback" not in result.output


def _cloud_sources() -> list[Path]:
    files = list((SRC / "cloud").glob("*.py")) + list((SRC / "profiles").glob("*.py"))
    files += [SRC / "ops" / n for n in ("deploy.py", "lifecycle.py", "capacity.py", "cloud_secrets.py",
                                        "artifacts.py", "logs.py", "diagnose.py", "profiles.py")]
    files += [SRC / "cli" / n for n in ("deploy.py", "cloud.py", "logs.py")]
    return files


def test_no_subprocess_no_shell_no_eval():
    banned = re.compile(r"\bsubprocess\b|os\.system|os\.popen|shell=True|\beval\(|\bexec\(|create_subprocess")
    for f in _cloud_sources():
        code = f.read_text()
        assert not banned.search(code), f


def test_google_libraries_are_imported_lazily():
    code = ("import sys, inferctl.cli.app, inferctl.config, inferctl.profiles.profile, inferctl.ops.deploy;"
            "bad=[m for m in sys.modules if m.startswith('google.cloud')]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)
