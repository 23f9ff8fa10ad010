"""Credentials in URLs never reach disk or output.

A sweep at ``http://user:password@host`` runs against the fake vLLM server; then every file of its
run directory (meta.json, records, report.md, report.html, charts) and the output of every command
that shows a URL is searched for the password and the user name.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM, free_port
from typer.testing import CliRunner

from inferctl.redact import redact_argv, redact_text, redact_url

USER, PASSWORD = "alice-user", "S3cr3tPa55word"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    for var in ("INFERCTL_TARGET", "INFERCTL_DEBUG"):
        monkeypatch.delenv(var, raising=False)


@pytest.mark.parametrize(("url", "shown"), [
    ("http://u:p@h:8000", "http://***@h:8000"),
    ("https://tok@h/v1", "https://***@h/v1"),
    ("https://h/x?token=abc&mode=fast", "https://h/x?token=***&mode=fast"),
    ("https://h/?api_key=1&X-Amz-Signature=2&sig=3&access_token=4&Key=5",
     "https://h/?api_key=***&X-Amz-Signature=***&sig=***&access_token=***&Key=***"),
    ("http://127.0.0.1:8321", "http://127.0.0.1:8321"),
    ("http://h:1/?page=2", "http://h:1/?page=2"),
    ("http://u:p@[::1", "http://***"),  # unparseable: everything after the scheme goes
])
def test_redact_url(url, shown):
    assert redact_url(url) == shown
    assert redact_url(shown) == shown  # idempotent


def test_redact_argv_and_text():
    argv = ["inferctl", "bench", "sweep", "--url", "http://u:pw@h:1", "--token-env", "MY_TOKEN",
            "--api-key", "sk-1", "--token=sk-2", "--endpoint=https://h/?key=sk-3", "-c", "1"]
    assert redact_argv(argv) == ["inferctl", "bench", "sweep", "--url", "http://***@h:1", "--token-env",
                                 "MY_TOKEN", "--api-key", "***", "--token=***", "--endpoint=https://h/?key=***",
                                 "-c", "1"]
    assert redact_text("Cannot connect to http://u:pw@h:1 (refused).") == "Cannot connect to http://***@h:1 (refused)."


def _invoke(*args: str):
    from inferctl.cli.app import app

    result = CliRunner().invoke(app, list(args))
    return result, result.output + (result.stderr or "")


def _cli(*args: str) -> tuple[subprocess.CompletedProcess, str]:
    """The real CLI in a subprocess, so meta.json records a real command line."""
    src = Path(__file__).resolve().parents[3] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", "from inferctl.cli.app import main; main()", *args],
                          env=env, capture_output=True, text=True, timeout=180)
    return done, done.stdout + done.stderr


def _assert_clean(text: str, where: str) -> None:
    assert PASSWORD not in text, f"password in {where}"
    assert USER not in text, f"user name in {where}"


def test_a_sweep_with_userinfo_stores_and_shows_no_credentials(tmp_path):
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=1)) as fake:
        port = fake.url.rsplit(":", 1)[1]
        url = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}"
        done, out = _cli("bench", "sweep", "--url", url, "-c", "1", "--context", "32", "--output-tokens", "4",
                         "--requests", "3", "--warmup", "1", "--json")
        assert done.returncode == 0, out
        _assert_clean(out, "bench sweep output")
        run_id = json.loads(done.stdout)["run_id"]
        outputs = {"report": _invoke("report", run_id), "runs show": _invoke("runs", "show", run_id),
                   "runs show --json": _invoke("runs", "show", run_id, "--json"), "runs list": _invoke("runs", "list")}
        for command in (["status"], ["health"], ["models"], ["metrics"]):
            for extra in ([], ["--json"]):
                outputs[" ".join(command + extra)] = _invoke(*command, "--url", url, *extra)
    for where, (_res, text) in outputs.items():
        assert "Traceback" not in text, (where, text)
        _assert_clean(text, where)
    assert outputs["status --json"][0].exit_code == 0
    assert json.loads(outputs["status --json"][0].output)["url"] == f"http://***@127.0.0.1:{port}"
    run_dir = tmp_path / "runs" / run_id
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"meta.json", "report.md", "report.html"} <= names, names
    for path in files:
        data = path.read_bytes()
        assert PASSWORD.encode() not in data and USER.encode() not in data, f"credentials in {path.name}"
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["target"]["url"] == f"http://***@127.0.0.1:{port}"
    assert f"http://***@127.0.0.1:{port}" in meta["command"]


def test_error_messages_quote_urls_without_credentials():
    port = free_port()
    for url in (f"http://{USER}:{PASSWORD}@127.0.0.1:{port}", f"http://127.0.0.1:{port}/?token={PASSWORD}"):
        for command in (["models"], ["status"], ["query", "hi"]):
            result, text = _invoke(*command, "--url", url)
            assert result.exit_code != 0
            assert "127.0.0.1" in text  # the message still says which server
            _assert_clean(text, f"{command} error")


def test_resuming_a_run_whose_url_had_credentials_asks_for_the_url(tmp_path):
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=1)) as fake:
        url = fake.url.replace("http://", f"http://{USER}:{PASSWORD}@")
        result, out = _invoke("bench", "sweep", "--url", url, "-c", "1", "--context", "32", "--output-tokens", "4",
                              "--requests", "2", "--warmup", "0", "--json")
        assert result.exit_code == 0, out
        run_id = json.loads(result.output)["run_id"]
        (Path(tmp_path) / "runs" / run_id / "cells.jsonl").write_text("")  # as if killed before any cell
        result, out = _invoke("bench", "sweep", "--resume", run_id)
        assert result.exit_code != 0 and "--url" in out
        _assert_clean(out, "resume error")
        result, out = _invoke("bench", "sweep", "--resume", run_id, "--url", url, "--json")
        assert result.exit_code == 0, out


def test_a_run_stored_by_an_older_inferctl_is_shown_without_its_credentials(tmp_path):
    from inferctl.bench.store import RunDir, RunMeta

    run = tmp_path / "runs" / "old-run"
    run.mkdir(parents=True)
    leaked = f"http://{USER}:{PASSWORD}@127.0.0.1:9"
    (run / "meta.json").write_text(json.dumps({"run_id": "old-run", "target": {"name": "url", "url": leaked},
                                               "command": ["inferctl", "bench", "sweep", "--url", leaked]}))
    meta = RunDir(run).read_meta()
    _assert_clean(meta.model_dump_json(), "meta read back")
    _assert_clean(RunMeta(run_id="x", target={"url": leaked}, command=[leaked]).model_dump_json(), "new meta")
    for args in (["runs", "show", "old-run"], ["runs", "show", "old-run", "--json"]):
        _assert_clean(_invoke(*args)[1], " ".join(args))
