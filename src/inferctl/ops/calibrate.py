"""`inferctl calibrate RUN`: fit a hardware profile to a measured run; per-cell error, MAPE and a heatmap.

Writes the fitted parameters (``calibration.json``, readable by ``--calibration`` of plan, simulate and
sim serve) and ``calibration.html``, a self-contained heatmap of the per-cell error for each metric.
"""

from __future__ import annotations

import html
import json
from functools import partial
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import RunDir, runs_dir
from inferctl.errors import ConfigError
from inferctl.plan.calibrate import METRICS, CellError, FitGroup, MetricError, fit_groups, score, summarize
from inferctl.plan.cells import SimEngine
from inferctl.plan.config import parse_speculative, resolve
from inferctl.plan.perf import PerfParams
from inferctl.profiles.serving import ServingConfig


class CalibrationReport(BaseModel):
    """The fitted parameters and how well they reproduce the run."""

    run_id: str = Field(description="The run fitted on; several joined by ', '.")
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
    serving_config: ServingConfig = Field(description="The first run's serving configuration.")
    runs: list[str] = Field(default_factory=list, description="The runs fitted on (jointly).")
    serving_configs: list[ServingConfig] = Field(default_factory=list, description="Per run.")


def _config(meta, *, model, accelerator, count, tp, quant, max_model_len, max_num_seqs, max_num_batched_tokens,
            block_size, kv_cache_gib, speculative, profile) -> ServingConfig:  # fmt: skip
    if profile:
        from inferctl.profiles.profile import load_profile
        from inferctl.profiles.serving import serving_config

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


def calibrate_run(run_ref: str, **kwargs) -> CalibrationReport:
    """Fit PerfParams for one run's hardware and write them with a heatmap of the per-cell error."""
    return calibrate_runs([run_ref], **kwargs)


def calibrate_runs(run_refs: list[str], *, root: str | Path | None = None, out: Path | None = None,
                   model: str | None = None, accelerator: str = "cpu", count: int = 1, tp: int | None = None,
                   quant: str = "bf16", max_model_len: int | None = None, max_num_seqs: int | None = None,
                   max_num_batched_tokens: int | None = None, block_size: int | None = None,
                   kv_cache_gib: float | None = None, speculative: str | None = None,
                   profile: str | None = None) -> CalibrationReport:  # fmt: skip
    """Fit one hardware profile's PerfParams jointly to several measured runs (e.g. two model sizes).

    Each run is simulated with its own model (the run's, unless ``model`` is given - only allowed for one
    run) and grid; the other settings apply to every run. Runs of two or more model sizes also fit how
    compute efficiency grows with matrix size (``compute_half_hidden``) and attention's own rate
    (``attention_efficiency``, ``attention_half_head_dim``). Writes the parameters and a
    heatmap per run; with several runs cells are named ``<run>/<cell>``.
    """
    if not run_refs:
        raise ConfigError("Name at least one measured run.")
    if model and len(run_refs) > 1:
        raise ConfigError("--model names the measured model of one run; with several runs each run's own model is "
                          "used (the run directory records it).")
    stores = [RunDir.open(ref, runs_dir(str(root) if root else None)) for ref in run_refs]
    groups, specs, configs, resolved_all = [], [], [], []
    for store in stores:
        meta = store.read_meta()
        if meta.source == "simulated":
            raise ConfigError(f"Run {store.path.name} is simulated; calibrate on a measured run.")
        cfg = _config(meta, model=model, accelerator=accelerator, count=count, tp=tp, quant=quant,
                      max_model_len=max_model_len, max_num_seqs=max_num_seqs,
                      max_num_batched_tokens=max_num_batched_tokens, block_size=block_size,
                      kv_cache_gib=kv_cache_gib, speculative=speculative, profile=profile)  # fmt: skip
        resolved = resolve(cfg)
        spec = SweepSpec.model_validate(meta.grid)
        measured = [c for c in store.cells() if c.status == "complete" and c.metrics.ok > 0]
        groups.append(FitGroup(engine_for=partial(SimEngine, resolved), spec=spec, measured=measured,
                               hidden_size=resolved.model.hidden_size,
                               head_dims=sorted({la.head_dim for la in resolved.model.layers})))  # fmt: skip
        specs.append(spec)
        configs.append(cfg)
        resolved_all.append(resolved)
    if len({r.accelerator.name for r in resolved_all}) > 1:
        raise ConfigError("All runs must be of one hardware profile (one accelerator).")
    prior = PerfParams.prior(resolved_all[0])
    params = fit_groups(groups, prior)
    multi = len(stores) > 1
    cells: list[CellError] = []
    per_run_cells = []
    for store, g in zip(stores, groups, strict=True):
        run_cells, _ = score(g.engine_for, params, g.spec, g.measured)
        per_run_cells.append(run_cells)
        cells += [c.model_copy(update={"cell": f"{store.path.name}/{c.cell}"}) if multi else c for c in run_cells]
    errors = summarize(cells)
    prior_cells: list[CellError] = []
    for g in groups:
        prior_cells += score(g.engine_for, prior, g.spec, g.measured)[0]
    prior_errors = summarize(prior_cells)
    out = out or stores[0].path / "calibration.json"
    heat = out.with_suffix(".html")
    report = CalibrationReport(
        run_id=", ".join(s.path.name for s in stores), accelerator=resolved_all[0].accelerator.name,
        model=", ".join(dict.fromkeys(r.model.name for r in resolved_all)), params=params, prior=prior,
        errors=errors, prior_errors=prior_errors, cells=cells, cells_used=sum(len(g.measured) for g in groups),
        params_path=str(out), heatmap_path=str(heat), serving_config=configs[0],
        runs=[s.path.name for s in stores], serving_configs=configs,
    )  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
    pages = [heatmap_html(report.model_copy(update={"run_id": s.path.name, "cells": c,
                                                    "errors": summarize(c)}), spec)
             for s, c, spec in zip(stores, per_run_cells, specs, strict=True)]  # fmt: skip
    heat.write_text("\n".join(pages), encoding="utf-8")
    return report


# -- corpus mode: calibrate accelerators on the public measurement corpus -------------------------------


class CorpusFit(BaseModel):
    """One accelerator fitted on its corpus entries (any models)."""

    accelerator: str
    params: PerfParams = Field(description="Fitted efficiency factors and overheads.")
    prior: PerfParams = Field(description="The uncalibrated catalog priors the fit started from.")
    entries: list[str] = Field(description="The corpus entry ids fitted on.")
    sources: list[str] = Field(description="The sources those entries come from.")
    skipped: list[dict[str, str]] = Field(default_factory=list,
                                          description="Entries that could not be simulated, with the reason.")
    errors: dict[str, MetricError] = Field(description="Per metric, in-sample error of the fitted parameters.")
    prior_errors: dict[str, MetricError] = Field(description="Per metric, error of the priors on the same entries.")
    cells: list[CellError] = Field(description="Per-entry error with the fitted parameters (cell = entry id).")
    params_path: str | None = Field(default=None, description="Where the parameters were written (--calibration).")


class CorpusCalibrationReport(BaseModel):
    """`inferctl calibrate --corpus`: one fit per accelerator with usable corpus entries."""

    accelerators: list[CorpusFit]
    unusable: dict[str, list[dict[str, str]]] = Field(
        default_factory=dict, description="Accelerators none of whose entries could be simulated, with the reasons.")
    note: str = Field(default="In-sample error. benchmarks/corpus_calibration.py measures the held-out error "
                      "(fitted without the entries it predicts), which is what docs/planner.md reports.")


def calibrate_corpus(accelerator: str | None = None, out: Path | None = None) -> CorpusCalibrationReport:
    """Fit each accelerator's roofline efficiencies and overheads on the measurement corpus.

    Every entry of the accelerator counts, whatever its model (the roofline carries efficiency across
    models); entries whose model the planner cannot describe are skipped and counted. With ``out`` (a
    directory) each accelerator's parameters are written to ``<out>/<accelerator>.json``, readable by
    ``--calibration`` of plan, simulate and sim serve.
    """
    from inferctl.plan.corpus_fit import corpus_groups, fit_entries, score_entries

    fits, unusable = [], {}
    for name, acc in corpus_groups(accelerator).items():
        skipped = [{"entry": s.entry_id, "reason": s.reason} for s in acc.skipped]
        if not acc.groups:
            unusable[name] = skipped
            continue
        params = fit_entries(acc.groups)
        cells = score_entries(acc.groups, params)
        fit = CorpusFit(accelerator=name, params=params, prior=acc.groups[0].prior,
                        entries=[g.entry.id for g in acc.groups], sources=acc.sources, skipped=skipped,
                        errors=summarize(cells), prior_errors=summarize(score_entries(acc.groups, None)),
                        cells=cells)  # fmt: skip
        if out is not None:
            path = Path(out) / f"{name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            fit.params_path = str(path)
            path.write_text(json.dumps(fit.model_dump(mode="json"), indent=2) + "\n", encoding="utf-8")
        fits.append(fit)
    if accelerator is not None and not fits:
        (name, why), = unusable.items()
        raise ConfigError(f"None of the {len(why)} corpus entries for {name} can be simulated: {why[0]['reason']}.")
    return CorpusCalibrationReport(accelerators=fits, unusable=unusable)
