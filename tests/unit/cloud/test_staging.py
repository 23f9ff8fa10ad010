"""artifacts stage: the plan (a Cloud Run Job whose requests carry no secret value), the run against the fake
(Cloud Run Jobs executing the real copier against a local hub), the check, and `artifacts` showing completeness."""

from __future__ import annotations

import asyncio
import json

import pytest
from tests.fakes.fake_hub import FakeHub, HubState
from tests.unit.cloud.conftest import HF_TOKEN
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.cloud.clients import CloudContext
from inferctl.cloud.errors import DeployFailed
from inferctl.cloud.hf_copy import MANIFEST, copy_repo
from inferctl.cloud.staging import program
from inferctl.ops.staging import apply_staging, plan_staging

REPO = "google/gemma-4-12b-it"
FILES = {"config.json": b'{"architectures": ["Gemma3ForCausalLM"]}',
         "model.safetensors.index.json": b'{"weight_map": {"a": "model-00001-of-00002.safetensors"}}',
         "model-00001-of-00002.safetensors": b"\x07" * 70_000,
         "model-00002-of-00002.safetensors": b"\x08" * 50_000,
         "tokenizer.json": b"{}"}


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def hub():
    with FakeHub(HubState(repo=REPO, token=HF_TOKEN, files=dict(FILES))) as fake:
        yield fake


@pytest.fixture
def staged_world(gcp, hub):
    """The fake's Cloud Run Jobs run the copier the job carries, against the local hub and the fake bucket."""
    s = gcp.state
    s.blobs["weights"] = []
    s.secrets["projects/test-proj/secrets/hf-token"] = {"secret": {"name": "projects/test-proj/secrets/hf-token"},
                                                       "versions": [HF_TOKEN.encode()]}

    def runner(job, env):
        assert env["INFERCTL_PROGRAM"] == program()  # the job runs exactly the copier tested here
        bucket = CloudContext("test-proj").storage().bucket(env["INFERCTL_BUCKET"])
        copy_repo(bucket, repo=env["INFERCTL_REPO"], prefix=env["INFERCTL_PREFIX"],
                  revision=env["INFERCTL_REVISION"], token=env.get("HF_TOKEN"), hub=hub.url, log=lambda _l: None)

    s.job_runner = runner
    return gcp


def test_the_plan_is_a_cloud_run_job_with_the_token_as_a_reference_only(gcp, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", HF_TOKEN)  # even if the user's shell has it, it goes nowhere
    result = invoke("artifacts", "stage", REPO, "--bucket", "gs://weights/models/gemma")
    assert result.exit_code == 0, result.output + (result.stderr or "")
    out = result.output
    assert "Nothing was created" in out and "jobs.create" in out and "jobs.run" in out
    assert 'bucket = "weights"' in out and 'path = "models/gemma"' in out
    assert HF_TOKEN not in out and not gcp.state.requests  # the dry run calls nothing
    plan = json.loads(invoke("artifacts", "stage", REPO, "--bucket", "gs://weights/models/gemma", "--json").output)
    env = plan["requests"][0]["body"]["template"]["template"]["containers"][0]["env"]
    token = next(v for v in env if v["name"] == "HF_TOKEN")
    assert token == {"name": "HF_TOKEN", "valueSource": {"secretKeyRef": {"secret": "hf-token", "version": "latest"}}}
    assert HF_TOKEN not in json.dumps(plan)
    command = plan["requests"][0]["body"]["template"]["template"]["containers"][0]["command"]
    assert "HF_TOKEN" not in " ".join(command)  # never an argument
    assert plan["requests"][0]["body"]["labels"]["managed-by"] == "inferctl"


def test_bad_input_is_one_sentence(gcp):
    for args, words in ((["not a repo", "--bucket", "gs://weights"], "repository id"),
                        ([REPO, "--bucket", "gs://Bad_Bucket!"], "bucket name is valid"),
                        ([REPO, "--bucket", "gs://weights/../x"], "plain path")):
        r = invoke("artifacts", "stage", *args)
        assert r.exit_code != 0 and words in r.stderr and "Traceback" not in r.output, (args, r.stderr)


def test_apply_runs_the_job_checks_the_folder_and_no_request_carries_the_token(staged_world):
    gcp = staged_world
    plan = plan_staging(REPO, "gs://weights/models/gemma")
    result = asyncio.run(apply_staging(plan, poll=0.01, timeout=30))
    assert result.check.complete and result.check.files == len(FILES) and not result.check.problems
    assert result.check.size_bytes == sum(len(v) for v in FILES.values())
    created = gcp.state.sent("run.jobs.create")[0]
    assert created.body == plan.requests[0].body  # apply sent exactly the planned job
    everything = json.dumps([[r.path, r.query, r.raw] for r in gcp.state.requests])
    assert HF_TOKEN not in everything
    # a second staging of the same folder reuses its job
    again = asyncio.run(apply_staging(plan, poll=0.01, timeout=30))
    assert again.check.complete and len(gcp.state.jobs) == 1 and len(gcp.state.executions) == 2


def test_artifacts_shows_which_staged_folders_are_complete(staged_world):
    gcp = staged_world
    asyncio.run(apply_staging(plan_staging(REPO, "gs://weights/models/gemma"), poll=0.01, timeout=30))
    good = json.loads(invoke("artifacts", "gs://weights", "--json").output)["models"]
    assert good == [{"path": "models/gemma", "files": len(FILES) + 1, "weights": 2, "staged": True,
                     "complete": True, "problems": [],
                     "size_bytes": good[0]["size_bytes"]}]
    # lose a shard: the folder is staged but incomplete, and says why
    gcp.state.blobs["weights"] = [b for b in gcp.state.blobs["weights"]
                                  if not b["name"].endswith("00002-of-00002.safetensors")]
    r = invoke("artifacts", "gs://weights")
    assert r.exit_code == 0 and "INCOMPLETE" in r.output and "model-00002-of-00002.safetensors is missing" in r.output


def test_a_failed_job_is_a_failure_and_nothing_is_complete(staged_world):
    gcp = staged_world
    gcp.state.secrets.clear()  # the secret is missing: the execution fails
    with pytest.raises(DeployFailed, match="staging job failed"):
        asyncio.run(apply_staging(plan_staging(REPO, "gs://weights/models/gemma"), poll=0.01, timeout=30))
    assert ("weights", f"models/gemma/{MANIFEST}") not in gcp.state.blob_data
