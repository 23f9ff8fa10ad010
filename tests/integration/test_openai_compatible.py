"""A real OpenAI-compatible server that is not vLLM: `transformers serve` on the tiny Gemma 4 (issue 13.3).

It has no /tokenize, /metrics or /version, lists no models when pinned to one, rejects vLLM's
``ignore_eos``, and ends streams without ``[DONE]``. Every command must still work and say plainly what
the server does not expose; a sweep with ``--tokenizer DIR`` must still hit its prompt lengths exactly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.local.tinymodel import ensure_tiny_model

START_TIMEOUT_S = 240


@pytest.fixture(scope="module")
def tserve(tmp_path_factory):
    exe = Path(sys.executable).parent / "transformers"
    if not exe.exists():
        pytest.skip("the transformers console script is not installed")
    model = str(ensure_tiny_model())
    cache = tmp_path_factory.mktemp("hf-cache")  # an empty hub cache: /v1/models lists nothing, offline
    from tests.fakes.fake_vllm import free_port

    port = free_port()
    log = (tmp_path_factory.mktemp("tserve") / "server.log").open("w")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1"}
    proc = subprocess.Popen([str(exe), "serve", model, "--host", "127.0.0.1", "--port", str(port), "--device", "cpu"],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"transformers serve exited with {proc.returncode}; see {log.name}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(1)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"transformers serve did not answer /health within {START_TIMEOUT_S} s")
    yield url, model
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("INFERCTL_TARGET", raising=False)


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "160"})


def test_observe_commands_say_what_is_missing(tserve):
    url, model = tserve
    status = json.loads(invoke("status", "--url", url, "--json").stdout)
    assert status["reachable"] and status["healthy"] and status["problem"] is None, status
    assert {"/metrics", "/version"} <= set(status["not_exposed"])
    no_model = invoke("query", "hi", "--url", url)
    assert no_model.exit_code != 0 and "pass --model NAME" in no_model.stderr
    q = invoke("query", "Hello there", "--url", url, "--model", model, "--stats", "--json", "--max-tokens", "6")
    assert q.exit_code == 0, q.output
    answer = json.loads(q.stdout)
    assert answer["completion_tokens"] == 6 and answer["ttft_ms"] is not None  # no [DONE], still complete
    health = json.loads(invoke("health", "--url", url, "--model", model, "--json").stdout)
    assert health["healthy"], health


def test_sweep_with_a_local_tokenizer_is_exact_and_reports(tserve, tmp_path):
    url, model = tserve
    refused = invoke("bench", "sweep", "--url", url, "--model", model, "-c", "1", "--context", "64",
                     "--output-tokens", "4", "-n", "2", "--warmup", "0", "--tokenizer", model)
    assert refused.exit_code == 1 and "--natural-stop" in refused.stderr  # ignore_eos is vLLM's own
    r = invoke("bench", "sweep", "--url", url, "--model", model, "-c", "1,2", "--context", "64,160",
               "--output-tokens", "6", "-n", "4", "--warmup", "0", "--tokenizer", model, "--natural-stop", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    assert s["status"] == "complete"
    for cell in s["cells"]:
        assert cell["metrics"]["ok"] == 4
        assert cell["metrics"]["prompt_tokens_mean"] == cell["context"]  # exact, template included
    meta = json.loads((Path(s["path"]) / "meta.json").read_text())
    assert meta["workload"]["exact_lengths"] and meta["workload"]["tokenizer"].startswith("local tokenizer")
    assert meta["vllm_version"] is None
    rep = invoke("report", s["run_id"], "--no-png", "--json")
    assert rep.exit_code == 0, rep.output
    assert Path(json.loads(rep.stdout)["markdown"]).read_text().startswith("# Benchmark report")


def test_sweep_without_a_tokenizer_is_a_declared_approximation(tserve):
    url, model = tserve
    r = invoke("bench", "sweep", "--url", url, "--model", model, "-c", "1", "--context", "200",
               "--output-tokens", "4", "-n", "3", "--warmup", "0", "--natural-stop", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout)
    meta = json.loads((Path(s["path"]) / "meta.json").read_text())
    assert meta["workload"]["exact_lengths"] is False
    assert "calibrated from usage.prompt_tokens" in meta["workload"]["tokenizer"]
    got = s["cells"][0]["metrics"]["prompt_tokens_mean"]
    assert abs(got - 200) <= 30, got  # an approximation, and the run records what the server saw
