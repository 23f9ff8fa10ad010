"""`inferctl local ...` against the real vLLM engine (CPU build, tiny Gemma 4 model)."""

from __future__ import annotations

import json

import httpx
import pytest
from tests.integration.conftest import MAX_MODEL_LEN, free_port, inferctl_home
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.local import engine
from inferctl.local.state import read_state
from inferctl.ops import local as ops

pytestmark = pytest.mark.integration


@pytest.fixture
def home(local_engine, local_engine_home):
    with inferctl_home(local_engine_home):
        yield local_engine_home


def test_health_is_200(local_engine):
    assert httpx.get(f"{local_engine.url}/health", timeout=10).status_code == 200


def test_the_model_really_serves_a_chat(local_engine):
    # /health says 200 even when every request will fail (e.g. an unsupported head size on CPU).
    response = httpx.post(
        f"{local_engine.url}/v1/chat/completions",
        json={"model": local_engine.served_model_name, "max_tokens": 8,
              "messages": [{"role": "user", "content": "Hello"}]},
        timeout=60,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["model"] == "tiny-gemma4"
    assert body["usage"]["completion_tokens"] > 0


def test_served_model_is_the_tiny_gemma4(local_engine):
    models = httpx.get(f"{local_engine.url}/v1/models", timeout=10).json()
    card = models["data"][0]
    assert card["id"] == "tiny-gemma4" and card["max_model_len"] == MAX_MODEL_LEN
    assert card["root"] == local_engine.model_dir


def test_status_shows_running(home, local_engine):
    status = ops.status()
    assert status.status == "running"
    assert (status.pid, status.port, status.model) == (local_engine.pid, local_engine.port, "tiny-gemma4")
    assert status.url == f"http://127.0.0.1:{local_engine.port}"
    assert status.uptime_s > 0 and status.log_path == local_engine.log_path


def test_up_is_idempotent(home, local_engine, tiny_model_dir):
    again = ops.up(model_dir=tiny_model_dir, port=local_engine.port)
    assert again.already_running and again.pid == local_engine.pid
    assert ops.up().pid == local_engine.pid  # the bare form too
    assert read_state() == local_engine


def test_up_with_another_port_while_running_is_refused(home, local_engine):
    with pytest.raises(Exception, match="already running"):
        ops.up(port=local_engine.port + 1)


def test_cli_up_when_running_says_so(home, local_engine):
    result = CliRunner().invoke(app, ["local", "up", "--port", str(local_engine.port)])
    assert result.exit_code == 0, result.output
    assert "Already running" in result.output and str(local_engine.pid) in result.output


def test_cli_status_json_shape(home, local_engine):
    result = CliRunner().invoke(app, ["local", "status", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["status"] == "running"
    assert data["pid"] == local_engine.pid and data["port"] == local_engine.port
    assert data["url"] == local_engine.url and data["model"] == "tiny-gemma4"
    assert data["model_dir"] == local_engine.model_dir and data["log_path"] == local_engine.log_path
    assert isinstance(data["uptime_s"], float) and isinstance(data["started_at"], float)
    assert data["argv"][1:3] == ["-m", "vllm.entrypoints.openai.api_server"]


def test_logs_tail(home, local_engine):
    logs = ops.logs(lines=5)
    assert logs.log_path == local_engine.log_path and len(logs.lines) == 5
    text = "\n".join(engine.log_tail(local_engine.log_path, 100_000))
    assert f"Starting vLLM server on http://127.0.0.1:{local_engine.port}" in text
    assert "Resolved architecture: Gemma4ForCausalLM" in text
    cli = CliRunner().invoke(app, ["local", "logs", "-n", "3"])
    assert cli.exit_code == 0 and len(cli.output.splitlines()) == 3


def test_pass_through_args_reach_vllm_and_a_failed_start_shows_the_log(tmp_path, tiny_model_dir):
    # A separate home and port: this engine must not touch the shared one. vLLM rejects the
    # bogus flag after its imports (~15 s), so this also exercises "died during startup".
    with inferctl_home(tmp_path / "home"):
        result = CliRunner().invoke(
            app, ["local", "up", "--model", str(tiny_model_dir), "--port", str(free_port()),
                  "--", "--no-such-vllm-flag"]
        )
        assert result.exit_code != 0
        assert "exited during startup" in result.output
        assert "--no-such-vllm-flag" in result.output  # vLLM's own complaint, from the log tail
        assert "Traceback (most recent call last)" not in result.output.split("last lines of")[0]
        assert read_state() is None  # nothing stale left behind
        logs = CliRunner().invoke(app, ["local", "logs", "-n", "200"])
        assert "--no-such-vllm-flag" in logs.output  # the failed start's log is still readable


def test_specdecode_engine_counts_drafts_and_acceptances(local_engine_specdecode):
    url = local_engine_specdecode.url
    for prompt in ["one two three four one two three four one two three", "Hello, how are you?"] * 2:
        r = httpx.post(f"{url}/v1/completions", timeout=120,
                       json={"model": "tiny-gemma4", "prompt": prompt, "max_tokens": 64, "temperature": 0})
        assert r.status_code == 200, r.text
    metrics = httpx.get(f"{url}/metrics", timeout=10).text

    def counter(name: str) -> float:
        return sum(float(line.split()[-1]) for line in metrics.splitlines() if line.startswith(name + "{"))

    # The tiny model repeats itself now and then (see tinymodel.EMBED_STD), so drafts get accepted.
    assert counter("vllm:spec_decode_num_drafts_total") > 0
    assert counter("vllm:spec_decode_num_accepted_tokens_total") > 0
