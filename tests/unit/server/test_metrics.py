"""Parsing vLLM /metrics across versions, and rates between two scrapes.

Fixtures: tests/fixtures/versions/ (README there says which are verbatim and which synthetic) and, when
recorded, tests/fixtures/vllm-0.32-cpu/ from a real local engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inferctl.errors import MetricsParseError
from inferctl.server.histogram import histogram_quantile, summarize
from inferctl.server.metrics import parse_metrics
from inferctl.server.rates import delta

FIXTURES = Path(__file__).parents[2] / "fixtures"
VERSIONS = FIXTURES / "versions"
REAL = FIXTURES / "vllm-0.32-cpu"
MODEL = "google/gemma-4-26B-A4B-it"


def load(name: str, taken_at: float = 100.0, **kw):
    return parse_metrics((VERSIONS / name).read_text(), taken_at=taken_at, **kw)


# ------------------------------------------------------------------------------------- 0.33 definitions


def test_033_synthetic_core_fields():
    s = load("metrics_0.33_synthetic.txt")
    assert s.taken_at == 100.0
    assert s.model_names == [MODEL]
    assert s.engine_count == 1
    assert s.requests_running == 3 and s.requests_waiting == 2
    assert s.requests_waiting_by_reason == {"capacity": 2, "deferred": 0}
    assert s.kv_cache_usage == pytest.approx(0.4127)
    assert (s.prefix_cache_queries, s.prefix_cache_hits) == (5120, 1280)
    assert s.prefix_cache_hit_rate == pytest.approx(0.25)
    assert (s.prompt_tokens, s.generation_tokens, s.preemptions) == (10000, 2000, 1)
    assert s.finished_by_reason == {"stop": 3, "length": 1, "abort": 0, "error": 0, "repetition": 0}
    assert s.requests_finished == 4
    assert s.series_created_at == pytest.approx(1.7953106955e9)


def test_033_synthetic_histograms():
    s = load("metrics_0.33_synthetic.txt")
    # TTFT observations 0.09, 0.2, 0.4, 0.48 in buckets (0.08, 0.1], (0.1, 0.25], (0.25, 0.5] x2.
    assert s.ttft.count == 4 and s.ttft.sum == pytest.approx(1.17) and s.ttft.mean == pytest.approx(0.2925)
    assert s.ttft.p50 == pytest.approx(0.25)  # rank 2 = top of the (0.1, 0.25] bucket
    assert s.ttft.p90 == pytest.approx(0.25 + 0.25 * (3.6 - 2) / 2)
    # ITL: 90 gaps of 0.02 s (bucket (0.01, 0.025]) and 10 of 0.09 s (bucket (0.075, 0.1]).
    assert s.itl.count == 100 and s.itl.mean == pytest.approx(0.027)
    assert s.itl.p50 == pytest.approx(0.01 + 0.015 * 50 / 90)
    assert s.itl.p99 == pytest.approx(0.075 + 0.025 * 9 / 10)
    for name, mean in [
        ("tpot", 0.035),
        ("e2e", 2.2),
        ("queue", 0.2),
        ("inference", 1.95),
        ("prefill", 0.25),
        ("decode", 1.7),
    ]:
        assert getattr(s, name).count == 4, name
        assert getattr(s, name).mean == pytest.approx(mean), name
    # Histograms we do not name are kept, not dropped.
    assert s.other_histograms["vllm:iteration_tokens_total"].sum == 110
    assert s.ttft.buckets[-1].le == 2560.0  # +Inf left out (JSON has no infinity)


def test_033_synthetic_spec_decode_and_cache_config():
    s = load("metrics_0.33_synthetic.txt")
    sd = s.spec_decode
    assert (sd.drafts, sd.draft_tokens, sd.accepted_tokens) == (600, 1800, 1290)
    assert sd.accepted_per_position == [560, 430, 300]
    assert sd.acceptance_rate == pytest.approx(1290 / 1800)
    assert sd.mean_acceptance_length == pytest.approx(1 + 1290 / 600)
    assert sd.per_position_acceptance == pytest.approx([560 / 600, 430 / 600, 0.5])
    cc = s.cache_config
    assert cc.block_size == 16 and cc.cache_dtype == "fp8" and cc.enable_prefix_caching is True
    assert cc.gpu_memory_utilization == 0.9 and cc.num_gpu_blocks == 70688
    assert cc.kv_cache_size_tokens == 1131008 and cc.kv_cache_max_concurrency == 8.63
    assert cc.kv_cache_memory_bytes is None  # the label says "None"
    assert cc.labels["swap_space"] == "0"


def test_unknown_vllm_families_land_in_other_and_foreign_families_are_ignored():
    s = load("metrics_0.33_synthetic.txt")
    assert s.other['vllm:engine_sleep_state{sleep_state="awake"}'] == 1
    assert s.other['vllm:admission_rejections_total{reason="max_num_queued_reqs"}'] == 0
    assert "vllm:estimated_flops_per_gpu_total" in s.other
    assert not any(k.endswith("_created") or "_created{" in k for k in s.other)
    assert not any(k.startswith(("python_", "process_", "http_")) for k in s.other)
    # Named fields are not duplicated into `other`.
    assert not any(
        k.startswith(("vllm:num_requests_waiting", "vllm:kv_cache", "vllm:request_success")) for k in s.other
    )


def test_reference_excerpt_033():
    s = load("metrics_0.33_reference_excerpt.txt")
    assert s.requests_running == 3 and s.kv_cache_usage == pytest.approx(0.4127)
    assert s.prefix_cache_queries == 5120 and s.prefix_cache_hits is None and s.prefix_cache_hit_rate is None
    assert s.ttft.count == 4 and s.ttft.p50 == pytest.approx(0.25) and s.ttft.p90 == pytest.approx(0.65)
    assert s.spec_decode.mean_acceptance_length == pytest.approx(3.15)
    assert s.prompt_tokens is None  # not in the excerpt: None, never 0


def test_data_parallel_engines_are_summed_and_kv_usage_is_mean_and_max():
    s = load("metrics_0.33_dp2_synthetic.txt")
    assert s.engine_count == 2
    assert s.requests_running == 6 and s.prompt_tokens == 20000
    assert s.kv_cache_usage == pytest.approx(0.4) and s.kv_cache_usage_max == pytest.approx(0.6)
    assert s.ttft.count == 8 and s.ttft.mean == pytest.approx(0.2925)
    assert s.spec_decode.acceptance_rate == pytest.approx(1290 / 1800)
    assert s.cache_config.labels["engine"] == "0"


# ----------------------------------------------------------------------------------------- older versions


def test_0_10_0_excerpt_prefers_new_names_and_falls_back_to_deprecated():
    s = load("metrics_0.10.0_excerpt.txt")
    assert s.kv_cache_usage == pytest.approx(9.75010481363281e-06)
    assert s.prefix_cache_queries == 32  # new name
    assert s.prefix_cache_hits == 0  # only the deprecated gpu_ name is in the excerpt
    assert s.prefix_cache_hit_rate == 0.0
    assert not any("gpu_prefix_cache" in k for k in s.other)


def test_deprecated_only_names_map_to_current_fields():
    s = load("metrics_0.10_deprecated_synthetic.txt")
    assert s.kv_cache_usage == 0.25
    assert (s.prefix_cache_queries, s.prefix_cache_hits, s.prefix_cache_hit_rate) == (400, 100, 0.25)
    assert s.itl.count == 100 and s.itl.mean == pytest.approx(0.025)
    assert s.itl.p50 == pytest.approx(0.025)
    assert not any("swapped" in k for k in s.other)  # V0 swap is dropped
    assert s.other["vllm:gpu_prefix_cache_hit_rate"] == 0.25  # unknown V0 gauge kept


def test_early_v1_without_engine_label():
    s = load("metrics_early_v1_no_engine.txt")
    assert s.engine_count == 1
    assert s.model_names == ["Qwen/Qwen2.5-Coder-32B-Instruct"]
    assert (s.requests_running, s.requests_waiting, s.kv_cache_usage) == (0, 4, 0.93)
    assert (s.prompt_tokens, s.generation_tokens, s.requests_finished) == (123456, 7890, 12)
    assert s.spec_decode is None and s.cache_config is None and s.ttft is None


def test_0_32_cpu_excerpt_cache_config():
    s = load("metrics_0.32_cpu_excerpt.txt")
    cc = s.cache_config
    assert cc.kv_cache_size_tokens == 2003249 and cc.block_size == 128
    assert cc.kv_cache_max_concurrency == pytest.approx(978.1492537313433)
    assert cc.kv_cache_memory_bytes == 1073741824 and cc.num_gpu_blocks is None
    assert cc.gpu_memory_utilization == 0.92 and cc.cache_dtype == "auto"
    assert cc.labels["_block_size_resolved"] == "True"


# ------------------------------------------------------------------------------------------- model filter


def two_models() -> str:
    return (
        'vllm:num_requests_running{engine="0",model_name="a"} 1.0\n'
        'vllm:num_requests_running{engine="0",model_name="b"} 5.0\n'
        'vllm:cache_config_info{block_size="16",engine="0"} 1.0\n'
    )


def test_model_filter():
    both = parse_metrics(two_models(), taken_at=1.0)
    assert both.model_names == ["a", "b"] and both.requests_running == 6
    only_b = parse_metrics(two_models(), taken_at=1.0, model_name="b")
    assert only_b.requests_running == 5 and only_b.model_filter == "b"
    assert only_b.cache_config.block_size == 16  # series without model_name are kept
    with pytest.raises(MetricsParseError, match="'c'.*a, b"):
        parse_metrics(two_models(), taken_at=1.0, model_name="c")


# ------------------------------------------------------------------------------------------------ malformed


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("", "empty"),
        ("   \n\n", "empty"),
        ("<!DOCTYPE html>\n<html><body>Not Found</body></html>", "HTML"),
        ("<html><head><title>502 Bad Gateway</title></head></html>", "HTML"),
        ('{"detail": "Not Found"}', "HTML/JSON"),
        ("this is not prometheus at all", "not Prometheus"),
        ('vllm:num_requests_running{engine="0" 3.0', "not Prometheus"),
    ],
)
def test_malformed_bodies_raise_one_sentence(body, match):
    with pytest.raises(MetricsParseError, match=match) as exc:
        parse_metrics(body, taken_at=1.0)
    assert "\n" not in str(exc.value) and str(exc.value).endswith((".", "?"))


def test_prometheus_text_without_vllm_metrics_is_rejected():
    with pytest.raises(MetricsParseError, match="no vllm"):
        load("metrics_http_only.txt")


def test_openmetrics_body_is_accepted():
    text = (
        "# TYPE vllm:prompt_tokens counter\n"
        'vllm:prompt_tokens_total{engine="0",model_name="m"} 7.0\n'
        'vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e+09\n'
        "# EOF\n"
    )
    s = parse_metrics(text, taken_at=1.0)
    assert s.prompt_tokens == 7 and s.series_created_at == 1.7e9


def test_snapshot_round_trips_through_json():
    s = load("metrics_0.33_synthetic.txt")
    again = type(s).model_validate_json(s.model_dump_json())
    assert again == s


# ------------------------------------------------------------------------------------------------ quantiles


def test_histogram_quantile_matches_prometheus_rules():
    buckets = [(0.1, 1.0), (0.25, 2.0), (0.5, 3.0), (0.75, 4.0)]
    assert histogram_quantile(0.5, buckets, 4) == pytest.approx(0.25)
    assert histogram_quantile(0.25, buckets, 4) == pytest.approx(0.1)  # lower bound of first bucket is 0
    assert histogram_quantile(0.125, buckets, 4) == pytest.approx(0.05)
    # Rank in the +Inf bucket: the highest finite bound is the best we can say.
    assert histogram_quantile(0.99, [(1.0, 1.0)], 10) == 1.0
    assert histogram_quantile(0.5, buckets, 0) is None


def test_summary_of_empty_histogram_has_no_mean_or_percentiles():
    s = summarize([(0.1, 0.0), (float("inf"), 0.0)], 0.0, 0.0)
    assert s.count == 0 and s.mean is None and s.p50 is None and s.p99 is None


# ------------------------------------------------------------------------------------------------ rates


def test_delta_between_two_scrapes():
    before = load("metrics_0.33_synthetic.txt", taken_at=100.0)
    after = load("metrics_0.33_synthetic_later.txt", taken_at=110.0)
    r = delta(before, after)
    assert r.interval_seconds == 10 and r.restarted is False
    assert r.prompt_tokens_per_s == pytest.approx(2000)  # (30000 - 10000) / 10
    assert r.generation_tokens_per_s == pytest.approx(400)
    assert r.requests_finished == 8 and r.requests_finished_per_s == pytest.approx(0.8)
    assert r.finished_by_reason == {"stop": 6, "length": 2, "abort": 0, "error": 0, "repetition": 0}
    assert r.preemptions_per_s == pytest.approx(0.2)
    assert r.prefix_cache_hit_rate == pytest.approx(2560 / 10240)
    assert r.spec_decode_acceptance_rate == pytest.approx(2580 / 3600)
    assert r.spec_decode_mean_acceptance_length == pytest.approx(1 + 2580 / 1200)
    assert r.spec_decode_per_position_acceptance == pytest.approx([1120 / 1200, 860 / 1200, 600 / 1200])
    # Interval histograms: only the 8 requests observed between the scrapes.
    assert r.ttft.count == 8 and r.ttft.mean == pytest.approx(0.2925)
    assert r.e2e.count == 8 and r.e2e.mean == pytest.approx(2.2)
    assert r.itl.count == 200


def test_delta_detects_restart_by_counter_going_down():
    before = load("metrics_0.33_synthetic_later.txt", taken_at=100.0)
    after = load("metrics_0.33_synthetic.txt", taken_at=110.0)
    r = delta(before, after)
    assert r.restarted is True
    assert r.prompt_tokens_per_s == pytest.approx(1000)  # after's 10000 over the interval, a lower bound
    assert r.requests_finished == 4
    assert r.ttft.count == 4  # after's histogram alone


def test_delta_detects_restart_by_created_timestamp():
    text = (VERSIONS / "metrics_0.33_synthetic.txt").read_text()
    before = parse_metrics(text, taken_at=100.0)
    after = parse_metrics(text.replace("1.7953106955e+09", "1.7953109999e+09"), taken_at=110.0)
    r = delta(before, after)
    assert r.restarted is True and r.prompt_tokens_per_s == pytest.approx(1000)


def test_delta_with_missing_counters_and_no_traffic():
    a = load("metrics_early_v1_no_engine.txt", taken_at=0.0)
    b = load("metrics_early_v1_no_engine.txt", taken_at=5.0)
    r = delta(a, b)
    assert r.prompt_tokens_per_s == 0.0 and r.requests_finished_per_s == 0.0
    assert r.preemptions_per_s is None and r.prefix_cache_hit_rate is None
    assert r.spec_decode_acceptance_rate is None and r.ttft is None


def test_delta_rejects_non_increasing_time():
    s = load("metrics_0.33_synthetic.txt", taken_at=5.0)
    with pytest.raises(ValueError, match="later"):
        delta(s, s)


# ------------------------------------------------------------------------------ real 0.32 CPU recordings

needs_real = pytest.mark.skipif(
    not (REAL / "metrics_idle.txt").exists(), reason="real fixtures not recorded yet"
)


@needs_real
def test_real_idle_scrape():
    s = parse_metrics((REAL / "metrics_idle.txt").read_text(), taken_at=0.0)
    assert s.engine_count == 1
    assert s.requests_running == 0 and s.requests_waiting == 0
    assert s.cache_config is not None and s.cache_config.kv_cache_size_tokens > 0
    assert s.spec_decode is None


@needs_real
def test_real_after_load_scrape_has_traffic():
    idle = parse_metrics((REAL / "metrics_idle.txt").read_text(), taken_at=0.0)
    busy = parse_metrics((REAL / "metrics_after_load.txt").read_text(), taken_at=60.0)
    assert busy.requests_finished > 0 and busy.ttft.count > 0 and busy.e2e.count > 0
    assert busy.generation_tokens > idle.generation_tokens
    r = delta(idle, busy)
    assert r.restarted is False and r.generation_tokens_per_s > 0


@pytest.mark.skipif(not (REAL / "metrics_specdecode.txt").exists(), reason="real fixtures not recorded yet")
def test_real_specdecode_scrape():
    s = parse_metrics((REAL / "metrics_specdecode.txt").read_text(), taken_at=0.0)
    assert s.spec_decode is not None and s.spec_decode.drafts > 0
    assert 0 <= s.spec_decode.acceptance_rate <= 1
    assert s.spec_decode.mean_acceptance_length >= 1
