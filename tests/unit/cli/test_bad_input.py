"""Bad input and broken endpoints: one clear line on stderr, a non-zero exit, never a traceback."""

from __future__ import annotations

import json

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM, ServerThread, free_port, html_app
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.local.state import state_file


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("INFERCTL_TARGET", raising=False)
    monkeypatch.delenv("INFERCTL_DEBUG", raising=False)


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    return result


def assert_one_line_error(result, pattern: str) -> None:
    assert result.exit_code != 0, result.output
    assert "Traceback" not in result.output and "Traceback" not in result.stderr
    err = result.stderr.strip()
    assert err.startswith("error:"), err
    assert len(err.splitlines()) == 1, err
    assert pattern in err, err


@pytest.mark.parametrize("command", [["models"], ["metrics"], ["query", "hi"], ["metrics", "--raw"]])
def test_unreachable_url(command):
    url = f"http://127.0.0.1:{free_port()}"
    assert_one_line_error(invoke(*command, "--url", url), "Cannot connect")


def test_unreachable_status_and_health_report_then_fail():
    url = f"http://127.0.0.1:{free_port()}"
    for command in ("status", "health"):
        result = invoke(command, "--url", url, "--json")
        assert result.exit_code == 1
        report = json.loads(result.stdout)
        assert report["healthy"] is False and "Cannot connect" in report["problem"]


def test_local_not_running_says_how_to_start(monkeypatch):
    from inferctl.local import state

    monkeypatch.setattr(state, "DEFAULT_PORT", free_port())
    assert_one_line_error(invoke("models"), "inferctl local up")


def test_plain_http_server_is_not_vllm():
    with ServerThread(html_app()) as srv:
        assert_one_line_error(invoke("models", "--url", srv.url), "not as an OpenAI-compatible server")
        assert_one_line_error(invoke("query", "hi", "--url", srv.url), "not as an OpenAI-compatible server")


def test_401_without_token(monkeypatch):
    with FakeVLLM(FakeConfig(require_token="tok-123")) as f:
        result = invoke("models", "--url", f.url)
        assert_one_line_error(result, "401 Unauthorized")
        monkeypatch.setenv("LAB_TOKEN", "tok-123")
        ok = invoke("models", "--url", f.url, "--token-env", "LAB_TOKEN", "--json")
        assert ok.exit_code == 0, ok.output
        assert "tok-123" not in ok.output


def test_503_health_is_unhealthy():
    with FakeVLLM(FakeConfig(health_status=503)) as f:
        result = invoke("health", "--url", f.url)
        assert result.exit_code == 1
        assert "503" in result.stdout and "Traceback" not in result.output


def test_unknown_model():
    with FakeVLLM(FakeConfig(model="tiny")) as f:
        assert_one_line_error(invoke("query", "hi", "--url", f.url, "--model", "gemma-9"),
                              "Model 'gemma-9' is not served")


def test_malformed_metrics_text():
    with FakeVLLM(FakeConfig(metrics_text="this is {not prometheus\n")) as f:
        assert_one_line_error(invoke("metrics", "--url", f.url), "metrics")


def test_corrupt_state_file():
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text("{oops", encoding="utf-8")
    assert_one_line_error(invoke("status"), "corrupt")


def test_unknown_target():
    assert_one_line_error(invoke("status", "--target", "h100"), "Unknown target 'h100'")


def test_bad_url():
    assert_one_line_error(invoke("status", "--url", "localhost:8000"), "http:// or https://")


def test_memory_missing_log_file(tmp_path):
    assert_one_line_error(invoke("memory", "--log", str(tmp_path / "nope.log")), "does not exist")


def test_memory_of_remote_server_says_plainly():
    with FakeVLLM(FakeConfig()) as f:
        result = invoke("memory", "--url", f.url, "--json")
        assert result.exit_code == 0
        report = json.loads(result.stdout)
        assert report["log_available"] is False and "startup log" in report["note"]


def test_empty_prompt():
    assert_one_line_error(invoke("query", "  ", "--url", "http://127.0.0.1:1"), "prompt is empty")
