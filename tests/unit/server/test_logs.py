"""Parsing vLLM startup logs of every version into a MemoryLayout, and picking out issues."""

from __future__ import annotations

from pathlib import Path

import pytest

from inferctl.server.logs import extract_log_issues, parse_startup_log

FIXTURES = Path(__file__).parents[2] / "fixtures"
VERSIONS = FIXTURES / "versions"
REAL = FIXTURES / "vllm-0.32-cpu"


def layout(name: str):
    return parse_startup_log((VERSIONS / name).read_text())


def test_0_7_x_blocks_and_gb_units():
    m = layout("log_0.7.x.txt")
    assert m.vllm_version == "0.7.0" and m.device_type == "GPU"
    assert m.model_load_memory_gib == pytest.approx(67.7229)
    assert m.num_gpu_blocks == 1381 and m.kv_cache_tokens is None
    assert (m.max_concurrency, m.max_concurrency_tokens_per_request) == (10.79, 2048)


def test_0_7_3_two_line_kv_capacity():
    m = layout("log_0.7.3.txt")
    assert m.kv_cache_tokens == 2042016 and m.device_type == "GPU"
    assert (m.max_concurrency, m.max_concurrency_tokens_per_request) == (997.08, 2048)


def test_0_9():
    m = layout("log_0.9.txt")
    assert m.torch_compile_seconds == 45.81
    assert m.kv_cache_tokens == 1131008 and m.num_gpu_blocks == 70688
    assert (m.max_concurrency, m.max_concurrency_tokens_per_request) == (8.63, 131072)
    assert (m.graph_capture_seconds, m.graph_capture_memory_gib) == (37, 0.45)
    assert m.engine_init_seconds == 90.84  # "took 90.84 seconds"
    assert m.server_url == "http://0.0.0.0:8000"  # "Starting vLLM API server on"


def test_0_2x_banner_version():
    log = (VERSIONS / "log_0.26_gpu_excerpt.txt").read_text().splitlines()[:2]
    m = parse_startup_log("\n".join(log))
    assert m.vllm_version == "0.26.0" and m.model == "/MODELS/DeepSeek-V4-Flash-0731"


def test_0_10_0_11_model_loading_without_memory_word_and_old_stats_line():
    m = layout("log_0.10_0.11.txt")
    assert m.vllm_version == "0.11.0"
    assert (m.model_load_memory_gib, m.model_load_seconds) == (27.5185, 305.873276)
    s = m.latest_stats
    assert s.engine == 0 and s.timestamp == "10-03 07:35:00"
    assert (s.prompt_throughput, s.generation_throughput, s.running, s.waiting) == (120.5, 33.2, 2, 1)
    assert (s.kv_cache_usage, s.prefix_cache_hit_rate) == (0.125, 0.4)
    assert s.spec_decode is None


def test_0_18_warmup_graph_estimate_and_kv_memory():
    m = layout("log_0.18.txt")
    assert (m.warmup_seconds, m.graph_memory_estimate_gib, m.kv_cache_memory_gib) == (0.14, 6.24, 5.16)


def test_0_18_model_loading_with_memory_word():
    line = (
        "(EngineCore pid=196) INFO 08-17 20:38:38 [gpu_model_runner.py:5405] "
        "Model loading took 19.75 GiB memory and 6.356814 seconds\n"
    )
    m = parse_startup_log(line)
    assert (m.model_load_memory_gib, m.model_load_seconds) == (19.75, 6.356814)


def test_0_26_real_excerpt_full_startup():
    m = layout("log_0.26_gpu_excerpt.txt")
    assert m.vllm_version == "0.26.0" and m.device_type == "GPU"
    assert m.model == "/MODELS/DeepSeek-V4-Flash-0731" and m.served_model_name == "deepseek-v4-flash-0731"
    # The draft model logs its own architecture and max len afterwards; the target's come first.
    assert m.architecture == "DeepseekV4ForCausalLM" and m.max_model_len == 65536
    assert m.dtype == "bfloat16" and m.kv_cache_dtype == "fp8" and m.block_size == 256
    assert m.max_num_batched_tokens == 8192
    assert m.weights_load_seconds == 206.61  # the target's, not the drafter's 15.31
    assert (m.model_load_memory_gib, m.model_load_seconds) == (156.32, 233.014771)
    assert (m.kv_cache_memory_gib, m.kv_cache_tokens) == (86.74, 913657)
    assert (m.max_concurrency, m.max_concurrency_tokens_per_request) == (13.94, 65536)
    assert (m.graph_capture_seconds, m.graph_capture_memory_gib) == (171, 3.06)
    assert m.engine_init_seconds == 1115.80
    assert m.server_url == "http://127.0.0.1:8000"
    assert m.startups_seen == 1 and m.latest_stats is None


def test_0_32_cpu_combined_kv_line():
    m = layout("log_0.32_cpu_excerpt.txt")
    assert m.device_type == "CPU"
    assert m.kv_cache_tokens == 2003249
    assert (m.max_concurrency, m.max_concurrency_tokens_per_request) == (978.15, 2048)
    assert m.weights_load_seconds == 0.01 and m.engine_init_seconds == 57.95
    assert m.server_url == "http://0.0.0.0:8123"
    s = m.latest_stats
    assert (s.prompt_throughput, s.generation_throughput, s.running, s.waiting) == (864.9, 719.1, 5, 0)
    assert s.kv_cache_usage == 0.0 and s.prefix_cache_hit_rate == 0.0


def test_tpu_lines():
    m = layout("log_tpu_synthetic.txt")
    assert m.device_type == "TPU" and m.vllm_version == "0.32.0"
    assert m.model == "google/gemma-4-12b-it" and m.architecture == "Gemma4ForConditionalGeneration"
    assert (m.kv_cache_dtype, m.block_size, m.max_num_batched_tokens) == ("fp8", 256, 1024)
    t = m.tpu_memory
    assert (t.total_hbm_limit_gb, t.total_hbm_limit_cap_gb, t.total_hbm_used_gb, t.total_hbm_avail_gb) == (
        31.25, 28.12, 24.5, 3.62,
    )  # fmt: skip
    h = m.hybrid_kv_layout
    assert (h.num_kv_cache_groups, h.num_kv_cache_tensors, h.num_blocks, h.duplicate_shared_layers) == (
        2, 8, 1024, False,
    )  # fmt: skip
    assert (m.padding_layers, m.padding_max_waste_percent) == (2, 4.17)
    assert m.kv_cache_tokens == 262144 and m.max_concurrency == 8.0


def test_spec_decode_stats_line_is_attached_to_the_latest_engine_line():
    m = layout("log_stats_specdecode.txt")
    s = m.latest_stats
    assert s.timestamp == "08-04 21:02:08" and s.prefix_cache_hit_rate == pytest.approx(0.837)
    sd = s.spec_decode
    assert (sd.mean_acceptance_length, sd.accepted_tokens, sd.drafted_tokens) == (7.5, 39, 42)
    assert (sd.accepted_throughput, sd.drafted_throughput) == (3.9, 4.2)
    assert sd.acceptance_rate == pytest.approx(0.929)
    assert sd.per_position_acceptance == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5]
    assert m.found_any is False  # stats lines are not startup lines


def test_restarted_log_reports_the_last_startup():
    first = (VERSIONS / "log_tpu_synthetic.txt").read_text()
    second = (
        "(APIServer pid=9) INFO 11-22 01:26:00 [api_server.py:1272] vLLM API server version 0.32.0\n"
        "(APIServer pid=9) INFO 11-22 01:26:00 [utils.py:263] non-default args: {'model_tag': '/tmp/tiny', "
        "'model': '/tmp/tiny', 'served_model_name': ['tiny-gemma4'], 'max_model_len': 2048}\n"
        + (VERSIONS / "log_0.32_cpu_excerpt.txt").read_text()
    )
    m = parse_startup_log(first + second)
    assert m.startups_seen == 2
    assert m.device_type == "CPU" and m.model == "/tmp/tiny" and m.served_model_name == "tiny-gemma4"
    assert m.kv_cache_tokens == 2003249 and m.server_url == "http://0.0.0.0:8123"
    assert m.tpu_memory is None and m.block_size is None  # nothing leaks from the first startup


def test_ansi_colours_and_bare_lines():
    line = (
        "\x1b[32m(EngineCore pid=15724)\x1b[0m \x1b[32mINFO\x1b[0m \x1b[90m11-22 01:28:06\x1b[0m "
        "\x1b[90m[kv_cache_utils.py:2327]\x1b[0m CPU KV cache size: 2,003,249 tokens, Maximum concurrency "
        "for 2,048 tokens per request: 978.15x\n"
    )
    assert parse_startup_log(line).kv_cache_tokens == 2003249
    bare = "Available KV cache memory: 3.5 GiB\nUsing max model len 4096\n"
    m = parse_startup_log(bare)
    assert (m.kv_cache_memory_gib, m.max_model_len) == (3.5, 4096)


def test_torch_compile_forms():
    log = (
        "(EngineCore pid=1) INFO 06-23 10:26:00 [backends.py:1] Dynamo bytecode transform time: 5.50 s\n"
        "(EngineCore pid=1) INFO 06-23 10:26:10 [backends.py:2] "
        "Compiling a graph for compile range (1, 2048) takes 10.25 s\n"
        "(Worker_TP1 pid=2) INFO 06-23 10:26:10 [backends.py:2] "
        "Compiling a graph for compile range (1, 2048) takes 11.00 s\n"
        "(EngineCore pid=1) INFO 06-23 10:26:12 [backends.py:2] "
        "Compiling a graph for compile range (2049, 8192) takes 2.25 s\n"
    )
    m = parse_startup_log(log)
    assert m.dynamo_transform_seconds == 5.5
    assert m.graph_compile_seconds == 12.5  # one worker's graphs; TP peers compile the same ones
    assert m.torch_compile_seconds == 18.0
    total = parse_startup_log(
        log + "INFO 06-23 10:26:13 [monitor.py:33] torch.compile takes 19.1 s in total\n"
    )
    assert total.torch_compile_seconds == 19.1
    init = parse_startup_log(
        "INFO 01-01 00:00:00 [core.py:396] init engine (profile, create kv cache, warmup model) took 80.00 s "
        "(compilation: 30.50 s)\n"
    )
    assert (init.engine_init_seconds, init.torch_compile_seconds) == (80.0, 30.5)


def test_nothing_found():
    m = parse_startup_log('INFO:     127.0.0.1:48008 - "GET /health HTTP/1.1" 200 OK\nhello\n')
    assert m.found_any is False and m.found_fields == [] and m.startups_seen == 0
    assert parse_startup_log("").found_any is False


# ------------------------------------------------------------------------------------------------ issues

ISSUE_LOG = (VERSIONS / "log_issues.txt").read_text()


def test_extract_issues():
    issues = extract_log_issues(ISSUE_LOG)
    expected = [
        ("WARNING", "python_warning", "FutureWarning: Using `TRANSFORMERS_CACHE`"),
        ("WARNING", "log", "VLLM_USE_BREAKABLE_CUDAGRAPH is set."),
        ("ERROR", "log", "EngineCore failed to start."),
        ("ERROR", "traceback", "ValueError: To serve at least one reques"),
        ("ERROR", "uvicorn", "Exception in ASGI application"),
        ("ERROR", "traceback", "torch.OutOfMemoryError: CUDA out of memor"),
        ("CRITICAL", "log", "MQLLMEngine is already dead, terminating "),
    ]
    assert len(issues) == len(expected)
    for issue, (severity, kind, start) in zip(issues, expected, strict=True):
        assert (issue.severity, issue.kind) == (severity, kind) and issue.message.startswith(start), issue
    err = issues[2]
    assert (err.line, err.timestamp, err.process, err.source) == (
        4,
        "10-03 07:29:02",
        "EngineCore_DP0",
        "core.py:708",
    )
    assert issues[3].line == 5 and issues[3].process == "EngineCore_DP0"


def test_extract_issues_min_severity():
    errors = extract_log_issues(ISSUE_LOG, min_severity="ERROR")
    assert [i.severity for i in errors] == ["ERROR", "ERROR", "ERROR", "ERROR", "CRITICAL"]
    everything = extract_log_issues(ISSUE_LOG, min_severity="INFO")
    assert everything[0].message == "vLLM API server version 0.11.0"


def test_traceback_without_exception_line_does_not_swallow_the_log():
    log = 'Traceback (most recent call last):\n  File "x", line 1\nWARNING 01-01 00:00:00 [a.py:1] later\n'
    assert [i.message for i in extract_log_issues(log)] == ["later"]


# ------------------------------------------------------------------------------ real 0.32 CPU recordings


@pytest.mark.skipif(not (REAL / "startup.log").exists(), reason="real fixtures not recorded yet")
def test_real_startup_log_agrees_with_metrics():
    from inferctl.server.metrics import parse_metrics

    m = parse_startup_log((REAL / "startup.log").read_text())
    assert m.found_any and m.device_type == "CPU"
    assert m.kv_cache_tokens and m.max_concurrency and m.engine_init_seconds
    assert m.server_url and m.server_url.startswith("http://")
    if (REAL / "metrics_idle.txt").exists():
        snap = parse_metrics((REAL / "metrics_idle.txt").read_text(), taken_at=0.0)
        assert snap.cache_config.kv_cache_size_tokens == m.kv_cache_tokens
        assert snap.cache_config.kv_cache_max_concurrency == pytest.approx(m.max_concurrency, abs=0.01)


@pytest.mark.skipif(not (REAL / "startup_specdecode.log").exists(), reason="real fixtures not recorded yet")
def test_real_specdecode_startup_log():
    m = parse_startup_log((REAL / "startup_specdecode.log").read_text())
    assert m.found_any and m.kv_cache_tokens


# vLLM's memory-profile lines, as gpu_worker.determine_available_memory writes them (the first two at DEBUG
# level: run the server with VLLM_LOGGING_LEVEL=DEBUG to get them). The "Memory profiling takes" line below is
# copied from a public vLLM issue (Qwen3-30B-A3B, --data-parallel-size 2); the others follow vLLM 0.32's format
# strings (vllm/v1/worker/gpu_worker.py, vllm/utils/mem_utils.py).
PROFILE_LOG = """\
(EngineCore_DP0 pid=1) DEBUG 11-20 10:00:01 [gpu_worker.py:300] Initial free memory: 78.69 GiB; Requested memory: 0.900000 (util), 71.27 GiB
(EngineCore_DP0 pid=1) INFO 11-20 10:00:02 [gpu_worker.py:358] Memory profiling takes 7.29 seconds. Total non KV cache memory: 36.07GiB; torch peak memory increase: 5.58GiB; non-torch forward increase memory: 0.61GiB; weights memory: 29.88GiB.
(EngineCore_DP0 pid=1) INFO 11-20 10:00:02 [gpu_worker.py:760] Available KV cache memory: 33.22 GiB
(EngineCore_DP0 pid=1) INFO 11-20 10:00:02 [gpu_worker.py:780] CUDA graph memory profiling is enabled (default since v0.21.0). The current --gpu-memory-utilization=0.9000 is equivalent to --gpu-memory-utilization=0.8750 without CUDA graph memory profiling. To maintain the same effective KV cache size as before, increase --gpu-memory-utilization to 0.9250. To disable, set VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.
"""  # noqa: E501


def test_memory_profile_breakdown_is_read():
    from inferctl.server.logs import parse_startup_log

    m = parse_startup_log(PROFILE_LOG)
    assert m.requested_memory_gib == 71.27 and m.gpu_memory_utilization == 0.9 and m.initial_free_memory_gib == 78.69
    assert m.non_kv_cache_memory_gib == 36.07 and m.torch_peak_increase_gib == 5.58
    assert m.non_torch_increase_gib == 0.61 and m.profiled_weights_memory_gib == 29.88
    # 0.025 of the total memory (71.27 / 0.9 GiB)
    assert m.graph_memory_estimate_gib == round(0.025 * 71.27 / 0.9, 3)
    # The budget identity vLLM uses: available KV = requested - non-KV - CUDA-graph estimate.
    assert round(m.requested_memory_gib - m.non_kv_cache_memory_gib - m.graph_memory_estimate_gib, 2) \
        == m.kv_cache_memory_gib


def test_newer_profile_line_with_total_consumed():
    from inferctl.server.logs import parse_startup_log

    m = parse_startup_log("INFO x [gpu_worker.py:1] Memory profiling takes 31.20 seconds. Total non KV cache memory: "
                          "63.53GiB; torch peak memory increase: 2.04GiB; total consumed (from mem_get_info): "
                          "61.49GiB; weights memory: 55.87GiB.\n")
    assert m.non_kv_cache_memory_gib == 63.53 and m.torch_peak_increase_gib == 2.04
    assert m.non_torch_increase_gib is None and m.profiled_weights_memory_gib == 55.87
