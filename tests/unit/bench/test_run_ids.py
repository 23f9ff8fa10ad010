"""Run ids are unique under concurrency: sweeps started in the same second, from threads or processes,
each get their own run directory (mkdir is the claim; nobody checks-then-creates)."""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from inferctl.bench.store import RunDir

RACERS = 12


def _claim(root: str, run_id: str, barrier) -> str:
    barrier.wait()
    return str(RunDir.create(Path(root), run_id).path)


def test_threads_racing_for_one_run_id_all_get_their_own_directory(tmp_path):
    barrier = threading.Barrier(RACERS)
    with ThreadPoolExecutor(RACERS) as pool:
        paths = list(pool.map(lambda _: _claim(str(tmp_path / "runs"), "20260101-000000-x", barrier),
                              range(RACERS)))
    assert len(set(paths)) == RACERS
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == sorted(Path(p).name for p in paths)


def _claim_into(root: str, run_id: str, barrier, out) -> None:
    out.put(_claim(root, run_id, barrier))


def test_processes_racing_for_one_run_id_all_get_their_own_directory(tmp_path):
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(RACERS), ctx.Queue()
    procs = [ctx.Process(target=_claim_into, args=(str(tmp_path / "runs"), "20260101-000000-x", barrier, out))
             for _ in range(RACERS)]
    for p in procs:
        p.start()
    paths = [out.get(timeout=30) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert all(p.exitcode == 0 for p in procs)
    assert len(set(paths)) == RACERS
    assert {Path(p).name for p in paths} >= {"20260101-000000-x", f"20260101-000000-x-{RACERS}"}
