"""Cost: what each cell's throughput costs at an hourly price, at the SLO-bounded capacity, and per month.

Arithmetic (one deployment = one instance or slice, billed ``usd_per_hour`` while it exists):

- $/1M requests       = usd_per_hour / (request_throughput × 3600) × 1e6
- $/1M output tokens  = usd_per_hour / (output_throughput × 3600) × 1e6
- $/1M total tokens   = usd_per_hour / (total_token_throughput × 3600) × 1e6

These assume the instance is kept as busy as in the cell. The **SLO-bounded capacity** of a context is the
cell with the highest request throughput among those meeting every SLO (``findings.slo_misses``): the
cheapest honest price per request. **Monthly**: always-on = usd_per_hour × 730 h; with a daily
active-hours profile, scale-to-zero (Cloud Run, min-instances 0) bills only active hours × 730/24 days.
VMs and TPUs bill while they exist: the same saving needs stopping them, which the result says.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.catalog.prices import HOURS_PER_MONTH, HardwarePrice
from inferctl.report.data import Run, hardware_label, load_of, measured, rows
from inferctl.report.findings import num, resolve_slos, slo_misses, slo_text

DAYS_PER_MONTH = HOURS_PER_MONTH / 24.0


def per_million(usd_per_hour: float, per_second: float | None) -> float | None:
    """USD per million units produced at ``per_second`` units/s by something costing ``usd_per_hour``."""
    if not per_second or per_second <= 0:
        return None
    return round(usd_per_hour / (per_second * 3600.0) * 1e6, 6)


class CellCost(BaseModel):
    cell: str
    context: int
    load: float
    request_throughput: float | None = None
    output_throughput: float | None = None
    usd_per_million_requests: float | None = None
    usd_per_million_output_tokens: float | None = None
    usd_per_million_total_tokens: float | None = None
    meets_slo: bool = False


class CapacityCost(BaseModel):
    """Per context: the cheapest cell that still meets the SLOs (None fields: no cell does)."""

    context: int
    cell: str | None = None
    load: float | None = None
    request_throughput: float | None = None
    output_throughput: float | None = None
    usd_per_million_requests: float | None = None
    usd_per_million_output_tokens: float | None = None
    usd_per_million_total_tokens: float | None = None
    note: str = ""


class MonthlyCost(BaseModel):
    hours_per_month: float = HOURS_PER_MONTH
    always_on_usd: float = Field(description="usd_per_hour × 730.")
    active_hours_per_day: float
    active_only_usd: float = Field(description="Billed only during active hours (× 730/24 days).")
    mode: Literal["scale-to-zero", "stop-when-idle"] = Field(
        description="scale-to-zero: the platform does it (Cloud Run); stop-when-idle: you must stop the VM/TPU.")
    saving_usd: float


class CostResult(BaseModel):
    """``inferctl cost RUN --json``."""

    run_id: str
    label: str
    hardware: HardwarePrice
    slos: list[str]
    slo_source: str
    cells: list[CellCost] = Field(default_factory=list)
    capacity: list[CapacityCost] = Field(default_factory=list)
    monthly: MonthlyCost
    notes: list[str] = Field(default_factory=list)


def cost(run: Run, hw: HardwarePrice, *, slos: list[str] | None = None, max_error_rate: float = 0.01,
         active_hours: float = 8.0, label: str | None = None) -> CostResult:
    """Price every cell of a run and its SLO-bounded capacity per context (pure)."""
    slo_list, source = resolve_slos(run, slos)
    p = hw.usd_per_hour
    out = CostResult(run_id=run.run_id, label=label or run.run_id, hardware=hw,
                     slos=[slo_text(s) for s in slo_list], slo_source=source, monthly=_monthly(hw, active_hours))
    for ctx, cells in rows(run.cells).items():
        best: CellCost | None = None
        for c in cells:
            m = c.metrics
            ok = measured(c)
            cc = CellCost(
                cell=c.id, context=ctx, load=load_of(c),
                request_throughput=m.request_throughput if ok else None,
                output_throughput=m.output_throughput if ok else None,
                usd_per_million_requests=per_million(p, m.request_throughput) if ok else None,
                usd_per_million_output_tokens=per_million(p, m.output_throughput) if ok else None,
                usd_per_million_total_tokens=per_million(p, m.total_token_throughput) if ok else None,
                meets_slo=ok and not slo_misses(c, slo_list, max_error_rate))
            out.cells.append(cc)
            if cc.meets_slo and (best is None or (cc.request_throughput or 0) > (best.request_throughput or 0)):
                best = cc
        if best is None:
            out.capacity.append(CapacityCost(context=ctx, note="no cell meets the SLOs"))
        else:
            out.capacity.append(CapacityCost(context=ctx, **best.model_dump(
                include={"cell", "load", "request_throughput", "output_throughput", "usd_per_million_requests",
                         "usd_per_million_output_tokens", "usd_per_million_total_tokens"})))
    if not hw.verified:
        out.notes.append("Some price components are not verified against Google's price pages; see `sources` and "
                         "override them under [prices.KEY] in the config file.")
    if run.meta.source != "measured":
        out.notes.append(f"The run is {run.meta.source}: costs inherit its numbers.")
    if any(c.client.client_bound for c in run.cells):
        out.notes.append("Client-bound cells understate throughput, so their costs are upper bounds.")
    hw_run = hardware_label(run.meta)
    if hw.key not in hw_run:
        out.notes.append(f"Priced as {hw.key}, measured on {hw_run}: a what-if unless they are the same hardware.")
    return out


def _monthly(hw: HardwarePrice, active_hours: float) -> MonthlyCost:
    always = round(hw.usd_per_hour * HOURS_PER_MONTH, 2)
    active = round(hw.usd_per_hour * active_hours * DAYS_PER_MONTH, 2)
    return MonthlyCost(always_on_usd=always, active_hours_per_day=active_hours, active_only_usd=active,
                       mode="scale-to-zero" if hw.scale_to_zero else "stop-when-idle",
                       saving_usd=round(always - active, 2))


# -- ranking ---------------------------------------------------------------------------------------


class RankEntry(BaseModel):
    rank: int | None = Field(description="1 = cheapest; None when no context meets the SLOs.")
    label: str
    run_id: str
    hardware: str
    usd_per_hour: float
    usd_per_million_output_tokens: dict[int, float | None] = Field(description="context -> at SLO capacity.")
    usd_per_million_requests: dict[int, float | None]
    capacity_request_throughput: dict[int, float | None]
    score: float | None = Field(description="Geometric mean of $/1M output tokens over the compared contexts.")
    monthly_always_on_usd: float
    monthly_active_only_usd: float


class CostRanking(BaseModel):
    """``inferctl cost --compare RUN... --json``: options ranked by cost at the same SLOs."""

    slos: list[str]
    contexts: list[int] = Field(description="Contexts every run measured; ranking uses these only.")
    entries: list[RankEntry]
    results: list[CostResult]
    summary: list[str] = Field(default_factory=list)


def rank(results: list[CostResult]) -> CostRanking:
    """Rank priced runs by $/1M output tokens at SLO-bounded capacity over the contexts they share (pure)."""
    common = set.intersection(*({c.context for c in r.capacity} for r in results)) if results else set()
    contexts = sorted(common)
    entries = []
    for r in results:
        cap = {c.context: c for c in r.capacity if c.context in common}
        per_tok = {k: cap[k].usd_per_million_output_tokens for k in contexts}
        vals = [v for v in per_tok.values() if v]
        score = math.exp(sum(math.log(v) for v in vals) / len(vals)) if vals and len(vals) == len(contexts) else None
        entries.append(RankEntry(
            rank=None, label=r.label, run_id=r.run_id, hardware=r.hardware.key, usd_per_hour=r.hardware.usd_per_hour,
            usd_per_million_output_tokens=per_tok,
            usd_per_million_requests={k: cap[k].usd_per_million_requests for k in contexts},
            capacity_request_throughput={k: cap[k].request_throughput for k in contexts},
            score=round(score, 6) if score is not None else None,
            monthly_always_on_usd=r.monthly.always_on_usd, monthly_active_only_usd=r.monthly.active_only_usd))
    entries.sort(key=lambda e: (e.score is None, e.score or 0.0))
    for i, e in enumerate(e for e in entries if e.score is not None):
        e.rank = i + 1
    out = CostRanking(slos=results[0].slos if results else [], contexts=contexts, entries=entries, results=results)
    ranked = [e for e in entries if e.rank]
    if len(ranked) >= 2:
        a, b = ranked[0], ranked[1]
        out.summary.append(f"Cheapest at the same SLOs: {a.label} on {a.hardware} at ${num(a.score)} per 1M output "
                           f"tokens (geometric mean over ctx {', '.join(map(str, contexts))}), "
                           f"{b.score / a.score:.2f}× cheaper than {b.label} on {b.hardware} (${num(b.score)}).")
    for e in entries:
        if e.score is None:
            out.summary.append(f"{e.label} is not ranked: some shared context has no cell meeting the SLOs.")
    if not contexts:
        out.summary.append("The runs share no context length; nothing to rank.")
    return out
