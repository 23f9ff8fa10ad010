"""Load from several processes: each worker runs its own event loop with a share of the cell.

One asyncio loop is one core at most; past a few hundred streams (or at high request rates) its
own queueing shows up in the timestamps (docs/performance.md). ``run_cell_workers`` starts N
worker processes (``python -m inferctl.bench.workers``), each running ``loadgen.run_cell`` on
its share, and streams their records back to the parent, which hands each to the sink (the run
directory's requests.jsonl) as it arrives and aggregates the cell.

Sharing one cell between processes, exactly:

- **Indices**: worker k of n issues global indices k, k+n, k+2n, ... (``index_offset``/``stride``),
  and takes exactly the indices below ``warmup + requests`` that are ≡ k mod n, so the union is
  0..warmup+requests-1 with no gaps and no duplicates; its warm-up is the global warm-up's share.
- **Closed loop**: concurrency c is split as evenly as possible (c//n or c//n+1 per worker).
- **Open loop**: one global arrival schedule (same seed); worker k sends arrivals k, k+n, ...,
  so the aggregate is exactly the single-process schedule (gamma/Poisson alike). A concurrency
  cap is split like concurrency.
- **Clock**: ``perf_counter`` is system-wide (CLOCK_MONOTONIC), so the parent picks one ``t0``
  after every worker is ready and all times are relative to it.

Protocol: the parent writes a pickled job (length-prefixed) to the worker's stdin; the worker
answers ``READY``; the parent writes ``GO <t0>``; the worker writes one line per finished request
(the record's requests.jsonl line), then ``END <json>`` (loop lags, CPU seconds, elapsed, abort
reason). A worker exits when its stdin closes, so a killed parent leaves no load running. A worker
that dies mid-cell loses its in-flight requests only; the cell is then ``aborted`` with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import pickle
import struct
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from inferctl.bench.loadgen import CellRun, LiveStats, LoadSpec, run_cell
from inferctl.bench.records import RequestRecord
from inferctl.bench.workload import PromptSet
from inferctl.config import Target
from inferctl.errors import InferctlError

STREAMS_PER_WORKER = 128  # --workers auto: one process per this many concurrent streams...
RATE_PER_WORKER = 150.0  # ...or per this many requests/s of open-loop arrivals
START_TIMEOUT = 60.0


def share(total: int, n: int, k: int) -> int:
    """How many of 0..total-1 are ≡ k (mod n): worker k's share of ``total``."""
    return total // n + (1 if k < total % n else 0)


def usable_cpus() -> int:
    """Cores this process may use that other work is not already using (1-minute load average).

    On a shared host more processes than idle cores only queue behind each other: measured on a
    2-core VM at load 17, two load processes measured TTFT worse than one (docs/performance.md).
    """
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:
        busy = 0.0
    return max(1, min(n, round(n - busy + 1)))


def auto_workers(concurrency: int | None, rate: float | None, cpus: int | None = None) -> int:
    """A worker count for the load: one process per ~128 streams or ~150 req/s, at most one per usable core."""
    cpus = cpus or usable_cpus()
    need = 1
    if concurrency:
        need = max(need, math.ceil(concurrency / STREAMS_PER_WORKER))
    if rate:
        need = max(need, math.ceil(rate / RATE_PER_WORKER))
    return max(1, min(cpus, need))


class WorkerError(InferctlError):
    """The load generator's own processes failed (not a request: those are records)."""


@dataclass
class Job:
    """What one worker process runs (pickled to its stdin)."""

    target: Target
    prompts: PromptSet
    load: LoadSpec
    timeout: float
    transport: str
    worker: int
    workers: int
    total: int | None  # warmup + requests over all workers (None: duration only)


def effective_workers(load: LoadSpec, n: int) -> int:
    """Workers that get load: never more than the closed loop's streams or the cell's requests."""
    n = max(1, n)
    if load.rate is None and load.concurrency:
        n = min(n, load.concurrency)
    if load.requests is not None and load.duration is None:
        n = min(n, max(1, load.warmup + load.requests))
    return n


def worker_loads(load: LoadSpec, n: int) -> list[tuple[LoadSpec, int]]:
    """(LoadSpec, worker id) of each of the ``effective_workers(load, n)`` workers (the index stride)."""
    n = effective_workers(load, n)
    total = None if load.requests is None else load.warmup + load.requests
    out = []
    for k in range(n):
        conc = None if load.concurrency is None else share(load.concurrency, n, k)
        if load.rate is not None and load.concurrency:
            conc = max(1, conc or 0)  # an open-loop cap stays a cap in every worker
        warm = share(load.warmup, n, k)
        reqs = None if total is None else share(total, n, k) - warm
        out.append((replace(load, concurrency=conc, requests=reqs, warmup=warm,
                            abort_errors=max(1, math.ceil(load.abort_errors / n))), k))
    return out


async def run_cell_workers(target: Target, prompts: PromptSet, load: LoadSpec, *, workers: int, timeout: float,
                           transport: str = "auto", sink: Callable[[RequestRecord], None] | None = None,
                           live: LiveStats | None = None) -> CellRun:
    """Run one cell over ``workers`` processes; records reach ``sink`` as they arrive (see module doc)."""
    live = live or LiveStats()
    n = effective_workers(load, workers)
    loads = worker_loads(load, n)
    run = CellRun(workers=len(loads))
    if load.requests is not None:
        live.planned = load.warmup + load.requests
    procs: list[asyncio.subprocess.Process] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    try:
        for wload, k in loads:
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "inferctl.bench.workers", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, limit=1 << 26)
            procs.append(proc)
            job = Job(target=target, prompts=prompts, load=wload, timeout=timeout, transport=transport, worker=k,
                      workers=n, total=None if load.requests is None else load.warmup + load.requests)
            blob = pickle.dumps(job)
            assert proc.stdin is not None
            try:
                proc.stdin.write(struct.pack("<I", len(blob)) + blob)
                await proc.stdin.drain()
            except (ConnectionError, BrokenPipeError):
                pass  # it died at once; the READY check below reports why
        errors: list[str] = []
        for proc in procs:
            assert proc.stdout is not None
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), START_TIMEOUT)
            except TimeoutError:
                line = b""
            if line.strip() != b"READY":
                err = await _stderr_tail(proc)
                raise WorkerError(f"A load-generator worker process failed to start ({sys.executable} -m "
                                  f"inferctl.bench.workers): {err or line[:200]!r}. Try --workers 1.")
        t0 = time.perf_counter() + 0.05  # everyone starts on the same tick
        run.t0, run.wall_start = t0, time.time() + 0.05
        for proc in procs:
            assert proc.stdin is not None
            with contextlib.suppress(ConnectionError, BrokenPipeError):  # a dead worker is reported below
                proc.stdin.write(f"GO {t0!r}\n".encode())
                await proc.stdin.drain()
        ends = await asyncio.gather(*(_collect(p, k, run, sink, live, errors)
                                      for p, (_, k) in zip(procs, loads, strict=True)))
        run.elapsed = time.perf_counter() - t0
        for end in ends:
            if end is None:
                continue
            run.loop_lags.extend(end["loop_lags"])
            run.cpu_seconds += end["cpu_seconds"]
            if end.get("aborted") and run.aborted is None:
                run.aborted = end["aborted"]
        if errors and run.aborted is None:
            run.aborted = "; ".join(errors)[:500]
    finally:
        for proc in procs:
            if proc.stdin is not None and not proc.stdin.is_closing():
                proc.stdin.close()  # the worker exits on EOF
        for proc in procs:
            try:
                await asyncio.wait_for(proc.wait(), 5)
            except TimeoutError:
                proc.kill()
                await proc.wait()
    return run


async def _stderr_tail(proc: asyncio.subprocess.Process) -> str:
    if proc.stderr is None:
        return ""
    try:
        data = await asyncio.wait_for(proc.stderr.read(), 5)
    except TimeoutError:
        return ""
    return data.decode("utf-8", "replace").strip()[-500:]


async def _collect(proc: asyncio.subprocess.Process, k: int, run: CellRun, sink, live: LiveStats,
                   errors: list[str]) -> dict | None:
    """Read one worker's records until END; hand each to the sink at once (crash-safe appends)."""
    assert proc.stdout is not None
    perf = time.perf_counter
    stderr_task = asyncio.ensure_future(_drain(proc))
    end = None
    try:
        while True:
            line = await proc.stdout.readline()
            if not line:
                break
            if line.startswith(b"{"):
                rec = RequestRecord.from_json(line.decode())
                run.records.append(rec)
                if live.measure_start is None and not rec.warmup:
                    live.measure_start = perf()
                live.add(rec, perf())
                if sink is not None:
                    sink(rec)
            elif line.startswith(b"END "):
                end = json.loads(line[4:])
                break
        if end is None:
            await proc.wait()
            tail = (await stderr_task).strip().splitlines()
            errors.append(f"worker {k} exited with code {proc.returncode}"
                          + (f": {tail[-1][:200]}" if tail else ""))
    finally:
        if not stderr_task.done():
            stderr_task.cancel()
    return end


async def _drain(proc: asyncio.subprocess.Process) -> str:
    """Keep reading stderr so a chatty worker never blocks; keep the tail for error messages."""
    assert proc.stderr is not None
    tail = b""
    while True:
        chunk = await proc.stderr.read(65536)
        if not chunk:
            return tail.decode("utf-8", "replace")
        tail = (tail + chunk)[-4000:]


# -- the worker process -----------------------------------------------------------------------


class _Out:
    """Record lines to stdout, written once per loop iteration (records finishing together share a write)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.scheduled = False

    def add(self, rec: RequestRecord) -> None:
        self.lines.append(rec.to_json())
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self.scheduled = False
        if self.lines:
            data = ("\n".join(self.lines) + "\n").encode()
            self.lines.clear()
            _write_all(data)


def _write_all(data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(1, view)
        view = view[n:]


def _watch_stdin() -> None:
    """Exit as soon as the parent closes our stdin (it finished, or it was killed)."""
    try:
        sys.stdin.buffer.read()
    finally:
        os._exit(0)


async def _work(job: Job, t0: float) -> None:
    from inferctl.bench.transport import make_transport

    out = _Out()
    transport = make_transport(job.target, concurrency=job.load.concurrency or 0, timeout=job.timeout,
                               kind=job.transport)
    try:
        run = await run_cell(transport, job.prompts, job.load, sink=out.add, t0=t0, index_stride=job.workers,
                             index_offset=job.worker, worker=job.worker)
    finally:
        await transport.aclose()
    out.flush()
    end = {"loop_lags": [round(x, 6) for x in run.loop_lags], "cpu_seconds": run.cpu_seconds,
           "elapsed": run.elapsed, "aborted": run.aborted}
    _write_all(b"END " + json.dumps(end).encode() + b"\n")


def main() -> None:
    stdin = sys.stdin.buffer
    (size,) = struct.unpack("<I", stdin.read(4))
    job: Job = pickle.loads(stdin.read(size))
    try:
        import uvloop  # a faster loop when present (it comes with vLLM); plain asyncio otherwise

        runner = uvloop.run
    except (ImportError, AttributeError):
        runner = asyncio.run
    _write_all(b"READY\n")
    line = stdin.readline().split()
    if len(line) != 2 or line[0] != b"GO":
        return
    t0 = float(line[1])
    threading.Thread(target=_watch_stdin, daemon=True).start()
    runner(_work(job, t0))


if __name__ == "__main__":
    main()
