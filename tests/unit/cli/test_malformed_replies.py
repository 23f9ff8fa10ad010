"""A server that answers 200 with the wrong shape: one sentence naming the endpoint, never a traceback.

Real HTTP against tests/fakes/fake_vllm.py with its malformed-body switches (issue 17, item 5).
"""

from __future__ import annotations

import json

import pytest
from tests.fakes.fake_vllm import MALFORMED_CHUNKS, MALFORMED_MODELS, FakeConfig, FakeVLLM
from typer.testing import CliRunner

from inferctl.cli.app import app

pytestmark = pytest.mark.usefixtures("isolated")  # tests/unit/conftest.py


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_one_line_error(result, *patterns: str) -> None:
    assert result.exit_code not in (0, None), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.startswith("error:"), err
    assert len(err.splitlines()) == 1, err
    for p in patterns:
        assert p in err, err


MODELS_ERRORS = {
    "huge_max_model_len": "data[0].max_model_len",
    "deep": "nested too deeply",
    "id_number": "data[0].id",
}


@pytest.mark.parametrize("kind", sorted(MALFORMED_MODELS))
@pytest.mark.parametrize("command", [["models"], ["query", "hi"]])
def test_malformed_models_list_is_one_sentence(kind, command):
    with FakeVLLM(FakeConfig(models_body=MALFORMED_MODELS[kind])) as fake:
        result = invoke(*command, "--url", fake.url)
    assert_one_line_error(result, f"{fake.url}/v1/models sent a malformed reply", MODELS_ERRORS[kind])


CHUNK_ERRORS = {
    "choices_number": "choices[0] is a number (5), not an object",
    "content_number": "choices[0].delta.content is a number (5), not a string",
    "usage_list": "usage is a list, not an object",
    "deep": "nested too deeply",
}


@pytest.mark.parametrize("kind", sorted(MALFORMED_CHUNKS))
def test_malformed_stream_chunk_is_one_sentence(kind):
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.5, faults={1: kind})) as fake:
        result = invoke("query", "hi", "--url", fake.url, "--max-tokens", "4")
    assert_one_line_error(result, f"{fake.url}/v1/chat/completions broke", "malformed chunk", CHUNK_ERRORS[kind])


def test_health_reports_a_malformed_stream_as_unhealthy():
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.5, faults={1: "choices_number"})) as fake:
        result = invoke("health", "--url", fake.url, "--json")
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["healthy"] is False and "choices[0] is a number (5)" in report["problem"]


BAD_METRICS = {
    "le": ('vllm:e2e_request_latency_seconds_bucket{le="abc"} 1\n'
           "vllm:e2e_request_latency_seconds_count 1\nvllm:e2e_request_latency_seconds_sum 1\n",
           "le='abc', which is not a number"),
    "position": ('vllm:spec_decode_num_drafts_total 3\n'
                 'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="x"} 1\n',
                 "position='x'"),
}


@pytest.mark.parametrize("kind", sorted(BAD_METRICS))
def test_malformed_metrics_is_one_sentence(kind):
    text, pattern = BAD_METRICS[kind]
    with FakeVLLM(FakeConfig(metrics_text=text)) as fake:
        result = invoke("metrics", "--url", fake.url)
    assert_one_line_error(result, "/metrics", pattern)


def test_models_still_lists_when_metrics_are_malformed():
    text, _ = BAD_METRICS["le"]
    with FakeVLLM(FakeConfig(metrics_text=text)) as fake:
        result = invoke("models", "--url", fake.url, "--json")
    assert result.exit_code == 0, result.output
    assert [m["id"] for m in json.loads(result.stdout)["models"]] == ["fake-model"]


def test_sweep_records_malformed_streams_as_failed_requests_and_goes_on(tmp_path):
    """The load generator turns every malformed chunk into a failed request record; the sweep finishes."""
    cycle = ["", *sorted(MALFORMED_CHUNKS)]
    cfg = FakeConfig(ttft_ms=1, itl_ms=0.5, fault_cycle=cycle)
    runs = tmp_path / "runs"
    with FakeVLLM(cfg) as fake:
        result = invoke("bench", "sweep", "--url", fake.url, "-c", "1,2", "--context", "32", "--output-tokens", "4",
                        "--requests", "10", "--warmup", "0", "--error-threshold", "1", "--runs-dir", str(runs),
                        "--workers", "1", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["cells_total"] == 2 and summary["status"] == "complete"
    records = [json.loads(line) for line in (runs / summary["run_id"] / "requests.jsonl").read_text().splitlines()]
    broken = [r for r in records if r["status"] == "stream_broken"]
    assert broken, records
    assert all("malformed chunk" in r["error"] for r in broken), {r["error"] for r in broken}
    assert {r["status"] for r in records} == {"ok", "stream_broken"}
    for pattern in ("choices[0] is a number", "delta.content is a number", "usage is a list", "nested too deeply"):
        assert any(pattern in r["error"] for r in broken), pattern
