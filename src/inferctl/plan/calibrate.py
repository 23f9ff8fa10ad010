"""Fit a hardware profile's efficiency factors and overheads to measured sweeps, and score the fit.

The six :class:`~inferctl.plan.perf.PerfParams` (bandwidth and compute efficiency, per-step, per-sequence,
per-request and per-token overheads) are fitted by Nelder-Mead in log space, minimising the mean squared log
error of four per-cell figures: request throughput, output token throughput, p50 TTFT and p50 TPOT. Every
evaluation re-simulates the measured cells with the same load the bench used (its grid is in meta.json).
Several runs (:func:`fit_groups`) are fitted jointly; when they cover two or more model sizes a seventh
parameter, ``compute_half_hidden`` (how matmul efficiency grows with the hidden size), is fitted as well -
one size cannot tell it from compute_efficiency - and so are the attention kernel's own rate
(``attention_efficiency``, ``attention_half_head_dim``: attention speed follows the head dim, not the
hidden size). The error of each cell and the MAPE per metric are the calibration's report; docs/planner.md
states the error measured on the local engine.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import CellResult
from inferctl.errors import ConfigError
from inferctl.plan.cells import simulate_cell
from inferctl.plan.perf import PerfParams

METRICS = ("request_throughput", "output_throughput", "ttft_p50", "tpot_p50")
_FIELDS = ("bw_efficiency", "compute_efficiency", "step_overhead_ms", "per_seq_overhead_ms", "request_overhead_ms",
           "per_token_us")
# Fitted only when the measured runs cover two or more model sizes (one size cannot separate it from
# compute_efficiency); it has no prior, so it is not pulled.
_SIZE_FIELD = "compute_half_hidden"
# Fitted with it: attention's own rate and how it grows with the head dim. Two sizes differ in head dims and
# in how much of a long prefill is attention, which separates attention from matmul cost; unpulled too.
_ATTN_FIELDS = ("attention_efficiency", "attention_half_head_dim")
_FLOOR = {"bw_efficiency": 1e-3, "compute_efficiency": 1e-3, "step_overhead_ms": 1e-3, "per_seq_overhead_ms": 1e-4,
          "request_overhead_ms": 1e-3, "per_token_us": 1e-3, _SIZE_FIELD: 1.0, "attention_efficiency": 1e-3,
          "attention_half_head_dim": 1.0}  # fmt: skip
_CEIL = {"bw_efficiency": 1.5, "compute_efficiency": 1.5, "attention_efficiency": 1.5,
         "attention_half_head_dim": 4096.0}  # fmt: skip


def cell_figures(cell: CellResult) -> dict[str, float | None]:
    """The four figures calibration compares, from a cell's metrics."""
    m = cell.metrics
    return {"request_throughput": m.request_throughput or None, "output_throughput": m.output_throughput or None,
            "ttft_p50": m.ttft.p50, "tpot_p50": m.tpot.p50}  # fmt: skip


class CellError(BaseModel):
    """Prediction error of one cell, percent ((predicted - measured) / measured)."""

    cell: str
    errors: dict[str, float | None] = Field(description="Signed percent error per metric.")
    measured: dict[str, float | None]
    predicted: dict[str, float | None]


class MetricError(BaseModel):
    """Error of one metric over all cells."""

    mape: float = Field(description="Mean absolute percentage error.")
    median_abs: float = Field(description="Median absolute percentage error.")
    max_abs: float = Field(description="Worst cell, absolute percent.")
    cells: int


def score(engine_for: Callable[[PerfParams], object], params: PerfParams, spec: SweepSpec,
          measured: list[CellResult]) -> tuple[list[CellError], dict[str, MetricError]]:  # fmt: skip
    """Simulate the measured cells with ``params``; per-cell errors and per-metric MAPE."""
    engine = engine_for(params)
    cells = {c.id: c for c in spec.cells()}
    out = []
    for meas in measured:
        pred, _, _ = simulate_cell(engine, spec, cells[meas.id])
        pm, mm = cell_figures(pred), cell_figures(meas)
        errs = {k: (100 * (pm[k] - mm[k]) / mm[k]) if pm[k] is not None and mm[k] else None for k in METRICS}
        out.append(CellError(cell=meas.id, errors={k: None if v is None else round(v, 2) for k, v in errs.items()},
                             measured=mm, predicted=pm))  # fmt: skip
    return out, summarize(out)


def summarize(cells: list[CellError]) -> dict[str, MetricError]:
    """MAPE, median and worst absolute error per metric over cells."""
    summary = {}
    for k in METRICS:
        vals = [abs(c.errors[k]) for c in cells if c.errors[k] is not None]
        if vals:
            summary[k] = MetricError(mape=round(statistics.fmean(vals), 2),
                                     median_abs=round(statistics.median(vals), 2), max_abs=round(max(vals), 2),
                                     cells=len(vals))  # fmt: skip
    return summary


def _loss(engine_for, spec: SweepSpec, measured: list[CellResult], params: PerfParams,
          power: float = 2.0) -> tuple[float, int]:  # fmt: skip
    """Summed squared (``power`` 1: absolute) log error over the cells' figures, and how many were compared."""
    engine = engine_for(params)
    cells = {c.id: c for c in spec.cells()}
    total, n = 0.0, 0
    for meas in measured:
        pred, _, _ = simulate_cell(engine, spec, cells[meas.id])
        pm, mm = cell_figures(pred), cell_figures(meas)
        for k in METRICS:
            if pm[k] and mm[k]:
                total += abs(math.log(pm[k] / mm[k])) ** power
                n += 1
    return total, n


def _to_params(x: list[float], fields: tuple[str, ...], base: PerfParams,
               ceil: dict[str, float] | None = None) -> PerfParams:  # fmt: skip
    vals = base.model_dump()
    ceil = ceil or _CEIL
    for name, v in zip(fields, x, strict=True):
        val = max(math.exp(v), _FLOOR[name])
        vals[name] = min(val, ceil.get(name, math.inf))
    return PerfParams(**vals)


def nelder_mead(f: Callable[[list[float]], float], x0: list[float], step: float = 0.7, iters: int = 220,
                tol: float = 1e-6) -> tuple[list[float], float]:  # fmt: skip
    """Minimise ``f`` from ``x0`` (plain Nelder-Mead; no SciPy dependency for five parameters)."""
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step if j == i else 0.0) for j in range(n)] for i in range(n)]
    values = [f(x) for x in simplex]
    for _ in range(iters):
        order = sorted(range(n + 1), key=values.__getitem__)
        simplex, values = [simplex[i] for i in order], [values[i] for i in order]
        if values[-1] - values[0] < tol:
            break
        centroid = [sum(x[j] for x in simplex[:-1]) / n for j in range(n)]
        worst = simplex[-1]
        refl = [c + (c - w) for c, w in zip(centroid, worst, strict=True)]
        fr = f(refl)
        if fr < values[0]:
            exp = [c + 2 * (c - w) for c, w in zip(centroid, worst, strict=True)]
            fe = f(exp)
            simplex[-1], values[-1] = (exp, fe) if fe < fr else (refl, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = refl, fr
        else:
            con = [c + 0.5 * (w - c) for c, w in zip(centroid, worst, strict=True)]
            fc = f(con)
            if fc < values[-1]:
                simplex[-1], values[-1] = con, fc
            else:  # shrink towards the best
                best = simplex[0]
                simplex = [best] + [[b + 0.5 * (x - b) for b, x in zip(best, xs, strict=True)] for xs in simplex[1:]]
                values = [values[0]] + [f(x) for x in simplex[1:]]
    i = min(range(n + 1), key=values.__getitem__)
    return simplex[i], values[i]


# Weight of the pull towards the priors, per parameter, in squared-log units. One sweep of one model cannot
# tell per-token overhead from FLOP cost (both grow with prompt length); without this pull the fit trades
# one for the other freely and predicts other model sizes badly. 0.02 moves a parameter 2x from its prior
# at the cost of ~1% of typical per-cell loss - the data still wins wherever it speaks.
PRIOR_WEIGHT = 0.02


class FitGroup(BaseModel, arbitrary_types_allowed=True):
    """One measured run to fit on: how to build its simulated engine, its grid and its complete cells."""

    engine_for: Callable[[PerfParams], object]
    spec: SweepSpec
    measured: list[CellResult]
    hidden_size: int = Field(description="The measured model's hidden size (decides whether size can be fitted).")
    head_dims: list[int] = Field(default_factory=list, description="The measured model's attention head dims "
                                 "(where the attention curve's fit starts).")


def fit(engine_for: Callable[[PerfParams], object], spec: SweepSpec, measured: list[CellResult],
        start: PerfParams, prior_weight: float = PRIOR_WEIGHT) -> PerfParams:  # fmt: skip
    """Fit PerfParams to one run's measured cells, starting from and regularised towards ``start`` (the priors)."""
    return fit_groups([FitGroup(engine_for=engine_for, spec=spec, measured=measured, hidden_size=0)], start,
                      prior_weight)  # fmt: skip


def fit_groups(groups: list[FitGroup], start: PerfParams, prior_weight: float = PRIOR_WEIGHT,
               iters: int | None = None, robust: bool = False, ceil: dict[str, float] | None = None,
               only: tuple[str, ...] | None = None) -> PerfParams:
    """Fit PerfParams jointly to several measured runs (one hardware profile; any models and settings).

    The loss is the mean squared log error over every figure of every cell of every run, plus the pull
    towards ``start``. When the runs cover two or more model hidden sizes, ``compute_half_hidden`` (how
    matmul efficiency grows with matrix size) is fitted too, unpulled, starting at the geometric mean of
    the sizes, and so is attention's own rate (``attention_efficiency`` from compute_efficiency,
    ``attention_half_head_dim`` from the geometric mean of the runs' head dims); with one size they stay at
    ``start``'s values. ``iters`` caps the Nelder-Mead iterations (default 220, plus 40 per extra field).
    ``robust`` minimises the mean *absolute* log error instead (the median's loss: a few cells far off - a
    queue-dominated TTFT - do not drag every other figure); ``ceil`` overrides the efficiency ceilings
    (default 1.5); ``only`` fits just those of the six parameters (the others, ``compute_half_hidden`` and
    the attention pair keep ``start``'s values).
    """
    if not any(g.measured for g in groups):
        raise ConfigError("The run has no complete cells to calibrate on.")
    sizes = sorted({g.hidden_size for g in groups if g.measured and g.hidden_size > 0}) if only is None else []
    base = _FIELDS if only is None else tuple(k for k in _FIELDS if k in only)
    fields = base + ((_SIZE_FIELD, *_ATTN_FIELDS) if len(sizes) >= 2 else ())
    x0 = [math.log(max(getattr(start, k), _FLOOR[k] * 10)) for k in base]
    if len(sizes) >= 2:
        h0 = start.compute_half_hidden or math.exp(statistics.fmean(math.log(h) for h in sizes))
        dims = sorted({d for g in groups for d in g.head_dims}) or [64]
        d0 = start.attention_half_head_dim or math.exp(statistics.fmean(math.log(d) for d in dims))
        x0 += [math.log(h0), math.log(start.attention_efficiency or start.compute_efficiency), math.log(d0)]
    pulled = len(base)

    def objective(x: list[float]) -> float:
        params = _to_params(x, fields, start, ceil)
        total, n = 0.0, 0
        for g in groups:
            t, k = _loss(g.engine_for, g.spec, g.measured, params, 1.0 if robust else 2.0)
            total, n = total + t, n + k
        ridge = prior_weight * sum((a - b) ** 2 for a, b in zip(x[:pulled], x0[:pulled], strict=True))
        return (total / n if n else math.inf) + ridge

    best, _ = nelder_mead(objective, x0, iters=iters or 220 + 40 * (len(fields) - len(base)))
    return _to_params(best, fields, start, ceil)


def load_params(path: Path | str) -> PerfParams:
    """PerfParams from a calibration file (the ``params`` of `inferctl calibrate`'s output) or a bare object."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Cannot read calibration {path}: {exc}.") from None
    try:
        return PerfParams.model_validate(data.get("params", data))
    except ValueError as exc:
        raise ConfigError(f"{path} does not hold performance parameters: {exc}.") from None


def load_calibration(path: Path | str):
    """PerfParams and their :class:`~inferctl.plan.provenance.SpeedSource` from a calibration file.

    A file `inferctl calibrate` wrote carries its own fit error (``errors``: in-sample, the cells it was fitted
    on), the cells used and the accelerator; a bare parameters object carries none, and says so.
    """
    from inferctl.catalog.accelerators import ErrorBand
    from inferctl.plan.provenance import SpeedSource

    params = load_params(path)
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    data = data if isinstance(data, dict) else {}
    errors = data.get("errors") if isinstance(data.get("errors"), dict) else {}
    cells = data.get("cells_used") if isinstance(data.get("cells_used"), int) else None
    band = None
    try:
        summary = {k: MetricError.model_validate(v) for k, v in errors.items()}
    except ValueError:
        summary = {}
    if summary:
        band = ErrorBand(method="in-sample", measurements=cells or max(e.cells for e in summary.values()),
                         median_abs_pct={k: e.median_abs for k, e in summary.items()},
                         max_abs_pct={k: e.max_abs for k, e in summary.items()})  # fmt: skip
    runs = data.get("runs") or ([data["run_id"]] if isinstance(data.get("run_id"), str) else [])
    fitted_on = f" fitted on {cells} cells of {', '.join(map(str, runs))}" if cells and runs else ""
    return params, SpeedSource(kind="calibration-file", detail=f"calibration file {path}{fitted_on}",
                               measurements=cells, path=str(path),
                               accelerator=data.get("accelerator") if isinstance(data.get("accelerator"), str)
                               else None, error=band)  # fmt: skip
