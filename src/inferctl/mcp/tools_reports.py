"""Report, compare and cost tools over ``inferctl.ops.report / compare / cost`` (any run: measured, imported
or simulated). PNG charts are left to the CLI (matplotlib is slow to start); the markdown and the interactive
HTML report are written into the run directory for people to open.
"""

from typing import Annotated, Literal

from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from inferctl.mcp.adapt import fmt, guard, in_thread, result
from inferctl.mcp.policy import ToolSpec
from inferctl.mcp.tools_runs import RUN_PATTERN, RunArg
from inferctl.ops.compare import CompareResult
from inferctl.ops.report import ReportResult
from inferctl.report.cost import CostRanking, CostResult

RunIds = Annotated[list[Annotated[str, Field(pattern=RUN_PATTERN)]], Field(
    min_length=2, max_length=6, description="Run ids from list_runs; the first is the baseline.")]
Slos = Annotated[list[Annotated[str, Field(max_length=40)]] | None, Field(
    max_length=6, description="SLOs to judge, like 'ttft_p95_ms=2000', 'tpot_p95_ms=100' (default: the run's or "
                              "inferctl's defaults).")]


@guard(timeout=55.0)
async def get_run_report(
    run_id: RunArg,
    slos: Slos = None,
    write_html: Annotated[bool, Field(description="Also write the interactive report.html for people.")] = True,
) -> Annotated[CallToolResult, ReportResult]:
    """Findings of one run, computed not guessed: per context the peak throughput and the load where it
    saturates, the highest load meeting the SLOs, the recommended operating range, failure boundaries,
    client-bound cells, speculative-decoding and KV-cache pressure notes. Writes report.md (and report.html)
    into the run directory. Use for "summarize the benchmark"; the markdown is resource inferctl://runs/{id}/report.
    """
    from inferctl.ops.report import report

    r = await in_thread(lambda: report(run_id, slos=slos, png=False, html=write_html))
    f = r.findings
    lines = [f"**Run {r.run_id}** ({r.source}), SLOs {', '.join(f.slos)}"]
    lines += [f"- ctx {row.context}: peak {fmt(row.peak_request_throughput, ' req/s', 2)} at load "
              f"{fmt(row.peak_load, '', 0)}, saturates at {fmt(row.saturation_load, '', 0)}, SLO max load "
              f"{fmt(row.slo_max_load, '', 0)}" for row in f.rows[:16]]
    lines += [f"- [{x.severity}] {x.text}" for x in f.findings[:12]]
    lines.append(f"files: {r.markdown}" + (f", {r.html}" if r.html else ""))
    return result(r, "\n".join(lines))


@guard(timeout=55.0)
async def compare_runs(
    run_ids: RunIds,
    labels: Annotated[list[Annotated[str, Field(max_length=40)]] | None, Field(
        max_length=6, description="Short names per run, e.g. ['mtp-off', 'mtp-on'].")] = None,
    context: Annotated[int | None, Field(ge=1, le=10_000_000, description="Only the matched cells of this "
                                         "context length (verdicts still cover every cell).")] = None,
    max_cells: Annotated[int, Field(ge=0, le=200, description="Most matched cells to return (each carries every "
                                    "metric for every run).")] = 12,
) -> Annotated[CallToolResult, CompareResult]:
    """Compare runs cell by cell (same context and load): each metric's value per run, the change vs the first
    run, the clear winner per cell, and per-metric verdicts with where each configuration wins. Use for "did
    MTP help", "QAT vs bf16", "L4 vs RTX PRO 6000". Configuration differences are listed too.
    """
    from inferctl.ops.compare import compare

    r = await in_thread(lambda: compare(run_ids, labels=labels, files=False))
    cmp = r.comparison
    matched = len(cmp.cells)
    cells = [x for x in cmp.cells if context is None or x.context == context][:max_cells]
    # Verdicts keep their first statements (the biggest wins and losses); every number is in the cells.
    verdicts = [v.model_copy(update={"statements": v.statements[:2]}) for v in cmp.verdicts]
    r = r.model_copy(update={"comparison": cmp.model_copy(update={"cells": cells, "verdicts": verdicts})})
    lines = [f"**{' vs '.join(x.label for x in cmp.runs)}** (baseline {cmp.baseline}), {matched} matched cells"
             + (f", {len(cells)} returned (pass context= for one row)" if len(cells) < matched else "")]
    lines += [f"- {s}" for s in cmp.summary[:10]]
    lines += [f"- differs: {k}: {v}" for k, v in list(cmp.config_differences.items())[:8]]
    return result(r, "\n".join(lines))


class CostAnswer(BaseModel):
    """One run priced, or several runs ranked by cost at the same SLOs."""

    result: CostResult | None = None
    ranking: CostRanking | None = None
    cells_included: bool = Field(description="False: per-cell costs were left out (include_cells=true for them).")


def _lean(r: CostResult, include_cells: bool) -> CostResult:
    return r if include_cells else r.model_copy(update={"cells": []})


@guard(timeout=55.0)
async def estimate_cost(
    run_ids: Annotated[list[Annotated[str, Field(pattern=RUN_PATTERN)]], Field(
        min_length=1, max_length=6, description="One run to price, or several to rank.")],
    hardware: Annotated[list[Annotated[str, Field(max_length=60)]] | None, Field(
        max_length=6, description="Price keys per run (cloudrun-l4, gce-g2-standard-48, tpu-v6e...), a profile, "
                                  "or an accelerator; default: what the run recorded.")] = None,
    price_per_hour: Annotated[float | None, Field(gt=0, le=10_000, description="USD per hour instead of the "
                                                  "catalog (one run only).")] = None,
    tier: Annotated[Literal["on-demand", "spot", "committed-1y", "committed-3y"], Field(
        description="Pricing tier.")] = "on-demand",
    active_hours: Annotated[float, Field(ge=0, le=24, description="Hours per day the service is busy (for the "
                                         "scale-to-zero monthly estimate).")] = 8.0,
    slos: Slos = None,
    include_cells: Annotated[bool, Field(description="Also return the cost of every cell (large); by default "
                                         "only the per-context cost at SLO capacity and the monthly totals.")] = False,
) -> Annotated[CallToolResult, CostAnswer]:
    """Cost per million requests and per million output tokens for each cell and at the highest load meeting
    the SLOs, plus a month always-on vs active-only (scale to zero). With several runs: ranked cheapest first
    at the same SLOs. Prices come from the dated catalog (or price_per_hour). Use for "do a cost analysis".
    """
    from inferctl.ops.cost import cost_compare, cost_of

    if len(run_ids) == 1:
        hw = hardware[0] if hardware else None
        r = await in_thread(lambda: cost_of(run_ids[0], hardware=hw, price_per_hour=price_per_hour, tier=tier,
                                            slos=slos, active_hours=active_hours))
        lines = [f"**{r.label}** on {r.hardware.key} at ${r.hardware.usd_per_hour:.3f}/h ({r.hardware.tier}); "
                 f"month always-on ${r.monthly.always_on_usd:,.0f}, active-only ${r.monthly.active_only_usd:,.0f}"]
        lines += [f"- ctx {c.context}: at SLO capacity {fmt(c.request_throughput, ' req/s', 2)}, "
                  f"${fmt(c.usd_per_million_output_tokens, '', 3)}/M output tokens" for c in r.capacity[:16]]
        answer = CostAnswer(result=_lean(r, include_cells), cells_included=include_cells)
        return result(answer, "\n".join(lines + [f"note: {n}" for n in r.notes[:5]]))
    if price_per_hour is not None:
        from mcp.server.mcpserver.exceptions import ToolError

        raise ToolError("price_per_hour prices one run; to rank several, give hardware per run instead.")
    ranking = await in_thread(lambda: cost_compare(run_ids, hardware=hardware, tier=tier, slos=slos,
                                                   active_hours=active_hours))
    lines = [f"**Cost ranking** at SLOs {', '.join(ranking.slos)}"] + [f"- {s}" for s in ranking.summary[:10]]
    ranking = ranking.model_copy(update={"results": [_lean(x, include_cells) for x in ranking.results]})
    return result(CostAnswer(ranking=ranking, cells_included=include_cells), "\n".join(lines))


def tools() -> list[ToolSpec]:
    # Reports write report.md/.html into the run directory: a local artifact, like simulate_sweep.
    return [
        ToolSpec(get_run_report, "read", True, False, "Run report and findings", writes_local_store=True),
        ToolSpec(compare_runs, "read", True, False, "Compare runs"),
        ToolSpec(estimate_cost, "read", True, False, "Estimate cost"),
    ]
