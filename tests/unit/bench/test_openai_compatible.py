"""Servers that speak OpenAI but are not vLLM: no /tokenize, /metrics or /version, no [DONE] (issue 13.3).

The fake plays such a server over real HTTP; tests/integration/test_openai_compatible.py does the same
against a real one (`transformers serve`).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM
from typer.testing import CliRunner

from inferctl.bench.spec import SweepSpec
from inferctl.cli.app import app
from inferctl.config import Target
from inferctl.ops import bench as ops

pytestmark = pytest.mark.usefixtures("isolated")  # tests/unit/conftest.py


def _sweep(url: str, tmp: Path, **kw) -> ops.SweepSummary:
    spec = SweepSpec(**{"contexts": [64, 256], "concurrencies": [1, 2], "output_tokens": 4, "requests": 4,
                        "warmup": 0, **kw})
    return asyncio.run(ops.sweep(Target(name="other", url=url), spec.validate_grid(), root=tmp))


def test_sweep_without_tokenize_is_an_approximation_calibrated_from_usage(tmp_path):
    # The fake counts one token per character, 8 template tokens: words of ~4-6 characters, not one token.
    with FakeVLLM(FakeConfig(openai_only=True, ttft_ms=1, itl_ms=0.2)) as fake:
        s = _sweep(fake.url, tmp_path)
    assert s.status == "complete" and all(c.metrics.ok == 4 for c in s.cells)
    meta = json.loads((Path(s.path) / "meta.json").read_text())
    assert meta["workload"]["exact_lengths"] is False
    assert meta["workload"]["tokenizer"].startswith("approximate: no tokenizer")
    assert meta["workload"]["tokens_per_word"] > 3  # characters per word, learnt from usage
    assert meta["vllm_version"] is None
    # An approximation: words here are 2-11 "tokens" (characters) each, so a 9-word prompt can miss by a few
    # words; what the server saw is recorded per request either way.
    for c in s.cells:
        assert abs(c.metrics.prompt_tokens_mean - c.context) <= max(16, 0.1 * c.context), (c.id, c.metrics)


def test_status_health_models_query_say_what_is_missing(tmp_path):
    with FakeVLLM(FakeConfig(openai_only=True, ttft_ms=1, itl_ms=0.2)) as fake:
        status = CliRunner().invoke(app, ["status", "--url", fake.url, "--json"])
        human = CliRunner().invoke(app, ["status", "--url", fake.url], env={"COLUMNS": "200"})
        health = CliRunner().invoke(app, ["health", "--url", fake.url, "--json"])
        query = CliRunner().invoke(app, ["query", "hi", "--url", fake.url, "--stats", "--json", "--max-tokens", "4"])
    report = json.loads(status.stdout)
    assert report["healthy"] and report["problem"] is None, report
    assert set(report["not_exposed"]) == {"/version", "/metrics"}
    assert "not exposed" in human.stdout and "/metrics" in human.stdout
    assert json.loads(health.stdout)["healthy"] is True
    q = json.loads(query.stdout)
    assert query.exit_code == 0 and q["completion_tokens"] == 4 and q["ttft_ms"] is not None


def test_a_server_that_cannot_list_models_works_with_model_given(tmp_path):
    with FakeVLLM(FakeConfig(openai_only=True, ttft_ms=1, itl_ms=0.2, served=["x"], models_status=500)) as fake:
        without = CliRunner().invoke(app, ["query", "hi", "--url", fake.url])
        given = CliRunner().invoke(app, ["query", "hi", "--url", fake.url, "--model", "x", "--json",
                                         "--max-tokens", "4"])
    assert without.exit_code != 0 and "pass --model NAME" in without.stderr
    assert given.exit_code == 0, given.output
    assert json.loads(given.stdout)["model"] == "x"
