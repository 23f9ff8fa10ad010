"""Multi-process load: the workers share one cell exactly, stream every record back, and die with the parent."""

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

from inferctl.bench import loadgen, workload
from inferctl.bench.loadgen import LoadSpec
from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import RunDir
from inferctl.bench.workers import WorkerError, auto_workers, run_cell_workers, share, worker_loads
from inferctl.config import Target
from inferctl.ops import bench as ops
from inferctl.server.client import VLLMClient

ROOT = Path(__file__).resolve().parents[3]


def _indices(load: LoadSpec, n: int) -> Counter:
    """Global indices each worker would issue (worker k: k, k+n, ...), warm-up flags included."""
    out: Counter = Counter()
    loads = worker_loads(load, n)
    for wl, k in loads:
        for j in range(wl.warmup + (wl.requests or 0)):
            out[(k + j * len(loads), j < wl.warmup)] += 1
    return out


@pytest.mark.parametrize(("conc", "rate", "warmup", "requests", "n"), [
    (5, None, 3, 17, 2), (4, None, 4, 16, 3), (2, None, 1, 7, 4), (None, 50.0, 5, 40, 3), (1, 20.0, 2, 9, 4),
])
def test_workers_share_a_cell_exactly(conc, rate, warmup, requests, n) -> None:
    load = LoadSpec(concurrency=conc, rate=rate, warmup=warmup, requests=requests)
    got = _indices(load, n)
    assert max(got.values()) == 1
    assert sorted(i for i, _ in got) == list(range(warmup + requests))  # no gap, no duplicate
    assert {i for i, w in got if w} == set(range(warmup))  # the global warm-up is the first requests
    loads = worker_loads(load, n)
    if rate is None:
        assert sum(wl.concurrency for wl, _ in loads) == conc  # concurrency split, never multiplied
        assert len(loads) == min(n, conc)
    elif conc:
        assert all(wl.concurrency >= 1 for wl, _ in loads)  # a cap stays a cap


def test_share_and_auto_workers() -> None:
    assert [share(10, 3, k) for k in range(3)] == [4, 3, 3]
    assert auto_workers(16, None, cpus=8) == 1
    assert auto_workers(256, None, cpus=8) == 2
    assert auto_workers(2048, None, cpus=8) == 8
    assert auto_workers(2048, None, cpus=2) == 2
    assert auto_workers(None, 400.0, cpus=8) == 3


async def _prompts(url: str) -> workload.PromptSet:
    async with VLLMClient(Target(name="url", url=url)) as c:
        wl = await workload.prepare(c, "fake-model", api="chat", output_tokens=4)
        return wl.prompt_set("cell", 0, 32)


def test_two_workers_run_a_closed_loop_cell_and_stream_every_record() -> None:
    with FakeVLLM(FakeConfig(ttft_ms=2, itl_ms=0.5, fault_cycle=["", "", "", "503"])) as fake:
        ps = asyncio.run(_prompts(fake.url))
        before = fake.state.requests
        seen = []
        load = LoadSpec(concurrency=4, requests=30, warmup=2)
        run = asyncio.run(run_cell_workers(Target(name="url", url=fake.url), ps, load, workers=2, timeout=10,
                                           sink=seen.append))
        served = fake.state.requests - before
        max_running = fake.state.max_running
    assert run.workers == 2 and run.aborted is None
    assert len(seen) == len(run.records) == served == 32  # every request the server saw, once
    assert sorted(r.index for r in seen) == list(range(32))
    assert {r.worker for r in seen} == {0, 1}
    assert sum(r.warmup for r in seen) == 2 and {r.index for r in seen if r.warmup} == {0, 1}
    statuses = Counter(r.status for r in seen)
    assert statuses["http_error"] == 8 and statuses["ok"] == 24  # errors are values here too
    assert max_running <= 4
    assert run.loop_lags and run.cpu_seconds > 0
    ok = [r for r in seen if r.status == "ok"]
    assert all(r.send <= r.first_token <= r.end <= r.done for r in ok)  # one clock across processes
    assert all(r.completion_tokens == 4 and len(r.chunks) == 4 for r in ok)


def test_two_workers_keep_the_single_process_arrival_schedule() -> None:
    load = LoadSpec(concurrency=None, rate=400.0, requests=40, warmup=0, seed=11)
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2)) as fake:
        ps = asyncio.run(_prompts(fake.url))
        run = asyncio.run(run_cell_workers(Target(name="url", url=fake.url), ps, load, workers=2, timeout=10))
    sched = [r.scheduled for r in sorted(run.records, key=lambda r: r.index)]
    gen = loadgen.arrivals(400.0, 1.0, 11)
    expected = [next(gen) for _ in range(40)]
    assert sched == pytest.approx(expected, abs=1e-6)
    assert {r.worker for r in run.records} == {0, 1}


def test_a_worker_that_cannot_start_is_an_error_not_a_hang(monkeypatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")
    ps = workload.PromptSet(api="chat", model="m", words=[" a"], content_tokens=1, target_prefill=1, max_tokens=1,
                            ignore_eos=True, seed=0, cell="c", attempt=0)
    with pytest.raises(WorkerError, match="failed to start"):
        asyncio.run(run_cell_workers(Target(name="url", url="http://127.0.0.1:9"), ps,
                                     LoadSpec(concurrency=2, requests=2), workers=2, timeout=1))


def test_sweep_with_workers_is_consistent_and_resumable(tmp_path: Path) -> None:
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2)) as fake:
        spec = SweepSpec(contexts=[32], concurrencies=[2, 4], output_tokens=4, requests=12, warmup=2, workers=2)
        s = asyncio.run(ops.sweep(Target(name="fake", url=fake.url), spec.validate_grid(), root=tmp_path))
        served = fake.state.requests
    assert s.status == "complete" and s.cells_complete == 2
    store = RunDir(Path(s.path))
    recs = list(store.requests())
    assert len(recs) == served == 2 * 14
    for cell in store.cells():
        mine = [r for r in recs if r.cell == cell.id]
        assert cell.client.workers == 2 and cell.metrics.ok == 12
        assert sorted(r.index for r in mine) == list(range(14))


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) is gone for our purpose
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def test_kill_a_multiprocess_sweep_workers_exit_and_resume_counts_nothing_twice(tmp_path: Path) -> None:
    env = {**os.environ, "INFERCTL_RUNS_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", "from inferctl.cli.app import main; main()"]
    with FakeVLLM(FakeConfig(ttft_ms=2, itl_ms=2)) as fake:
        args = [*cmd, "bench", "sweep", "--url", fake.url, "--concurrency", "2,4", "--context", "32,64",
                "--output-tokens", "8", "--requests", "60", "--warmup", "2", "--workers", "2", "-q"]
        proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 90
        run_dir, workers = None, []
        while time.monotonic() < deadline:
            dirs = [p for p in tmp_path.iterdir() if (p / "cells.jsonl").exists()]
            if dirs:
                run_dir = dirs[0]
                workers = _children(proc.pid)
                if (run_dir / "cells.jsonl").read_text().count("\n") >= 1 and len(workers) == 2:
                    break
            time.sleep(0.02)
        assert run_dir is not None and len(workers) == 2, proc.communicate()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        gone_by = time.monotonic() + 30
        while time.monotonic() < gone_by and any(_alive(w) for w in workers):
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers), "load kept running after its parent died"
        assert (run_dir / "cells.jsonl").read_text().count("\n") < 4
        out = subprocess.run([*cmd, "bench", "sweep", "--resume", run_dir.name, "--json"], env=env,
                             capture_output=True, text=True, timeout=180)
        assert out.returncode == 0, out.stderr
        sent = fake.state.requests
    summary = json.loads(out.stdout)
    assert summary["status"] == "complete" and summary["cells_complete"] == 4
    store = RunDir(run_dir)
    counted = list(store.requests())
    assert max(Counter((r.cell, r.index) for r in counted).values()) == 1
    for cell in store.cells():
        assert cell.metrics.requests == 60 and cell.metrics.ok == 60 and cell.client.workers == 2
    assert len(list(store.requests(counted_only=False))) <= sent
