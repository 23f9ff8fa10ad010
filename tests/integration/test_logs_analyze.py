"""`logs`, `logs analyze` and `remediate` against the real local engine and its own log file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.integration.conftest import SERVED_MODEL_NAME, inferctl_home
from typer.testing import CliRunner

from inferctl.cli.app import app

pytestmark = pytest.mark.integration

OOM = """ERROR 11-21 09:00:01 [core.py:712] EngineCore failed to start.
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/vllm/v1/engine/core.py", line 700, in run_engine_core
    raise e
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 22.05 GiB
"""


@pytest.fixture
def home(local_engine, local_engine_home, tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("INFERCTL_TARGET", raising=False)
    with inferctl_home(local_engine_home):
        yield local_engine


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output + (result.stderr or "")
    return json.loads(result.output)


def test_logs_of_the_local_engine_come_from_its_log_file(home):
    out = invoke("logs", "--json", "--limit", "50")
    assert out["source"] == "file" and out["location"] == home.log_path
    assert out["records"] and len(out["records"]) <= 50


def test_logs_analyze_asks_the_local_model(home):
    out = invoke("logs", "analyze", "--json")
    assert out["lines_read"] > 0
    assert out["asked"] == "local" and out["model"] == SERVED_MODEL_NAME
    assert out["summary"] and out["note"] is None


def test_logs_analyze_finds_injected_errors(home, tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text(Path(home.log_path).read_text(errors="replace")[-4000:] + OOM)
    out = invoke("logs", "analyze", "--log", str(log), "--json")
    messages = [i["message"] for i in out["issues"]]
    assert any("OutOfMemoryError" in m for m in messages)
    assert any("GPU memory exhausted" in c for c in out["known_causes"])
    assert out["summary"] and out["asked"] == "local"


def test_logs_analyze_without_a_model_still_reports_facts(home, tmp_path):
    (tmp_path / "config.toml").write_text('[targets.down]\nurl = "http://127.0.0.1:9"\n')
    log = tmp_path / "vllm.log"
    log.write_text(OOM)
    out = invoke("logs", "analyze", "--log", str(log), "--ask", "down", "--json")
    assert out["summary"] is None and "could not be asked" in out["note"]
    assert out["issue_counts"]["ERROR"] >= 1


def test_remediate_with_the_local_model(home):
    out = invoke("remediate", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", "--json")
    assert out["plan"] and out["model"] == SERVED_MODEL_NAME
    assert any("GPU memory exhausted" in c for c in out["known_causes"])
