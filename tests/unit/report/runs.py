"""Synthetic-but-realistic runs for report tests: cells built from a few numbers, written like a sweep would."""

from __future__ import annotations

from pathlib import Path

from inferctl.bench.stats import CellMetrics, ClientHealth, Dist
from inferctl.bench.store import CellResult, RunDir, RunMeta
from inferctl.report.data import Run


def dist(p50: float, p95: float | None = None, n: int = 40) -> Dist:
    p95 = p95 if p95 is not None else p50 * 1.5
    return Dist(count=n, mean=(p50 + p95) / 2, p50=p50, p90=p95 * 0.95, p95=p95, p99=p95 * 1.1, min=p50 / 2,
                max=p95 * 1.2)


def cell(ctx: int, c: int | None, rps: float, *, ttft: float = 100.0, ttft95: float | None = None,
         tpot: float = 20.0, e2e: float | None = None, out_tok: int = 128, ok: int = 40, timeout: int = 0,
         http: dict[str, int] | None = None, status: str = "complete", reason: str = "",
         client_bound: bool = False, server: dict | None = None, rate: float | None = None,
         errors_text: list[str] | None = None) -> CellResult:
    http = http or {}
    errors = timeout + sum(http.values())
    e2e = e2e if e2e is not None else ttft + tpot * (out_tok - 1)
    m = CellMetrics(requests=ok + errors, ok=ok, errors=errors, timeout=timeout, http_error=sum(http.values()),
                    http_codes=http, error_rate=round(errors / (ok + errors), 4) if ok + errors else 0.0,
                    window_s=ok / rps if rps else 0.0, request_throughput=rps, output_throughput=rps * out_tok,
                    total_token_throughput=rps * (ctx + out_tok), prompt_tokens_mean=ctx,
                    completion_tokens_mean=out_tok, ttft=dist(ttft, ttft95, ok), tpot=dist(tpot, tpot * 1.3, ok),
                    e2e=dist(e2e, e2e * 1.4, ok), first_errors=errors_text or [])
    if status != "complete":
        m = CellMetrics(infeasible=ok) if status == "infeasible" else CellMetrics()
    cid = f"ctx{ctx}-r{rate:g}" if rate is not None else f"ctx{ctx}-c{c}"
    return CellResult(id=cid, context=ctx, concurrency=c, rate=rate, output_tokens=out_tok, status=status,
                      reason=reason, metrics=m, server={"available": True, **(server or {})},
                      client=ClientHealth(client_bound=client_bound,
                                          reasons=["event loop lagged 40 ms at p99"] if client_bound else []))


def meta(run_id: str = "20260101-000000-test", **kw) -> RunMeta:
    base = {"run_id": run_id, "status": "complete", "target": {"name": "test", "url": "http://127.0.0.1:9"},
            "model": "tiny", "vllm_version": "0.32.0", "grid": {"contexts": [128], "concurrencies": [1], "slos": []},
            "inferctl_version": "0.1.0", "started_at": 1_790_000_000.0, "ended_at": 1_790_000_100.0}
    base.update(kw)
    return RunMeta(**base)


def run(cells: list[CellResult], **kw) -> Run:
    return Run(meta=meta(**kw), cells=cells)


def knee_run(run_id: str = "20260101-000000-knee", scale: float = 1.0, **kw) -> Run:
    """ctx 128 saturates at c=8 (7.6 of a peak 8.1 req/s); TTFT p95 passes 2 s at c=16; c=32 times out."""
    cells = [
        cell(128, 1, 1.0 * scale, ttft=50, ttft95=80), cell(128, 2, 2.0 * scale, ttft=60, ttft95=90),
        cell(128, 4, 3.9 * scale, ttft=80, ttft95=150), cell(128, 8, 7.6 * scale, ttft=200, ttft95=900),
        cell(128, 16, 8.1 * scale, ttft=1500, ttft95=2600),
        cell(128, 32, 8.0 * scale, ttft=3000, ttft95=5000, ok=30, timeout=6, http={"503": 4},
             errors_text=["Service Unavailable"]),
        cell(1024, 1, 0.8 * scale, ttft=300, ttft95=400), cell(1024, 2, 1.5 * scale, ttft=350, ttft95=500),
        cell(1024, 4, 2.9 * scale, ttft=500, ttft95=800),
    ]
    return run(cells, run_id=run_id, **kw)


def write(root: Path, r: Run) -> Path:
    """Write a Run as a run directory (meta.json + cells.jsonl/json/csv) under ``root``."""
    store = RunDir.create(root, r.meta.run_id)
    store.write_meta(r.meta.model_copy(update={"run_id": store.path.name}))
    for c in r.cells:
        store.append_cell(c)
    store.close()
    return store.path
