"""A sweep: walk the grid cell by cell, measure each, and keep everything in the run directory.

Order and early stop: rows are context lengths, cells within a row go up in load. When a cell's
error rate passes ``error_threshold`` the server is saturated for that context; the rest of the
row is recorded as ``skipped`` rather than hammering a server that already fails.

Resume: cells with a line in cells.jsonl are done and are not run again; any other cell runs as a
new attempt (``attempt`` = last seen + 1) with fresh prompts, and only the finishing attempt's
records count (store.py). So a killed sweep loses at most its requests in flight.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Protocol

from inferctl.bench import agreement, cachecheck
from inferctl.bench import workload as wl
from inferctl.bench.honesty import assess
from inferctl.bench.loadgen import CellRun, LiveStats, LoadSpec, default_requests, default_warmup, run_cell
from inferctl.bench.records import RequestRecord
from inferctl.bench.servermon import ServerMonitor
from inferctl.bench.spec import CellSpec, SweepSpec
from inferctl.bench.stats import aggregate
from inferctl.bench.store import CellResult, RunDir, RunMeta
from inferctl.bench.transport import make_transport
from inferctl.bench.workers import usable_cpus
from inferctl.server.client import VLLMClient

AUTO_ESCALATE_CPU = 0.7  # --workers auto adds processes after a client-bound cell this busy (per process)


class Reporter(Protocol):
    """What a face shows while a sweep runs (the CLI's Rich progress; nothing for --json)."""

    def sweep_start(self, meta: RunMeta, cells: list[CellSpec], done: int) -> None: ...

    def cell_start(self, cell: CellSpec, live: LiveStats) -> None: ...

    def cell_end(self, result: CellResult) -> None: ...

    def note(self, text: str) -> None: ...


class NullReporter:
    def sweep_start(self, meta: RunMeta, cells: list[CellSpec], done: int) -> None:
        pass

    def cell_start(self, cell: CellSpec, live: LiveStats) -> None:
        pass

    def cell_end(self, result: CellResult) -> None:
        pass

    def note(self, text: str) -> None:
        pass


def load_for(spec: SweepSpec, cell: CellSpec) -> LoadSpec:
    """The LoadSpec of one cell: explicit flags, else the defaults (one wave of warm-up, 4 waves measured)."""
    conc, rate = cell.concurrency, cell.rate
    warmup = spec.warmup if spec.warmup is not None else default_warmup(conc, rate)
    requests = spec.requests
    if requests is None and spec.duration is None:
        requests = default_requests(conc, rate)
    elif requests is not None and conc and rate is None:
        requests = max(requests, conc)  # never less than one request per worker
    return LoadSpec(concurrency=conc, rate=rate, burstiness=spec.burstiness, requests=requests,
                    duration=spec.duration, warmup=warmup, seed=hash_seed(spec.seed, cell.id))


def hash_seed(seed: int, cell_id: str) -> int:
    import zlib

    return (seed * 1_000_003 + zlib.crc32(cell_id.encode())) & 0x7FFFFFFF


class Sweep:
    """Runs the cells of one run directory against one server."""

    def __init__(self, client: VLLMClient, store: RunDir, meta: RunMeta, spec: SweepSpec,
                 workload: wl.Workload, reporter: Reporter | None = None,
                 on_record: Callable[[RequestRecord], None] | None = None) -> None:
        self.client = client
        self.store = store
        self.meta = meta
        self.spec = spec
        self.workload = workload
        self.reporter = reporter or NullReporter()
        self.on_record = on_record
        self._auto_floor = 1

    async def run(self) -> list[CellResult]:
        spec, store = self.spec, self.store
        cells = spec.cells()
        done = {c.id: c for c in store.cells()}
        attempts = store.attempts()
        self.reporter.sweep_start(self.meta, cells, sum(1 for c in cells if c.id in done))
        saturated: dict[int, str] = {}
        for cell in cells:
            prev = done.get(cell.id)
            if prev is not None:
                self._note_saturation(prev, cell, saturated)
                continue
            if cell.row in saturated:
                result = self._skipped(cell, saturated[cell.row])
            elif self._infeasible(cell):
                result = self._infeasible_result(cell, attempts.get(cell.id, -1) + 1)
            else:
                result = await self.run_cell(cell, attempts.get(cell.id, -1) + 1)
            store.append_cell(result)
            self.reporter.cell_end(result)
            self._note_saturation(result, cell, saturated)
        return store.cells()

    def _note_saturation(self, result: CellResult, cell: CellSpec, saturated: dict[int, str]) -> None:
        m = result.metrics
        if (result.status in ("complete", "failed", "aborted") and m.requests
                and m.error_rate > self.spec.error_threshold):
            saturated.setdefault(cell.row, f"row stopped: {cell.id} had error rate {m.error_rate:.0%} "
                                            f"> {self.spec.error_threshold:.0%}")

    def _prefill(self, cell: CellSpec) -> int:
        return max(cell.context, self.workload.min_context())

    def _infeasible(self, cell: CellSpec) -> bool:
        mml = self.meta.max_model_len
        return mml is not None and self._prefill(cell) + self.spec.output_tokens > mml

    def _base(self, cell: CellSpec, attempt: int) -> CellResult:
        return CellResult(id=cell.id, row=cell.row, context=cell.context, concurrency=cell.concurrency,
                          rate=cell.rate, output_tokens=self.spec.output_tokens, attempt=attempt)

    def _skipped(self, cell: CellSpec, reason: str) -> CellResult:
        r = self._base(cell, 0)
        r.status, r.reason = "skipped", reason
        return r

    def _infeasible_result(self, cell: CellSpec, attempt: int) -> CellResult:
        """Requests that cannot fit are recorded as infeasible, never sent."""
        load = load_for(self.spec, cell)
        n = load.requests or (cell.concurrency or 1)
        prefill = self._prefill(cell)
        recs = [RequestRecord(cell=cell.id, attempt=attempt, index=i, status="infeasible",
                              error=f"prompt {prefill} + output {self.spec.output_tokens} tokens > "
                                    f"max_model_len {self.meta.max_model_len}",
                              prompt_tokens_target=prefill) for i in range(n)]
        for rec in recs:
            self.store.append_request(rec)
        r = self._base(cell, attempt)
        r.status, r.reason = "infeasible", recs[0].error
        r.requests_planned = n
        r.metrics = aggregate(recs)
        r.started_at = r.ended_at = time.time()
        return r

    async def run_cell(self, cell: CellSpec, attempt: int) -> CellResult:
        spec = self.spec
        ps = self.workload.prompt_set(cell.id, attempt, cell.context)
        if self.workload.tokenizer is not None:  # an approximation has nothing to verify against
            await wl.verify(self.workload.tokenizer, ps, chat_template=self.workload.overheads.chat_template)
        load = load_for(spec, cell)
        live = LiveStats()
        live.planned = None if load.requests is None else load.warmup + load.requests
        self.reporter.cell_start(cell, live)
        monitor = ServerMonitor(self.client)
        await monitor.start()
        started = time.time()
        sink = self._sink()
        workers = self.workers_for(cell)
        if workers > 1:
            from inferctl.bench.workers import run_cell_workers

            run: CellRun = await run_cell_workers(self.client.target, ps, load, workers=workers, timeout=spec.timeout,
                                                  transport=spec.transport, sink=sink, live=live)
        else:
            transport = make_transport(self.client.target, concurrency=cell.concurrency or 0,
                                       timeout=spec.timeout, kind=spec.transport)
            try:
                run = await run_cell(transport, ps, load, sink=sink, live=live)
            finally:
                await transport.aclose()
        server = await monitor.stop()
        self.store.append_server(cell.id, attempt, monitor.raw())
        result = self._base(cell, attempt)
        result.started_at, result.ended_at = started, time.time()
        result.requests_planned = None if load.requests is None else load.warmup + load.requests
        result.warmup = load.warmup
        result.metrics = aggregate(run.records, spec.slos)
        result.client = assess(run, run.records, result.metrics, concurrency=cell.concurrency, rate=cell.rate)
        result.server = server.model_dump(mode="json")
        result.agreement = agreement.compare(server.latency_p50, result.metrics)
        for row in result.agreement:
            if not row.agrees:
                self.reporter.note(f"{cell.id}: {row.text}")
        result.prefix_cache = cachecheck.check(
            server.prefix_cache_hit_rate, prefill=ps.target_prefill, preemptions=server.preemptions,
            shared_tokens=self.workload.overhead + (1 if ps.anchor else 0) + ps.prefix_tokens)
        if result.prefix_cache is not None and result.prefix_cache.flagged:
            self.reporter.note(f"{cell.id}: {result.prefix_cache.text}")
        if run.aborted:
            result.status, result.reason = "aborted", run.aborted
        elif result.metrics.requests - result.metrics.infeasible > 0 and result.metrics.ok == 0:
            result.status, result.reason = "failed", _every_request_failed(result)
        if result.client.client_bound:
            self.reporter.note(f"{cell.id} client-bound: {'; '.join(result.client.reasons)}")
            cpu = result.client.cpu_fraction or 0.0
            if spec.workers == "auto" and cpu >= AUTO_ESCALATE_CPU and run.workers < usable_cpus():
                # Our own loops were busy (not merely starved by other processes on the host): one
                # loop (or these many) could not keep up, so the following cells get more processes.
                self._auto_floor = min(usable_cpus(), 2 * run.workers)
                self.reporter.note(f"--workers auto: next cells use at least {self._auto_floor} processes")
        return result

    def workers_for(self, cell: CellSpec) -> int:
        """Load-generator processes for a cell: --workers N, or auto (by load, raised after a client-bound cell)."""
        w = self.spec.workers
        if w != "auto":
            return int(w)
        from inferctl.bench.workers import auto_workers

        return max(self._auto_floor, auto_workers(cell.concurrency, cell.rate))

    def _sink(self) -> Callable[[RequestRecord], None]:
        append, extra = self.store.append_request, self.on_record
        if extra is None:
            return append

        def both(rec: RequestRecord) -> None:
            append(rec)
            extra(rec)

        return both


def _every_request_failed(result: CellResult) -> str:
    m = result.metrics
    first = f": {m.first_errors[0]}" if m.first_errors else ""
    return f"all {m.requests - m.infeasible} measured requests failed{first}"


def run_failure(cells: list[CellResult]) -> str | None:
    """Why a whole run failed (no request of any cell succeeded), or None when something was measured.

    A run whose every request failed measured nothing: calling it complete hid exactly that on a GPU
    (every stream of a random-weights model was empty text, and the run said ``complete``).
    """
    if not cells or any(c.metrics.ok > 0 for c in cells):
        return None
    sent = [c for c in cells if c.metrics.requests - c.metrics.infeasible > 0]
    if not sent:
        reasons = sorted({c.status for c in cells})
        return f"no request was sent: every cell was {' or '.join(reasons)} ({cells[0].reason})"
    errors = [e for c in sent for e in c.metrics.first_errors]
    n = sum(c.metrics.requests - c.metrics.infeasible for c in sent)
    why = f"every one of the {n} measured requests failed" + (f"; first error: {errors[0]}" if errors else "")
    if any("ignore_eos" in e for e in errors):  # vLLM's extension; other OpenAI-compatible servers refuse it
        why += " (this server does not take vLLM's ignore_eos: rerun with --natural-stop)"
    return why


async def engine_facts(client: VLLMClient) -> dict:
    """vLLM's KV-cache configuration from /metrics (cache_config_info), if exposed."""
    from inferctl.errors import InferctlError
    from inferctl.server.metrics import parse_metrics

    with contextlib.suppress(InferctlError):
        snap = parse_metrics(await client.metrics_text(), taken_at=time.time())
        if snap.cache_config is not None:
            return {"cache_config": snap.cache_config.labels}
    return {}
