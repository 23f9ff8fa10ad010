"""`inferctl calibrate RUN`: fit a hardware profile to a measured run; per-cell error, MAPE and a heatmap.

Writes the fitted parameters (``calibration.json``, readable by ``--calibration`` of plan, simulate and
sim serve) and ``calibration.html``, a self-contained heatmap of the per-cell error for each metric.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import RunDir, runs_dir
from inferctl.errors import ConfigError
from inferctl.plan.calibrate import METRICS, CellError, MetricError, fit, score
from inferctl.plan.cells import SimEngine
from inferctl.plan.config import ServingConfig, parse_speculative, resolve
from inferctl.plan.perf import PerfParams


class CalibrationReport(BaseModel):
    """The fitted parameters and how well they reproduce the run."""

    run_id: str
    accelerator: str
    model: str
    params: PerfParams = Field(description="Fitted efficiency factors and overheads.")
    prior: PerfParams = Field(description="The accelerator catalog's priors the fit started from.")
    errors: dict[str, MetricError] = Field(description="Per metric, with the fitted parameters.")
    prior_errors: dict[str, MetricError] = Field(description="Per metric, with the priors.")
    cells: list[CellError] = Field(description="Per-cell error with the fitted parameters.")
    cells_used: int
    params_path: str = Field(description="Where the parameters were written.")
    heatmap_path: str = Field(description="The per-cell error heatmap (HTML).")
    serving_config: ServingConfig


def _config(meta, *, model, accelerator, count, tp, quant, max_model_len, max_num_seqs, max_num_batched_tokens,
            block_size, kv_cache_gib, speculative, profile) -> ServingConfig:  # fmt: skip
    if profile:
        from inferctl.cloud.profiles import load_profile
        from inferctl.cloud.serve import serving_config

        return serving_config(load_profile(profile))
    model = model or meta.model_root or meta.model
    if not model:
        raise ConfigError("The run does not say which model was measured; pass --model.")
    return ServingConfig(model=model, accelerator=accelerator, count=count, tp=tp, quant=quant,
                         max_model_len=max_model_len or meta.max_model_len, max_num_seqs=max_num_seqs,
                         max_num_batched_tokens=max_num_batched_tokens, block_size=block_size,
                         kv_cache_memory_gib=kv_cache_gib, speculative=parse_speculative(speculative))  # fmt: skip


def _color(pct: float | None) -> str:
    if pct is None:
        return "#eee"
    a = min(abs(pct), 50) / 50
    return f"rgb({int(255 * a + 200 * (1 - a))},{int(200 * (1 - a) + 60 * a)},{int(200 * (1 - a) + 60 * a)})"


def heatmap_html(report: CalibrationReport, spec: SweepSpec) -> str:
    """One table per metric: contexts down, concurrencies (or rates) across, signed % error per cell."""
    by_id = {c.cell: c for c in report.cells}
    cols = [str(c) for c in spec.concurrencies] if not spec.rates else [f"{r:g}/s" for r in spec.rates]
    parts = [f"<html><head><meta charset='utf-8'><title>calibration {html.escape(report.run_id)}</title><style>"
             "body{font-family:sans-serif}td,th{padding:4px 8px;text-align:right}td{border:1px solid #fff}"
             "</style></head><body>",
             f"<h1>Calibration of {html.escape(report.accelerator)} on {html.escape(report.run_id)}</h1>",
             f"<p>model {html.escape(report.model)}; parameters: {html.escape(report.params.model_dump_json())}</p>"]
    for metric in METRICS:
        e = report.errors.get(metric)
        title = f"{metric}: MAPE {e.mape:.1f}%, median {e.median_abs:.1f}%" if e else metric
        parts.append(f"<h2>{html.escape(title)}</h2><table><tr><th>context \\ load</th>"
                     + "".join(f"<th>{html.escape(c)}</th>" for c in cols) + "</tr>")
        for row, ctx in enumerate(spec.contexts):
            parts.append(f"<tr><th>{ctx}</th>")
            for cell in [c for c in spec.cells() if c.row == row]:
                err = by_id[cell.id].errors.get(metric) if cell.id in by_id else None
                text = "" if err is None else f"{err:+.1f}%"
                parts.append(f"<td style='background:{_color(err)}'>{text}</td>")
            parts.append("</tr>")
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def calibrate_run(run_ref: str, *, root: str | Path | None = None, out: Path | None = None,
                  model: str | None = None, accelerator: str = "cpu", count: int = 1, tp: int | None = None,
                  quant: str = "bf16", max_model_len: int | None = None, max_num_seqs: int | None = None,
                  max_num_batched_tokens: int | None = None, block_size: int | None = None,
                  kv_cache_gib: float | None = None, speculative: str | None = None,
                  profile: str | None = None) -> CalibrationReport:  # fmt: skip
    """Fit PerfParams for the run's hardware and write them with a heatmap of the per-cell error."""
    store = RunDir.open(run_ref, runs_dir(str(root) if root else None))
    meta = store.read_meta()
    if meta.source == "simulated":
        raise ConfigError(f"Run {store.path.name} is simulated; calibrate on a measured run.")
    cfg = _config(meta, model=model, accelerator=accelerator, count=count, tp=tp, quant=quant,
                  max_model_len=max_model_len, max_num_seqs=max_num_seqs,
                  max_num_batched_tokens=max_num_batched_tokens, block_size=block_size, kv_cache_gib=kv_cache_gib,
                  speculative=speculative, profile=profile)  # fmt: skip
    resolved = resolve(cfg)
    spec = SweepSpec.model_validate(meta.grid)
    measured = [c for c in store.cells() if c.status == "complete" and c.metrics.ok > 0]

    def engine_for(p: PerfParams) -> SimEngine:
        return SimEngine(resolved, p)

    prior = PerfParams.prior(resolved)
    params = fit(engine_for, spec, measured, prior)
    cells, errors = score(engine_for, params, spec, measured)
    _, prior_errors = score(engine_for, prior, spec, measured)
    out = out or store.path / "calibration.json"
    heat = out.with_suffix(".html")
    report = CalibrationReport(
        run_id=store.path.name, accelerator=resolved.accelerator.name, model=resolved.model.name, params=params,
        prior=prior, errors=errors, prior_errors=prior_errors, cells=cells, cells_used=len(measured),
        params_path=str(out), heatmap_path=str(heat), serving_config=cfg,
    )  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    heat.write_text(heatmap_html(report, spec), encoding="utf-8")
    return report
