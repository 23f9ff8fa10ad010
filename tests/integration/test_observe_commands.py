"""status, health, models, metrics, memory and query end to end on the real local engine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.integration.conftest import MAX_MODEL_LEN, inferctl_home
from typer.testing import CliRunner

from inferctl.cli.app import app

pytestmark = pytest.mark.integration


@pytest.fixture
def home(local_engine, local_engine_home):
    with inferctl_home(local_engine_home):
        yield local_engine_home


def cli_json(*args: str) -> dict:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_status_json(home, local_engine):
    s = cli_json("status")
    assert s["target"] == "local" and s["url"] == local_engine.url
    assert s["reachable"] and s["healthy"] and s["problem"] is None
    assert s["version"] == "0.32.0"
    assert [(m["id"], m["max_model_len"]) for m in s["models"]] == [("tiny-gemma4", MAX_MODEL_LEN)]
    load = s["load"]
    assert load["requests_running"] >= 0 and load["requests_waiting"] >= 0
    assert 0 <= load["kv_cache_usage"] <= 1
    assert load["interval_seconds"] > 0 and load["generation_tokens_per_s"] >= 0
    assert load["spec_decode_acceptance_rate"] is None  # no speculative decoding on this engine


def test_status_rates_count_traffic_since_the_previous_scrape(home, local_engine):
    cli_json("status")  # remembers this scrape
    q = cli_json("query", "Count to ten.", "--max-tokens", "32")
    s = cli_json("status")
    assert s["load"]["generation_tokens_per_s"] > 0
    # rate x interval gives back the tokens generated in between (interval is rounded to the ms)
    tokens = s["load"]["generation_tokens_per_s"] * s["load"]["interval_seconds"]
    assert tokens >= q["completion_tokens"] * 0.99


def test_status_shows_spec_decode_acceptance(local_engine_specdecode):
    url = local_engine_specdecode.url
    CliRunner().invoke(app, ["query", "one two three one two three one two three", "--url", url, "--completion",
                             "--max-tokens", "64", "--temperature", "0"])
    s = cli_json("status", "--url", url)
    assert s["healthy"]
    assert s["load"]["spec_decode_mean_acceptance_length"] >= 1.0
    assert 0 <= s["load"]["spec_decode_acceptance_rate"] <= 1
    m = cli_json("models", "--url", url)
    assert m["speculative_decoding"] is True


def test_health_json(home):
    h = cli_json("health")
    assert h["healthy"] and h["model"] == "tiny-gemma4"
    assert h["completion_tokens"] > 0 and h["completion_ms"] > 0 and h["health_endpoint_ms"] > 0


def test_models_json_has_engine_config(home, local_engine):
    m = cli_json("models")
    assert m["models"][0]["id"] == "tiny-gemma4" and m["models"][0]["root"] == local_engine.model_dir
    cc = m["cache_config"]
    assert cc["block_size"] > 0 and cc["kv_cache_size_tokens"] > 0 and cc["kv_cache_max_concurrency"] > 0
    assert m["speculative_decoding"] is False
    assert "--max-model-len" in m["engine_args"]


def test_metrics_json_and_raw(home, local_engine):
    cli_json("query", "Hello there", "--max-tokens", "8")
    m = cli_json("metrics")
    snap = m["snapshot"]
    assert snap["model_names"] == ["tiny-gemma4"]
    assert snap["generation_tokens"] >= 8 and snap["requests_finished"] >= 1
    assert snap["ttft"]["count"] >= 1 and snap["ttft"]["p50"] is not None
    assert snap["cache_config"]["kv_cache_size_tokens"] > 0
    raw = CliRunner().invoke(app, ["metrics", "--raw"])
    assert raw.exit_code == 0 and "vllm:num_requests_running" in raw.stdout


def test_memory_matches_the_engine_log_line(home, local_engine):
    log = Path(local_engine.log_path).read_text(encoding="utf-8", errors="replace")
    line = re.findall(r"KV cache size: ([\d,]+) tokens, Maximum concurrency for ([\d,]+) tokens per request: "
                      r"([\d.]+)x", log)[-1]
    m = cli_json("memory")
    layout = m["layout"]
    assert m["log_available"] and m["source"] == local_engine.log_path
    assert layout["device_type"] == "CPU"
    assert layout["kv_cache_tokens"] == int(line[0].replace(",", ""))
    assert layout["max_concurrency_tokens_per_request"] == int(line[1].replace(",", "")) == MAX_MODEL_LEN
    assert layout["max_concurrency"] == pytest.approx(float(line[2]))
    assert layout["max_model_len"] == MAX_MODEL_LEN and layout["engine_init_seconds"] > 0
    assert m["kv_cache_tokens_agree"] is True  # and /metrics' cache_config_info says the same


def test_memory_of_a_remote_url_says_the_log_is_not_available(local_engine):
    m = cli_json("memory", "--url", local_engine.url)
    assert m["log_available"] is False and "startup log" in m["note"]
    assert m["server_cache_config"]["kv_cache_size_tokens"] > 0


def test_query_stats_json(home):
    q = cli_json("query", "What is a KV cache?", "--max-tokens", "24")
    assert q["model"] == "tiny-gemma4"
    assert q["completion_tokens"] >= 1 and q["prompt_tokens"] > 5  # the chat template adds tokens
    assert q["ttft_ms"] > 0 and q["e2e_ms"] >= q["ttft_ms"]
    if q["completion_tokens"] > 1:
        assert q["tpot_ms"] > 0 and q["output_tokens_per_s"] > 0


def test_query_streams_text_then_stats(home):
    result = CliRunner().invoke(app, ["query", "Say hi", "--stats", "--max-tokens", "16"])
    assert result.exit_code == 0, result.output
    for label in ("TTFT", "TPOT", "output tokens/s", "server usage"):
        assert label in result.stdout


def test_the_same_commands_work_with_url(local_engine):
    for command in ("status", "health", "models", "metrics"):
        result = CliRunner().invoke(app, [command, "--url", local_engine.url])
        assert result.exit_code == 0, (command, result.output)
