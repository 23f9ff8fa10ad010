"""Where a prediction's numbers come from: the speed parameters, their measured error, the config reader.

Every `plan` and `simulate` answer carries a :class:`Provenance`, so nobody reads a prior as a promise:

* ``speed_params``: ``prior`` (the accelerator catalog's starting points, never fitted), ``calibrated``
  (the catalog's parameters fitted on N public measurements, ``catalog/data/measurements``),
  ``calibration-file`` (a file `inferctl calibrate` wrote, passed with ``--calibration``) or ``given``
  (parameters passed in by a program);
* ``error_band``: the measured error of exactly those parameters on that accelerator - held out for the
  catalog's fits, in-sample for a calibration file (its own fit error) - or nothing, with
  ``error_band_method`` ``not measured``, when no measurement exists. Nothing is estimated here;
* ``config_reader``: how the model's shapes were read (the hand-written catalog, transformers' config
  object as vLLM reads it, or config.json by inferctl's own rules when transformers was not usable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from inferctl.catalog.accelerators import ErrorBand

if TYPE_CHECKING:
    from inferctl.plan.config import Resolved

SpeedKind = Literal["prior", "calibrated", "calibration-file", "given"]
_LABELS = {"request_throughput": "req/s", "output_throughput": "output tok/s", "ttft_p50": "TTFT p50",
           "tpot_p50": "TPOT p50"}  # fmt: skip


class SpeedSource(BaseModel):
    """Where speed parameters handed to plan/simulate came from (a calibration file, or a program)."""

    kind: SpeedKind
    detail: str
    measurements: int | None = None
    path: str | None = None
    accelerator: str | None = Field(default=None, description="The accelerator the parameters were fitted for.")
    error: ErrorBand | None = None


class ErrorBandMetric(BaseModel):
    """One metric's measured error."""

    median_abs_pct: float = Field(description="Median absolute percent error.")
    max_abs_pct: float | None = Field(default=None, description="Worst measurement, absolute percent.")


class Provenance(BaseModel):
    """Which parameters a prediction used and how far such predictions were from measurements."""

    speed_params: SpeedKind = Field(description="prior, calibrated (catalog fit on public measurements), "
                                    "calibration-file (--calibration) or given (by a program).")
    speed_params_detail: str = Field(description="The same in words.")
    measurements: int | None = Field(default=None, description="Measurements the parameters were fitted on "
                                     "(None: not fitted).")
    calibration_file: str | None = Field(default=None, description="The calibration file used, if any.")
    error_band: dict[str, ErrorBandMetric] = Field(
        default_factory=dict, description="Measured absolute percent error per metric (request_throughput, "
        "output_throughput, ttft_p50, tpot_p50); empty when never measured.")
    error_band_method: str = Field(description="leave-one-source-out / leave-one-entry-out (held out), "
                                   "in-sample, or 'not measured'.")
    error_band_detail: str = Field(description="The band in words, or why there is none.")
    config_reader: Literal["catalog", "transformers", "json"] = Field(
        description="How the model's shapes were read: catalog, transformers (as vLLM) or json (own rules).")
    config_reader_detail: str = Field(description="The reader in words.")


def _band(err: ErrorBand | None) -> tuple[dict[str, ErrorBandMetric], str, str]:
    if err is None or not err.median_abs_pct:
        return {}, "not measured", "no measurement of these parameters on this accelerator: treat speed as an estimate"
    band = {k: ErrorBandMetric(median_abs_pct=v, max_abs_pct=err.max_abs_pct.get(k))
            for k, v in err.median_abs_pct.items()}  # fmt: skip
    parts = ", ".join(f"{_LABELS.get(k, k)} {v.median_abs_pct:.0f}%" + (f" (worst {v.max_abs_pct:.0f}%)"
                      if v.max_abs_pct is not None else "") for k, v in band.items())  # fmt: skip
    where = f" from {len(err.sources)} source{'s' if len(err.sources) != 1 else ''}" if err.sources else ""
    detail = f"median absolute error {parts}; {err.method} on {err.measurements} measurements{where}"
    if err.method == "in-sample":
        detail += " (the measurements it was fitted on: other configurations will err more)"
    return band, err.method, detail


def provenance(r: Resolved, *, params_given: bool = False, source: SpeedSource | None = None) -> Provenance:
    """The provenance of a prediction for resolved configuration ``r``."""
    acc = r.accelerator
    if source is not None:
        kind, detail, n, path, err = source.kind, source.detail, source.measurements, source.path, source.error
        if source.accelerator and source.accelerator != acc.name:
            detail += f"; fitted for {source.accelerator}, used here for {acc.name}"
    elif params_given:
        kind, detail, n, path, err = "given", "speed parameters passed in by the caller", None, None, None
    elif acc.calibration is not None:
        cal = acc.calibration
        kind, n, path, err = "calibrated", len(cal.entries), None, cal.error
        detail = (f"{acc.display_name} parameters fitted on {n} public measurement{'s' if n != 1 else ''} "
                  f"(catalog/data/measurements{', ' + cal.date if cal.date else ''})")
    else:
        kind, n, path, err = "prior", None, None, acc.prior_error
        detail = (f"{acc.display_name} prior efficiency factors from the accelerator catalog, not fitted to any "
                  f"measurement; `inferctl calibrate` fits them to a measured sweep")
    band, method, band_detail = _band(err)
    m = r.model
    return Provenance(speed_params=kind, speed_params_detail=detail, measurements=n, calibration_file=path,
                      error_band=band, error_band_method=method, error_band_detail=band_detail,
                      config_reader=m.config_reader, config_reader_detail=m.config_reader_detail)  # fmt: skip
