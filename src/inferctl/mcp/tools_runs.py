"""Tools about runs: start and poll a benchmark, list runs, plan a configuration, simulate a sweep.

Run payloads stay compact (one line of headline numbers per cell); every number of a run is in its
run directory and in the resource ``inferctl://runs/{run_id}/report``.
"""

from typing import Annotated, Any, Literal

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from inferctl import params as P
from inferctl.mcp.adapt import fmt, guard, in_thread, in_thread_stoppable, resolve, result
from inferctl.mcp.params import arg
from inferctl.mcp.policy import ToolSpec
from inferctl.mcp.tools_observe import ModelArg, TargetArg
from inferctl.ops.bench import RunInfo
from inferctl.ops.plan import PlanReport
from inferctl.plan.memory import MemoryPlan
from inferctl.plan.provenance import Provenance
from inferctl.plan.workload import Workload

RUN_PATTERN = P.RUN_PATTERN
RunArg = Annotated[str, Field(pattern=RUN_PATTERN, description="A run id from list_runs or start_benchmark "
                              "('latest' = the newest), or a job id from start_benchmark.")]
IntList = Annotated[list[Annotated[int, Field(ge=1, le=1_000_000)]], Field(min_length=1, max_length=16)]
MAX_WAIT_S = 25
SIMULATE_DEADLINE_S = 40.0  # the simulator stops itself before the tool's time limit (adapt.TOOL_TIMEOUT_S)
SIMULATE_NAMES = {"concurrency": "concurrencies", "context": "contexts", "output_tokens": "output_tokens",
                  "requests": ""}  # the tool's own words in a refusal; it has no requests argument


class CellBrief(BaseModel):
    """A cell's headline numbers (ms; throughput per second)."""

    id: str
    context: int
    concurrency: int | None = None
    rate: float | None = None
    status: str
    ok: int = 0
    error_rate: float = 0.0
    request_throughput: float = 0.0
    output_throughput: float = 0.0
    ttft_p50_ms: float | None = None
    ttft_p95_ms: float | None = None
    tpot_p50_ms: float | None = None
    e2e_p50_ms: float | None = None
    reason: str | None = None


class BenchmarkStatus(BaseModel):
    """Progress and results of a benchmark (or any run)."""

    run_id: str | None = Field(default=None, description="Run id (None until the job has created its run).")
    job_id: str | None = Field(default=None, description="The background job, when started from MCP.")
    status: str = Field(description="starting, running, complete, failed, interrupted.")
    source: str | None = Field(default=None, description="measured, imported or simulated.")
    target: str | None = None
    model: str | None = None
    cells_total: int | None = None
    cells_done: int = 0
    current_cell: str | None = None
    error: str | None = None
    notes: list[str] = Field(default_factory=list)
    cells: list[CellBrief] = Field(default_factory=list, description="Finished cells, in grid order (the newest "
                                   "max_cells, of the asked context when one was given).")
    cells_omitted: int = Field(default=0, description="Finished cells left out to keep the answer small.")
    report_uri: str | None = Field(default=None, description="Resource with the full markdown report.")
    provenance: Provenance | None = Field(default=None, description="Simulated runs: which speed parameters "
                                          "and config reader the prediction used, and its measured error band.")
    next_step: str | None = None


def provenance_lines(p: Provenance | None) -> list[str]:
    """The provenance of a prediction in two lines for an agent."""
    if p is None:
        return []
    fitted = f" ({p.measurements} measurements)" if p.measurements else ""
    band = p.error_band_detail if p.error_band else f"not measured ({p.error_band_detail})"
    return [f"speed parameters: {p.speed_params}{fitted}; measured error: {band}",
            f"model config read by: {p.config_reader} ({p.config_reader_detail})"]


def brief(c) -> CellBrief:
    m = c.metrics
    return CellBrief(id=c.id, context=c.context, concurrency=c.concurrency, rate=c.rate, status=c.status, ok=m.ok,
                     error_rate=m.error_rate, request_throughput=m.request_throughput,
                     output_throughput=m.output_throughput, ttft_p50_ms=m.ttft.p50, ttft_p95_ms=m.ttft.p95,
                     tpot_p50_ms=m.tpot.p50, e2e_p50_ms=m.e2e.p50, reason=c.reason or None)


def _status_of(ref: str) -> BenchmarkStatus:
    """Merge what the job file says (progress, errors) with what the run directory holds (results)."""
    from inferctl.errors import ConfigError
    from inferctl.mcp import jobs
    from inferctl.ops import bench

    job = jobs.find(ref)
    run_ref = job.run_id if job else ref
    out = BenchmarkStatus(status=job.status if job else "unknown", job_id=job.job_id if job else None)
    if job:
        out.target, out.cells_total, out.cells_done = job.target, job.cells_total, job.cells_done
        out.current_cell, out.error, out.notes = job.current_cell, job.error, job.notes
    if run_ref:
        try:
            detail = bench.show(run_ref)
        except ConfigError:
            if job is None:
                raise
        else:
            meta = detail.meta
            out.run_id, out.source, out.model = meta.run_id, meta.source, meta.model
            out.target = out.target or meta.target.get("name")
            out.cells = [brief(c) for c in detail.cells]
            out.cells_done = max(out.cells_done, len(detail.cells))
            if job is None:
                out.status = meta.status
                out.error = out.error or meta.reason or None
                from inferctl.bench.spec import SweepSpec

                try:
                    out.cells_total = len(SweepSpec.model_validate(meta.grid).cells()) if meta.grid else None
                except ValueError:
                    out.cells_total = None
            out.report_uri = f"inferctl://runs/{meta.run_id}/report"
            if meta.source == "simulated" and isinstance((meta.engine or {}).get("provenance"), dict):
                try:
                    out.provenance = Provenance.model_validate(meta.engine["provenance"])
                except ValueError:  # a run written before provenance existed, or edited by hand
                    out.provenance = None
    if out.status in ("starting", "running"):
        out.next_step = "Call get_benchmark_status again (wait_seconds up to 25) until complete."
    elif out.status == "interrupted" and out.run_id:
        out.next_step = f"Resume with start_benchmark(resume='{out.run_id}')."
    elif out.status == "complete":
        out.next_step = f"Read {out.report_uri}, or compare with another run."
    elif out.status == "failed":
        out.next_step = "Nothing was measured: read `error`, fix its cause, then start a new benchmark."
    return out


def trim(status: BenchmarkStatus, context: int | None, max_cells: int) -> BenchmarkStatus:
    """Keep an answer small: one context row when asked, and the newest ``max_cells`` cells."""
    cells = [c for c in status.cells if context is None or c.context == context]
    kept = cells[-max_cells:]
    return status.model_copy(update={"cells": kept, "cells_omitted": len(status.cells) - len(kept)})


def _summary(s: BenchmarkStatus) -> str:
    head = (f"**{s.run_id or s.job_id}** {s.status}: {s.cells_done}/{s.cells_total or '?'} cells"
            + (f", now {s.current_cell}" if s.current_cell else "") + (f" ({s.model})" if s.model else ""))
    lines = [head, *provenance_lines(s.provenance)]
    if s.error:
        lines.append(f"error: {s.error}")
    if s.cells:
        lines.append("| cell | status | req/s | out tok/s | TTFT p50 ms | TPOT p50 ms | errors |")
        lines.append("|---|---|---|---|---|---|---|")
        for c in s.cells[-20:]:
            lines.append(f"| {c.id} | {c.status} | {fmt(c.request_throughput, '', 2)} | "
                         f"{fmt(c.output_throughput)} | {fmt(c.ttft_p50_ms)} | {fmt(c.tpot_p50_ms, '', 2)} | "
                         f"{c.error_rate:.0%} |")
    if s.cells_omitted:
        lines.append(f"({s.cells_omitted} more cells: pass context= for one row, or read {s.report_uri})")
    if s.next_step:
        lines.append(s.next_step)
    return "\n".join(lines)


@guard()
async def start_benchmark(
    ctx: Context,
    target: TargetArg = None,
    model: ModelArg = None,
    preset: Annotated[Literal["quick", "seed-grid"] | None, Field(
        description="Base grid; the other arguments override its values. quick (default): users [1,2,4] x "
                    "contexts [128,512], 32 output tokens, 8 requests per cell - minutes on a CPU. seed-grid: "
                    "1..2048 users x 13 contexts - hours on a GPU.")] = None,
    concurrencies: Annotated[IntList | None, Field(description="Closed-loop users per cell, e.g. [1, 8, 64].")] = None,
    contexts: Annotated[IntList | None, Field(description="Prompt lengths in tokens, e.g. [128, 1024].")] = None,
    output_tokens: arg(P.OUTPUT_TOKENS) = P.OUTPUT_TOKENS.default,
    requests_per_cell: arg(P.REQUESTS_PER_CELL) = P.REQUESTS_PER_CELL.default,
    api: arg(P.API) = P.API.default,
    slos: arg(P.SLOS) = P.SLOS.default,
    resume: arg(P.RESUME) = P.RESUME.default,
) -> Annotated[CallToolResult, BenchmarkStatus]:
    """Start a benchmark sweep (concurrency x context) in the background and return its run id at once.

    The sweep runs in its own process and survives this server; results are saved cell by cell. Poll with
    get_benchmark_status(run_id, wait_seconds=25) until status is complete, then read its report resource.
    Puts real load on the target: on a production endpoint ask the user first.
    """
    ctx.mcp_server.policy.require("write", "start_benchmark")
    from inferctl.mcp import jobs

    grid: dict[str, Any] | None = None
    name = (target or "").strip() or None
    if resume:
        if preset or concurrencies or contexts:
            raise ToolError("Pass either resume or a grid (preset/concurrencies/contexts), not both.")
    else:
        from inferctl.bench.spec import spec_from_flags

        spec = spec_from_flags(preset=preset or "quick",  # the preset's values fill whatever the call leaves out
                               concurrency=",".join(map(str, concurrencies)) if concurrencies else None,
                               context=",".join(map(str, contexts)) if contexts else None,
                               output_tokens=output_tokens, api=api, requests=requests_per_cell, slo=slos)
        grid = spec.model_dump(mode="json")
        t = await resolve(name, model)  # fail now, in this call, for an unknown target
        name = name or t.name
    busy = await in_thread(lambda: jobs.active_for(name))
    if busy:
        raise ToolError(f"A benchmark on target '{name}' is already running ({busy.run_id or busy.job_id}); poll it "
                        "with get_benchmark_status, or wait for it to finish.")
    job = await in_thread(lambda: jobs.start(name, grid, resume, model))
    with anyio.move_on_after(20):  # the run id appears once the child has resolved the model and calibrated
        while True:
            status = await in_thread(lambda: _status_of(job.job_id))
            if status.run_id or status.status in jobs.TERMINAL:
                break
            await anyio.sleep(0.25)
    status = await in_thread(lambda: _status_of(job.job_id))
    return result(status, _summary(status))


@guard(timeout=40.0)
async def get_benchmark_status(
    run_id: RunArg,
    wait_seconds: Annotated[int, Field(ge=0, le=MAX_WAIT_S, description="Wait up to this long for the next "
                                       "finished cell before answering (0 = answer now).")] = 0,
    context: Annotated[int | None, Field(ge=1, le=10_000_000, description="Only the cells of this context "
                                         "length (prompt tokens).")] = None,
    max_cells: Annotated[int, Field(ge=1, le=200, description="Most cells to return (the newest).")] = 60,
) -> Annotated[CallToolResult, BenchmarkStatus]:
    """Progress and results of a benchmark started with start_benchmark, or of any stored run (measured,
    imported or simulated): status, cells done/total, the cell running now, and each finished cell's
    throughput, TTFT/TPOT/E2E p50, error rate. With wait_seconds it returns early when a cell finishes.
    """
    first = await in_thread(lambda: _status_of(run_id))
    status = first
    with anyio.move_on_after(wait_seconds):
        while status.status in ("starting", "running") and status.cells_done == first.cells_done:
            await anyio.sleep(0.5)
            status = await in_thread(lambda: _status_of(run_id))
    status = trim(status, context, max_cells)
    return result(status, _summary(status))


class RunList(BaseModel):
    root: str
    total: int
    runs: list[RunInfo] = Field(description="The newest runs, newest last.")


@guard()
async def list_runs(
    limit: Annotated[int, Field(ge=1, le=200, description="How many of the newest runs.")] = 30,
) -> Annotated[CallToolResult, RunList]:
    """Stored runs (measured benchmarks, imported and simulated sweeps), newest last: id, source, status,
    target, model, cells done. Next: get_benchmark_status(run_id) for results, or the report resource.
    """
    from inferctl.ops import bench

    r = await in_thread(bench.list_all)
    out = RunList(root=r.root, total=len(r.runs), runs=r.runs[-limit:])
    lines = [f"**{out.total} runs** under {out.root}"]
    lines += [f"- `{x.run_id}` {x.source} {x.status} {x.target or ''} {x.model or ''} "
              f"{x.cells_done}/{x.cells_total or '?'} cells" for x in out.runs]
    return result(out, "\n".join(lines))


# -- planning -----------------------------------------------------------------------------------------

Model = arg(P.MODEL)
Accelerator = arg(P.ACCELERATOR)


class ConfigArgs(BaseModel):
    """The serving configuration arguments plan_serving and simulate_sweep share."""

    model: str | None
    accelerator: str
    count: int
    quant: str
    kv_dtype: str
    max_model_len: int | None
    speculative: str | None
    price_per_hour: float | None
    profile: str | None


def _config(a: ConfigArgs):
    from inferctl.plan.config import build_config

    return build_config(model=a.model, profile=a.profile, speculative=a.speculative,
                        price_per_device_hour=a.price_per_hour, accelerator=a.accelerator, count=a.count,
                        quant=a.quant, kv_dtype=a.kv_dtype, max_model_len=a.max_model_len)


Count = arg(P.COUNT)
Quant = arg(P.QUANT)
KvDtype = arg(P.KV_DTYPE)
MaxLen = arg(P.MAX_MODEL_LEN)
Speculative = arg(P.SPECULATIVE)
Price = arg(P.PRICE_PER_HOUR)
Profile = arg(P.PROFILE)


class FleetRow(BaseModel):
    """One ranked deployment (a replica configuration on a priced machine and tier)."""

    deployment: str
    machine: str
    tier: str
    capacity_rps: float = Field(description="Requests/s one replica sustains with every SLO met.")
    replicas: int
    machines: int
    headroom: float
    usd_per_month: float = Field(description="Autoscaled over the traffic shape (committed tiers: always on).")
    usd_per_month_always_on: float
    limiting: str | None = None
    vllm_flags: str | None = None


class FleetBrief(BaseModel):
    """The workload search, compact: the cheapest deployments first."""

    workload: str
    rows: list[FleetRow] = Field(default_factory=list)
    rows_total: int = 0
    counts: dict[str, int] = Field(default_factory=dict)
    binding: str | None = Field(default=None, description="Why nothing meets the workload, when nothing does.")
    notes: list[str] = Field(default_factory=list)


class ServingPlan(PlanReport):
    """plan_serving's answer: one configuration's plan, or (with a workload) the ranked deployments."""

    memory: MemoryPlan | None = Field(default=None, description="Memory per device (one configuration only).")
    fleet: FleetBrief | None = Field(default=None, description="With a workload: the ranked deployments.")


def _fleet_brief(res, top: int) -> FleetBrief:
    rows = [FleetRow(deployment=r.label, machine=r.price_key, tier=r.tier, capacity_rps=r.capacity_rps,
                     replicas=r.replicas, machines=r.machines, headroom=r.headroom, usd_per_month=r.monthly,
                     usd_per_month_always_on=r.monthly_always_on, limiting=r.limiting,
                     vllm_flags=r.vllm_flags if i < 3 else None)
            for i, r in enumerate(res.rows[:top])]  # fmt: skip
    return FleetBrief(workload=res.workload, rows=rows, rows_total=len(res.rows), counts=res.counts,
                      binding=res.binding, notes=res.notes)


@guard()
async def plan_serving(
    model: Model = P.MODEL.default,
    accelerator: Accelerator = P.ACCELERATOR.default,
    count: Count = P.COUNT.default,
    quant: Quant = P.QUANT.default,
    kv_dtype: KvDtype = P.KV_DTYPE.default,
    max_model_len: MaxLen = P.MAX_MODEL_LEN.default,
    speculative: Speculative = P.SPECULATIVE.default,
    price_per_hour: Price = P.PRICE_PER_HOUR.default,
    profile: Profile = P.PROFILE.default,
    context: arg(P.PLAN_CONTEXT) = P.PLAN_CONTEXT.default,
    output_tokens: arg(P.PLAN_OUTPUT_TOKENS) = P.PLAN_OUTPUT_TOKENS.default,
    workload: Annotated[Workload | None, Field(description="A workload (peak rate, lengths, SLOs, traffic shape, "
                                               "acceptable models): search the whole catalog for the cheapest "
                                               "deployments that meet it instead of planning one config.")] = None,
    top: Annotated[int, Field(ge=1, le=50, description="Ranked deployments returned (workload only).")] = 8,
) -> Annotated[CallToolResult, ServingPlan]:
    """Before spending money: will this model fit this hardware, how much KV cache, how many concurrent users
    at a context, predicted TTFT/TPOT/throughput, and cost per million tokens (with price_per_hour). When it
    does not fit, lists changes that would (fp8/w4a16 weights, fp8 KV, more devices, shorter context).
    With a workload: the cheapest deployments across accelerators, formats, TP, KV dtype, MTP, platforms and
    price tiers that meet its SLOs, with replicas, monthly cost and the limiting factor (seconds).
    """
    from inferctl.ops.plan import plan

    if workload is not None:
        from inferctl.ops.fleet import plan_fleet

        res = await in_thread(lambda: plan_fleet(workload))
        brief = _fleet_brief(res, top)
        out = ServingPlan(fits=bool(res.rows), fleet=brief, notes=res.notes)
        c = res.counts
        lines = [f"**{len(res.rows)} deployments** meet: {res.workload}",
                 f"{c.get('candidates', 0)} candidates, {c.get('simulated', 0)} simulated, {c.get('pruned', 0)} "
                 f"pruned, {c.get('not_fitting', 0)} not fitting"]
        if res.binding:
            lines.append(f"**{res.binding}**")
        lines += [f"{i}. {r.deployment} on {r.machines} x {r.machine} ({r.tier}): {r.replicas} replicas, "
                  f"{fmt(r.usd_per_month, '', 0)} USD/month ({fmt(r.usd_per_month_always_on, '', 0)} always on), "
                  f"{fmt(r.capacity_rps, '', 2)} req/s per replica, limited by {r.limiting}"
                  for i, r in enumerate(brief.rows, 1)]
        return result(out, "\n".join(lines))

    args = ConfigArgs(model=model, accelerator=accelerator, count=count, quant=quant, kv_dtype=kv_dtype,
                      max_model_len=max_model_len, speculative=speculative, price_per_hour=price_per_hour,
                      profile=profile)
    r = ServingPlan.model_validate(
        (await in_thread(lambda: plan(_config(args), context=context, output_tokens=output_tokens))).model_dump())
    kv = r.memory.kv
    lines = [f"**{'FITS' if r.fits else 'DOES NOT FIT'}**: KV cache {fmt(kv.kv_cache_tokens)} tokens, max "
             f"concurrency at full context {fmt(kv.max_concurrency, 'x', 2)}"]
    lines += [f"- users {p.concurrency} @ {p.context}: {fmt(p.output_throughput)} out tok/s, TTFT p50 "
              f"{fmt(p.ttft_p50_ms)} ms, TPOT p50 {fmt(p.tpot_p50_ms, '', 2)} ms, $/M out tokens "
              f"{fmt(p.cost_per_million_output_tokens, '', 3)}" for p in r.performance]
    lines += [f"why not: {r.verdict}"] if r.verdict else []
    lines += [f"- fix: {s.change} ({s.flags})" for s in r.suggestions]
    lines += provenance_lines(r.provenance)
    lines += [f"note: {n}" for n in r.notes]
    return result(r, "\n".join(lines))


@guard()
async def simulate_sweep(
    model: Model = P.MODEL.default,
    accelerator: Accelerator = P.ACCELERATOR.default,
    count: Count = P.COUNT.default,
    quant: Quant = P.QUANT.default,
    kv_dtype: KvDtype = P.KV_DTYPE.default,
    max_model_len: MaxLen = P.MAX_MODEL_LEN.default,
    speculative: Speculative = P.SPECULATIVE.default,
    price_per_hour: Price = P.PRICE_PER_HOUR.default,
    profile: Profile = P.PROFILE.default,
    concurrencies: Annotated[IntList | None, Field(description="Users per cell (default [1,2,4,...,256]).")] = None,
    contexts: Annotated[IntList | None, Field(description="Prompt lengths (default [128, 1024]).")] = None,
    output_tokens: arg(P.OUTPUT_TOKENS) = P.OUTPUT_TOKENS.default,
) -> Annotated[CallToolResult, BenchmarkStatus]:
    """Predict a benchmark sweep on hardware you do not have, with the planner's simulator, and store it as a
    run (source: simulated) that reports and comparisons read like a measured one. Seconds, no load anywhere.
    """
    from inferctl.bench.spec import spec_from_flags
    from inferctl.ops.simulate import simulate

    args = ConfigArgs(model=model, accelerator=accelerator, count=count, quant=quant, kv_dtype=kv_dtype,
                      max_model_len=max_model_len, speculative=speculative, price_per_hour=price_per_hour,
                      profile=profile)
    conc = ",".join(map(str, concurrencies or [2**i for i in range(9)]))
    ctxs = ",".join(map(str, contexts or [128, 1024]))

    def go(check):
        spec = spec_from_flags(concurrency=conc, context=ctxs, output_tokens=output_tokens, workers=1)
        summary = simulate(_config(args), spec, command=["inferctl", "mcp", "simulate_sweep"], check=check,
                           names=SIMULATE_NAMES, profile=profile)
        return trim(_status_of(summary.run_id), None, 24)

    status = await in_thread_stoppable(go, seconds=SIMULATE_DEADLINE_S, what="simulate_sweep")
    return result(status, _summary(status))


def tools() -> list[ToolSpec]:
    return [
        ToolSpec(start_benchmark, "write", False, True, "Start a benchmark sweep"),
        ToolSpec(get_benchmark_status, "read", True, False, "Benchmark progress and results"),
        ToolSpec(list_runs, "read", True, False, "List runs"),
        ToolSpec(plan_serving, "read", True, False, "Plan a serving configuration"),
        ToolSpec(simulate_sweep, "read", False, False, "Simulate a sweep", writes_local_store=True),
    ]
