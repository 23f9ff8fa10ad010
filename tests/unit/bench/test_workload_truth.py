"""No silently wrong workloads (issue 18): cached "unique" prompts, untimeable streams, failed runs.

Each case is what a real GPU showed (vLLM 0.26 on an H100, a random-weights Gemma 4 with a test
tokenizer), reproduced with the fake server over real HTTP.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM
from typer.testing import CliRunner

from inferctl.bench.cachecheck import check
from inferctl.bench.spec import SweepSpec, parse_extra_body
from inferctl.bench.workload import WorkloadError, distinct_single_tokens
from inferctl.cli.app import app
from inferctl.config import Target
from inferctl.errors import ConfigError
from inferctl.ops import bench as ops
from inferctl.report.data import load_run
from inferctl.report.findings import compute

pytestmark = pytest.mark.usefixtures("isolated")  # tests/unit/conftest.py


def _sweep(url: str, tmp: Path, **kw) -> ops.SweepSummary:
    spec = SweepSpec(**{"contexts": [48], "concurrencies": [1, 2], "output_tokens": 4, "requests": 4,
                        "warmup": 0, **kw})
    return asyncio.run(ops.sweep(Target(name="fake", url=url), spec.validate_grid(), root=tmp))


# -- 1. the prompt builder refuses a tokenizer under which its words are not distinct tokens -------------


def test_words_sharing_one_id_are_not_an_alphabet():
    cands = [" the", " of", " and", " to", "a", "b"]
    # " the" and " of" are <unk> (id 3), " and" splits in two: only the words with their own id remain.
    tokenized = [[3], [3], [10, 11], [12], [13], [14]]
    assert distinct_single_tokens(cands, tokenized) == [" to", "a", "b"]


def test_unknown_word_tokenizer_is_refused_in_one_sentence(tmp_path):
    with FakeVLLM(FakeConfig(tokenizer="unk_words")) as fake:
        with pytest.raises(WorkloadError, match="distinct single tokens") as err:
            _sweep(fake.url, tmp_path)
        sent = fake.state.requests
        result = CliRunner().invoke(app, ["bench", "sweep", "--url", fake.url, "-c", "1", "--context", "48",
                                          "--output-tokens", "4", "-n", "2"])
    assert sent == 0  # refused before a single generation request
    assert "\n" not in str(err.value)
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert result.stderr.strip().startswith("error:") and "distinct single tokens" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# -- 2. a stream of tokens without text has its own status and says what to do ----------------------------


def test_tokens_without_text_are_no_text_not_broken_and_the_run_fails(tmp_path):
    with FakeVLLM(FakeConfig(empty_text=True, ttft_ms=1, itl_ms=0.2)) as fake:
        s = _sweep(fake.url, tmp_path, error_threshold=1.0)  # run both cells, do not stop the row
    assert s.status == "failed" and "return_token_ids" in s.reason
    assert all(c.status == "failed" for c in s.cells) and s.cells_failed == 2
    m = s.cells[0].metrics
    assert m.no_text == m.requests == 4 and m.stream_broken == 0 and m.ok == 0
    assert "generated 4 tokens but streamed no text" in m.first_errors[0]
    meta = json.loads((Path(s.path) / "meta.json").read_text())
    assert meta["status"] == "failed" and "streamed no text" in meta["reason"]
    records = [json.loads(x) for x in (Path(s.path) / "requests.jsonl").read_text().splitlines()]
    assert {r["status"] for r in records} == {"no_text"}


def test_return_token_ids_makes_the_same_server_measurable(tmp_path):
    with FakeVLLM(FakeConfig(empty_text=True, ttft_ms=1, itl_ms=0.2)) as fake:
        s = _sweep(fake.url, tmp_path, extra_body=parse_extra_body('{"return_token_ids": true}'))
        bodies = fake.state.seen_payloads
    assert s.status == "complete"
    assert all(c.metrics.ok == 4 and c.metrics.ttft.p50 is not None for c in s.cells)
    assert all(b.get("return_token_ids") is True for b in bodies)


def test_extra_body_refuses_fields_the_benchmark_sets():
    with pytest.raises(ConfigError, match="cannot set stream"):
        parse_extra_body('{"stream": false}')
    with pytest.raises(ConfigError, match="JSON object"):
        parse_extra_body("[1]")


# -- 3. a run whose every request failed is failed: runs list, report, --json, exit code ------------------


def test_failed_run_is_failed_everywhere(tmp_path):
    runs = tmp_path / "runs"
    with FakeVLLM(FakeConfig(fail_every=1)) as fake:
        result = CliRunner().invoke(app, ["bench", "sweep", "--url", fake.url, "-c", "1,2", "--context", "48",
                                          "--output-tokens", "4", "-n", "2", "--warmup", "0", "--json"])
    assert result.exit_code == 1, result.output
    summary = json.loads(result.stdout)
    assert summary["status"] == "failed" and "injected failure" in summary["reason"]
    assert "failed" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    listed = json.loads(CliRunner().invoke(app, ["runs", "list", "--json"]).stdout)
    assert [r["status"] for r in listed["runs"]] == ["failed"]
    run = load_run(str(runs / summary["run_id"]))
    problems = [f.text for f in compute(run).findings if f.severity == "problem"]
    assert any(t.startswith("The run failed:") for t in problems), problems
    report = CliRunner().invoke(app, ["report", summary["run_id"], "--json", "--no-png"])
    assert "The run failed" in report.stdout


def test_a_run_with_one_good_request_is_not_failed(tmp_path):
    with FakeVLLM(FakeConfig(fault_cycle=["500", "500", "500", ""])) as fake:
        s = _sweep(fake.url, tmp_path, concurrencies=[1], requests=8, error_threshold=1.0)
    assert s.status == "complete" and s.cells[0].metrics.ok == 2


# -- 4. the server's prefix cache against what the workload intends ---------------------------------------


def test_cache_check_bounds():
    assert check(None, prefill=100, shared_tokens=10) is None
    ok = check(0.05, prefill=512, shared_tokens=9)
    assert ok is not None and not ok.flagged and ok.text == ""
    bad = check(0.89, prefill=512, shared_tokens=9, preemptions=3)
    assert bad is not None and bad.flagged and "89%" in bad.text and "3 preemptions" in bad.text
    # A workload that shares half its prompt may hit half the cache.
    assert not check(0.55, prefill=512, shared_tokens=256).flagged  # type: ignore[union-attr]


def test_cached_cells_are_flagged_in_json_table_and_report(tmp_path):
    with FakeVLLM(FakeConfig(prefix_cache_hit_rate=0.9, ttft_ms=1, itl_ms=0.2)) as fake:
        result = CliRunner().invoke(app, ["bench", "sweep", "--url", fake.url, "-c", "1,2", "--context", "64",
                                          "--output-tokens", "4", "-n", "2", "--warmup", "0", "--json"])
        table = CliRunner().invoke(app, ["bench", "run", "--url", fake.url, "--context", "64", "-c", "1",
                                         "--output-tokens", "4", "-n", "2", "--warmup", "0"],
                                   env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    for cell in summary["cells"]:
        pc = cell["prefix_cache"]
        assert pc["flagged"] and pc["measured"] == pytest.approx(0.9, abs=0.01)
        assert pc["intended_max"] == pytest.approx((8 + 1) / 64, abs=1e-3)  # template + anchor of 64 tokens
    assert "cache!" in table.stdout and "cached prompts" in table.stdout
    run = load_run(summary["path"])
    found = [f for f in compute(run).findings if "cached prompts" in f.text]
    assert found and found[0].severity == "problem" and set(found[0].cells) == {c["id"] for c in summary["cells"]}


def test_intended_sharing_is_not_flagged(tmp_path):
    # --shared-prefix 40 of 64 tokens: (8 + 1 + 40) / 64 may legitimately come from the cache.
    with FakeVLLM(FakeConfig(prefix_cache_hit_rate=0.7, ttft_ms=1, itl_ms=0.2)) as fake:
        s = _sweep(fake.url, tmp_path, contexts=[64], shared_prefix=40)
    assert all(c.prefix_cache is not None and not c.prefix_cache.flagged for c in s.cells)
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2)) as fake:  # no prefix-cache counters exposed
        s = _sweep(fake.url, tmp_path)
    assert all(c.prefix_cache is None for c in s.cells)


# -- 5. server-side truth next to the client's numbers --------------------------------------------------


def test_client_medians_agree_with_the_servers_histograms(tmp_path):
    with FakeVLLM(FakeConfig(ttft_ms=65, itl_ms=2, histograms=True)) as fake:
        s = _sweep(fake.url, tmp_path, concurrencies=[1], output_tokens=8, requests=6)
    rows = {a.metric: a for a in s.cells[0].agreement}
    assert set(rows) == {"ttft", "tpot", "e2e"}
    ttft = rows["ttft"]
    assert ttft.server_bucket_ms == [60.0, 80.0] and ttft.agrees, ttft
    run = load_run(s.path)
    found = [f for f in compute(run).findings if f.kind == "server_agreement"]
    assert found and found[0].severity == "info"
    from inferctl.report.markdown import run_markdown

    md = run_markdown(run, compute(run), [])
    assert "## Server vs client (p50, ms)" in md and "60–80" in md


def test_a_client_slower_than_the_server_says_is_flagged(tmp_path):
    # The server's own clock says ~15 ms to first token; its clients see ~65 ms.
    with FakeVLLM(FakeConfig(ttft_ms=65, itl_ms=2, histograms=True, histogram_shift_ms=50)) as fake:
        s = _sweep(fake.url, tmp_path, concurrencies=[1], output_tokens=8, requests=6)
    ttft = next(a for a in s.cells[0].agreement if a.metric == "ttft")
    assert not ttft.agrees and "added time the engine did not spend" in ttft.text
    found = [f for f in compute(load_run(s.path)).findings if f.kind == "server_agreement"]
    assert found[0].severity == "warning" and s.cells[0].id in found[0].cells
