"""Sweeps against the fake server: the run directory is complete, consistent and resumable."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM

from inferctl.bench.spec import SweepSpec, parse_int_list, preset
from inferctl.bench.stats import parse_slo
from inferctl.bench.store import RunDir, seed_csv
from inferctl.config import Target
from inferctl.errors import ConfigError
from inferctl.ops import bench as ops

ROOT = Path(__file__).resolve().parents[3]


def _sweep(url: str, tmp: Path, **kw) -> ops.SweepSummary:
    spec = SweepSpec(**{"contexts": [32, 64], "concurrencies": [1, 2], "output_tokens": 4, "requests": 6,
                        "warmup": 1, **kw})
    return asyncio.run(ops.sweep(Target(name="fake", url=url), spec.validate_grid(), root=tmp))


def test_sweep_leaves_a_consistent_run_directory(tmp_path: Path) -> None:
    with FakeVLLM(FakeConfig(ttft_ms=2, itl_ms=0.5, max_model_len=100)) as fake:
        s = _sweep(fake.url, tmp_path, contexts=[32, 64, 120], slos=[parse_slo("ttft_p95_ms=1000")])
        served = fake.state.requests
        server_prompt = fake.state.prompt_tokens
    assert s.status == "complete" and s.cells_total == 6
    assert s.cells_complete == 4 and s.cells_infeasible == 2  # 120 + 4 > max_model_len 100
    store = RunDir(Path(s.path))
    meta = json.loads((store.path / "meta.json").read_text())
    assert meta["format_version"] == 1 and meta["source"] == "measured" and meta["status"] == "complete"
    assert meta["model"] == "fake-model" and meta["max_model_len"] == 100 and meta["vllm_version"] == "0.32.0"
    assert meta["grid"]["contexts"] == [32, 64, 120]
    assert meta["workload"]["chat_template"] is True and meta["workload"]["chat_template_tokens"] == 8
    recs = list(store.requests())
    sent = [r for r in recs if r.status != "infeasible"]
    assert len(sent) == served  # every request the server saw is a record, and nothing else
    assert sum(r.prompt_tokens for r in sent) == server_prompt
    for cell in store.cells():
        mine = [r for r in recs if r.cell == cell.id]
        assert cell.metrics.requests == sum(not r.warmup for r in mine)
        if cell.status == "complete":
            assert cell.metrics.ok == cell.metrics.requests == 6
            assert cell.metrics.prompt_tokens_mean == cell.context  # exact prefill, template included
            assert cell.metrics.completion_tokens_total == 6 * 4
            assert cell.metrics.goodput is not None and cell.metrics.slo_met
            assert cell.server["available"] and cell.server["generation_tokens"] >= 6 * 4
        else:
            assert cell.metrics.infeasible == 6 and "max_model_len" in cell.reason
    lines = (store.path / "cells.csv").read_text().splitlines()
    assert len(lines) == 7
    seed = seed_csv(store.cells()).splitlines()
    assert seed[0].startswith("context_size,concurrency,success_rate,avg_latency,p95_latency,req_per_sec,"
                              "total_time,num_success,num_failure")
    assert len(seed) == 7
    server_lines = (store.path / "server_metrics.jsonl").read_text().splitlines()
    assert len(server_lines) == 8  # before + after for each measured cell


def test_row_stops_early_when_error_rate_passes_threshold(tmp_path: Path) -> None:
    # Every request fails: the first cell of each row fails, the rest of the row is skipped.
    with FakeVLLM(FakeConfig(ttft_ms=1, fault_cycle=["503"])) as fake:
        s = _sweep(fake.url, tmp_path, concurrencies=[1, 2, 4], error_threshold=0.5)
    statuses = Counter(c.status for c in s.cells)
    assert statuses == {"failed": 2, "skipped": 4}  # every request of the first cells failed
    assert s.status == "failed"
    assert all("row stopped" in c.reason for c in s.cells if c.status == "skipped")
    assert all(c.metrics.http_codes == {"503": 6} for c in s.cells if c.status == "failed")


def test_resume_runs_only_missing_cells_and_counts_nothing_twice(tmp_path: Path) -> None:
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2)) as fake:
        s = _sweep(fake.url, tmp_path)
        store = RunDir(Path(s.path))
        # Simulate a kill in the middle of cell 3: drop its cell line, leave partial records behind.
        lines = (store.path / "cells.jsonl").read_text().splitlines()
        (store.path / "cells.jsonl").write_text("\n".join(lines[:2]) + "\n")
        partial = [json.loads(x) for x in (store.path / "requests.jsonl").read_text().splitlines()]
        third = json.loads(lines[2])["id"]
        fourth = json.loads(lines[3])["id"]
        keep = [p for p in partial if p["cell"] != fourth]  # cell 4 never started; cell 3 is partial
        with (store.path / "requests.jsonl").open("w") as f:
            for p in keep:
                f.write(json.dumps(p) + "\n")
            f.write('{"cell": "torn')  # a line cut by the kill
        before = fake.state.requests
        r = asyncio.run(ops.sweep(None, None, root=tmp_path, resume=store.path.name))
        rerun = fake.state.requests - before
    assert r.status == "complete" and r.cells_complete == 4
    assert rerun == 2 * (6 + 1)  # two cells again, warm-up included; the two finished ones untouched
    cells = {c.id: c for c in RunDir(Path(r.path)).cells()}
    assert cells[third].attempt == 1  # its partial attempt 0 records are kept but not counted
    counted = list(RunDir(Path(r.path)).requests())
    keys = Counter((x.cell, x.index) for x in counted)
    assert max(keys.values()) == 1
    assert all(c.metrics.requests == 6 for c in cells.values())
    meta = RunDir(Path(r.path)).read_meta()
    assert meta.status == "complete" and len(meta.resumed_at) == 1


def test_kill_and_resume_a_real_cli_sweep(tmp_path: Path) -> None:
    """SIGKILL an `inferctl bench sweep` subprocess mid-way, resume it, and check the run is whole."""
    env = {**os.environ, "INFERCTL_RUNS_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", "from inferctl.cli.app import main; main()"]
    with FakeVLLM(FakeConfig(ttft_ms=2, itl_ms=2)) as fake:
        args = [*cmd, "bench", "sweep", "--url", fake.url, "--concurrency", "1,2,4", "--context", "32,64",
                "--output-tokens", "8", "--requests", "40", "--warmup", "1", "-q"]
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        run_dir = None
        while time.monotonic() < deadline:
            dirs = [p for p in tmp_path.iterdir() if (p / "cells.jsonl").exists()]
            if dirs:
                run_dir = dirs[0]
                done = (run_dir / "cells.jsonl").read_text().count("\n")
                if done >= 2 and (run_dir / "requests.jsonl").stat().st_size > 0:
                    break
            time.sleep(0.02)
        assert run_dir is not None, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        done_before = (run_dir / "cells.jsonl").read_text().count("\n")
        assert done_before < 6, "the sweep finished before it could be killed"
        out = subprocess.run([*cmd, "bench", "sweep", "--resume", run_dir.name, "--json"], env=env,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        sent_to_server = fake.state.requests
    summary = json.loads(out.stdout)
    assert summary["status"] == "complete" and summary["cells_complete"] == 6
    store = RunDir(run_dir)
    counted = list(store.requests())
    keys = Counter((r.cell, r.index) for r in counted)
    assert max(keys.values()) == 1  # no request counted twice
    for cell in store.cells():
        assert cell.metrics.requests == 40 and cell.metrics.ok == 40
    every = list(store.requests(counted_only=False))
    assert len(every) <= sent_to_server  # at most the in-flight requests of the kill were lost


def test_grid_parsing_and_presets() -> None:
    assert parse_int_list("1..16", "--concurrency") == [1, 2, 4, 8, 16]
    assert parse_int_list("1,3", "--concurrency") == [1, 3]
    seed = SweepSpec(**preset("seed-grid")).validate_grid()
    assert len(seed.cells()) == 12 * 13 and seed.concurrencies[-1] == 2048 and seed.contexts[0] == 4
    assert len(SweepSpec(**preset("quick")).cells()) == 6
    with pytest.raises(ConfigError):
        preset("nope")
    with pytest.raises(ConfigError):
        SweepSpec(contexts=[], concurrencies=[1]).validate_grid()
    with pytest.raises(ConfigError):
        parse_slo("latency=5")
    slo = parse_slo("tpot_ms=50")
    assert slo.metric == "tpot" and slo.stat == "p95" and slo.limit_ms == 50


def test_a_model_without_chat_template_is_recorded_and_shown(tmp_path: Path) -> None:
    notes: list[str] = []

    class Notes(ops.NullReporter):
        def note(self, text: str) -> None:
            notes.append(text)

    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2, chat_template=False)) as fake:
        spec = SweepSpec(contexts=[32], concurrencies=[1], output_tokens=2, requests=2, warmup=0).validate_grid()
        s = asyncio.run(ops.sweep(Target(name="fake", url=fake.url), spec, root=tmp_path, reporter=Notes()))
    meta = RunDir(Path(s.path)).read_meta()
    assert meta.workload["chat_template"] is False and meta.workload["chat_template_tokens"] is None
    assert "chat template" in meta.workload["chat_template_error"]
    assert any("chat template" in n for n in notes)
