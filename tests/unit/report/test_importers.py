"""Imports of sample files written here, in each supported format, and refusal of unknown ones."""

from __future__ import annotations

import json

import pytest

from inferctl.bench.store import RunDir, seed_csv
from inferctl.errors import ConfigError
from inferctl.ops.imports import import_files
from inferctl.report.importers import parse

VLLM = {
    "date": "20261101-101010", "backend": "vllm", "model_id": "google/gemma-4-12B-it", "num_prompts": 64,
    "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 16, "duration": 20.0, "completed": 62,
    "failed": 2, "total_input_tokens": 62 * 1024, "total_output_tokens": 62 * 128, "request_throughput": 3.1,
    "request_goodput": 2.5, "output_throughput": 396.8, "total_token_throughput": 3571.2, "mean_ttft_ms": 210.0,
    "median_ttft_ms": 180.0, "p99_ttft_ms": 700.0, "mean_tpot_ms": 30.0, "median_tpot_ms": 29.0,
    "p99_tpot_ms": 45.0, "mean_itl_ms": 29.5, "median_itl_ms": 28.0, "p99_itl_ms": 60.0, "mean_e2el_ms": 4000.0,
    "median_e2el_ms": 3900.0, "p99_e2el_ms": 6000.0, "random_input_len": 1024,
}

GUIDELLM = {"benchmarks": [
    {"scheduler": {"strategy": {"type_": "synchronous"}}, "start_time": 1_790_000_000.0, "duration": 30.0,
     "request_totals": {"successful": 30, "errored": 0, "incomplete": 0},
     "metrics": {"requests_per_second": {"successful": {"mean": 1.0}},
                 "output_tokens_per_second": {"successful": {"mean": 128.0}},
                 "tokens_per_second": {"successful": {"mean": 384.0}},
                 "prompt_token_count": {"successful": {"mean": 256.0, "count": 30}},
                 "output_token_count": {"successful": {"mean": 128.0, "count": 30}},
                 "time_to_first_token_ms": {"successful": {"mean": 50.0, "median": 48.0, "count": 30,
                                                           "percentiles": {"p95": 70.0, "p99": 80.0}}},
                 "inter_token_latency_ms": {"successful": {"mean": 7.0, "median": 7.0, "count": 30,
                                                           "percentiles": {"p95": 8.0}}},
                 "time_per_output_token_ms": {"successful": {"mean": 7.4, "median": 7.4, "count": 30}},
                 "request_latency": {"successful": {"mean": 0.95, "median": 0.94, "count": 30,
                                                    "percentiles": {"p95": 1.1}}}}},
    {"scheduler": {"strategy": {"type_": "concurrent", "streams": 8}}, "duration": 30.0,
     "request_totals": {"successful": 200, "errored": 4, "incomplete": 1},
     "metrics": {"requests_per_second": {"successful": {"mean": 6.7}},
                 "output_tokens_per_second": {"successful": {"mean": 857.6}},
                 "prompt_token_count": {"successful": {"mean": 256.0}},
                 "output_token_count": {"successful": {"mean": 128.0}},
                 "time_to_first_token_ms": {"successful": {"mean": 90.0, "median": 85.0}},
                 "request_latency": {"successful": {"mean": 1.2, "median": 1.19}}}},
]}

SEED = ("context_size,concurrency,success_rate,avg_latency,p95_latency,req_per_sec,total_time,num_success,"
        "num_failure\r\n8,1,1.0,0.05,0.05,20.0,0.05,1,0\r\n8,2,1.0,0.06,0.07,33.3,0.06,2,0\r\n"
        "16384,2,0.5,30.0,59.0,0.02,60.0,1,1\r\n")


def test_vllm_bench_serve_json() -> None:
    p = parse("r.json", json.dumps(VLLM))
    (c,) = p.cells
    assert p.format == "vllm-bench-serve" and p.model == "google/gemma-4-12B-it"
    assert (c.id, c.context, c.concurrency, c.output_tokens) == ("ctx1024-c16", 1024, 16, 128)
    m = c.metrics
    assert (m.ok, m.errors, m.error_rate) == (62, 2, round(2 / 64, 4))
    assert m.request_throughput == 3.1 and m.goodput == 2.5 and m.window_s == 20.0
    assert (m.ttft.mean, m.ttft.p50, m.ttft.p99, m.tpot.p50, m.e2e.p50) == (210.0, 180.0, 700.0, 29.0, 3900.0)


def test_vllm_detailed_arrays_give_full_distributions_and_jsonl_appends() -> None:
    detailed = dict(VLLM, ttfts=[0.1, 0.2, 0.3, 0.4], itls=[[0.01, 0.02]] * 4, max_concurrency=4)
    lines = json.dumps(detailed) + "\n" + json.dumps(dict(VLLM, max_concurrency=32)) + "\n"
    p = parse("r.jsonl", lines)
    assert [c.concurrency for c in p.cells] == [4, 32]
    assert p.cells[0].metrics.ttft.p50 == pytest.approx(250.0) and p.cells[0].metrics.itl.count == 8
    assert p.cells[0].metrics.e2e.max == pytest.approx(430.0)  # ttft + Σ itl of the slowest request


def test_vllm_open_loop_rate_is_a_rate_cell() -> None:
    (c,) = parse("r.json", json.dumps(dict(VLLM, request_rate=4.0, max_concurrency=None))).cells
    assert c.rate == 4.0 and c.id == "ctx1024-r4"


def test_guidellm_json() -> None:
    p = parse("g.json", json.dumps(GUIDELLM))
    assert p.format == "guidellm" and [c.id for c in p.cells] == ["ctx256-c1", "ctx256-c8"]
    sync, conc = p.cells
    assert sync.metrics.ttft.p95 == 70.0 and sync.metrics.tpot.p50 == 7.0  # ITL in GuideLLM = our TPOT
    assert sync.metrics.e2e.p50 == pytest.approx(940.0)                  # seconds -> ms
    assert (conc.metrics.ok, conc.metrics.errors, conc.metrics.timeout) == (200, 5, 1)


def test_seed_csv_with_crlf_and_partial_failure() -> None:
    p = parse("benchmark_sweep_results.csv", SEED)
    assert p.format == "seed-csv" and len(p.cells) == 3
    c = p.cells[-1]
    assert (c.context, c.concurrency, c.metrics.ok, c.metrics.errors) == (16384, 2, 1, 1)
    assert c.metrics.e2e.mean == 30000.0 and c.metrics.e2e.p95 == 59000.0
    assert c.output_tokens == 1 and any("max_tokens=1" in w for w in p.warnings)


def test_seed_status_column_marks_skipped_cells() -> None:
    text = "concurrency,context_len,throughput_req_sec,avg_latency_s,status\n4,8192,0,0,skipped_capacity_limit\n" \
           "4,128,5.0,0.8,success\n"
    cells = {c.context: c for c in parse("grid.csv", text, output_tokens=10).cells}
    assert cells[8192].status == "infeasible" and "skipped_capacity_limit" in cells[8192].reason
    assert cells[128].metrics.output_throughput == 50.0


def test_our_seed_export_round_trips(tmp_path) -> None:
    from tests.unit.report.runs import knee_run

    exported = seed_csv(knee_run().cells)
    back = {c.id: c for c in parse("x.csv", exported).cells}
    for c in knee_run().cells:
        assert back[c.id].metrics.request_throughput == pytest.approx(c.metrics.request_throughput, rel=1e-3)
        assert back[c.id].output_tokens == c.output_tokens
        assert back[c.id].metrics.ttft.p95 == pytest.approx(c.metrics.ttft.p95, rel=1e-3)


@pytest.mark.parametrize("text, match", [
    ('{"hello": 1}', "neither vllm bench serve"), ("just some text", "Cannot tell the format"),
    ("a,b\n1,2\n", "no context and concurrency columns"), ("", "is empty"), ("{not json", "not valid JSON"),
])
def test_unknown_formats_are_one_sentence_errors(text, match) -> None:
    with pytest.raises(ConfigError, match=match):
        parse("f", text)


def test_import_writes_an_imported_run(tmp_path) -> None:
    f = tmp_path / "benchmark_sweep_results.csv"
    f.write_text(SEED, encoding="utf-8")
    res = import_files([f], root=tmp_path / "runs", label="seed-l4", hardware="cloudrun-l4")
    store = RunDir(tmp_path / "runs" / res.run_id)
    meta = store.read_meta()
    assert meta.source == "imported" and meta.engine["hardware"] == "cloudrun-l4"
    assert meta.grid["contexts"] == [8, 16384] and meta.grid["concurrencies"] == [1, 2]
    assert [c.id for c in store.cells()] == ["ctx8-c1", "ctx8-c2", "ctx16384-c2"] and res.cells == 3


# Pasted verbatim from the AI-Hypercomputer/tpu-recipes Llama3.x recipe (commit b709d73, TPU v6e-8,
# Llama-3.3-70B-Instruct, `vllm bench serve --max-concurrency 64`), as people paste it into issues.
PASTED_V6E = """
With `MAX_CONCURRENCY=64`:

```text
============ Serving Benchmark Result ============
Successful requests:                     3000
Failed requests:                         0
Maximum request concurrency:             64
Benchmark duration (s):                  1202.50
Total input tokens:                      2997000
Total generated tokens:                  3000000
Request throughput (req/s):              2.49
Output token throughput (tok/s):         2494.80
Peak output token throughput (tok/s):    2872.00
Peak concurrent requests:                77.00
Total Token throughput (tok/s):          4987.10
---------------Time to First Token----------------
Mean TTFT (ms):                          251.04
Median TTFT (ms):                        198.81
P99 TTFT (ms):                           2501.65
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          25.35
Median TPOT (ms):                        25.40
P99 TPOT (ms):                           25.43
---------------Inter-token Latency----------------
Mean ITL (ms):                           25.35
Median ITL (ms):                         23.11
P99 ITL (ms):                            40.75
==================================================
```
"""

# An older benchmark_serving.py block (no 'Failed requests' or concurrency line: every prompt sent at once),
# from dennislee22/vLLM-benchmarking README (A100 80GB, Qwen2-7B-Instruct, 10 prompts, random 1024/1024).
PASTED_A100_BURST = ("""
============ Serving Benchmark Result ============
Successful requests:                     10
Benchmark duration (s):                  14.30
Total input tokens:                      10239
Total generated tokens:                  10240
Request throughput (req/s):              0.70
Output token throughput (tok/s):         715.92
Total Token throughput (tok/s):          1431.76
---------------Time to First Token----------------
Mean TTFT (ms):                          488.52
Median TTFT (ms):                        511.95
P99 TTFT (ms):                           723.97
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          13.47
Median TPOT (ms):                        13.45
P99 TPOT (ms):                           13.79
---------------Inter-token Latency----------------
Mean ITL (ms):                           13.48
Median ITL (ms):                         13.09
P99 ITL (ms):                            19.63
==================================================
""").replace("\n", "     \n")  # the script pads every value with spaces


def test_pasted_vllm_bench_serve_text_block() -> None:
    p = parse("pasted.txt", PASTED_V6E)
    assert p.format == "vllm-bench-serve-text" and len(p.cells) == 1
    c = p.cells[0]
    assert c.concurrency == 64 and c.rate is None
    assert c.context == 999 and c.output_tokens == 1000  # mean prompt / output length: the block prints totals
    m = c.metrics
    assert (m.ok, m.errors, m.request_throughput, m.output_throughput) == (3000, 0, 2.49, 2494.80)
    assert (m.ttft.mean, m.ttft.p50, m.ttft.p99) == (251.04, 198.81, 2501.65)
    assert (m.tpot.mean, m.tpot.p50, m.itl.p50) == (25.35, 25.40, 23.11)


def test_pasted_burst_block_without_concurrency_line_is_a_burst_of_all_prompts(tmp_path) -> None:
    both = PASTED_A100_BURST + "\nsome log line: not a number\n" + PASTED_V6E
    p = parse("two.txt", both)
    assert [c.concurrency for c in p.cells] == [64, 10]  # rows by context: 999 (mean prompt), then 1024
    burst = next(c for c in p.cells if c.concurrency == 10)
    assert burst.context == 1024 and burst.metrics.tpot.p50 == 13.45 and burst.metrics.errors == 0
    f = tmp_path / "a100.txt"
    f.write_text(PASTED_A100_BURST, encoding="utf-8")
    res = import_files([f], root=tmp_path / "runs")
    assert res.format == "vllm-bench-serve-text" and res.cells == 1 and res.loads == [10.0]


def test_text_without_a_complete_block_is_refused() -> None:
    with pytest.raises(ConfigError, match="no complete 'Serving Benchmark Result' block"):
        parse("f.txt", "============ Serving Benchmark Result ============\nSuccessful requests: 3\n")


def test_corpus_file_imports_one_run_per_entry(tmp_path) -> None:
    from importlib import resources

    src = resources.files("inferctl.catalog").joinpath("data/measurements/tpu-recipes-llama3x-v6e.toml")
    f = tmp_path / "corpus.toml"
    f.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")
    res = import_files([f], root=tmp_path / "runs")
    assert res.format == "inferctl-corpus" and len(res.runs) == 2 and res.cells == 2
    store = RunDir(tmp_path / "runs" / res.runs[1])
    meta = store.read_meta()
    assert meta.model == "meta-llama/Llama-3.3-70B-Instruct" and meta.engine["accelerator"] == "tpu-v6e"
    assert meta.engine["imported_from"]["source"].startswith("https://github.com/AI-Hypercomputer/tpu-recipes/")
    (cell,) = store.cells()
    assert (cell.context, cell.concurrency, cell.output_tokens) == (1000, 128, 1000)
    assert cell.metrics.request_throughput == 3.54 and cell.metrics.tpot.p50 == 35.43
