"""`inferctl plan`: will it fit, how much KV cache, how many users, how fast, at what cost.

Memory comes from :mod:`inferctl.plan.memory` (vLLM's own KV sizing); speed from a short simulation of
two cells (one user, and as many users as fit) with the same simulator `inferctl simulate` uses; cost
from a price per device-hour: ``--price-per-hour``, or else the price catalog's (:func:`catalog_price`).
When the configuration does not fit, the plan lists changes that would make it fit, each re-planned.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.bench.spec import CellSpec, SweepSpec
from inferctl.plan.cells import SimEngine, simulate_cell
from inferctl.plan.fit import Suggestion, no_fit_sentence, suggestions
from inferctl.plan.memory import MemoryPlan
from inferctl.plan.perf import PerfParams
from inferctl.plan.provenance import Provenance, SpeedSource, provenance
from inferctl.profiles.serving import ServingConfig


class PerfPoint(BaseModel):
    """Predicted performance at one load."""

    concurrency: int = Field(description="Users sending back to back (closed loop).")
    context: int = Field(description="Prompt tokens per request.")
    output_tokens: int = Field(description="Output tokens per request.")
    request_throughput: float = Field(description="Requests/s (all replicas).")
    output_throughput: float = Field(description="Output tokens/s (all replicas).")
    ttft_p50_ms: float | None = Field(description="Median time to first token, ms.")
    tpot_p50_ms: float | None = Field(description="Median time per output token after the first, ms.")
    tokens_per_user: float | None = Field(description="Output tokens/s one user sees (1000 / TPOT).")
    cost_per_million_output_tokens: float | None = Field(
        default=None, description="USD per million output tokens at this load (needs a price)."
    )


class PlanReport(BaseModel):
    """The answer of `inferctl plan` (``--json``)."""

    fits: bool = Field(description="True when the model loads and one request of max_model_len fits.")
    memory: MemoryPlan = Field(description="Memory per device and the KV cache layout.")
    suggestions: list[Suggestion] = Field(
        default_factory=list, description="Changes that would make it fit (empty when it fits)."
    )
    performance: list[PerfPoint] = Field(
        default_factory=list, description="Predictions at one user and at the most users that fit (when it fits)."
    )
    price_per_device_hour: float | None = Field(default=None, description="USD per device-hour used for cost.")
    price_source: str | None = Field(default=None, description="Where the price came from: 'given' "
                                     "(--price-per-hour) or the price catalog entry and its source.")
    perf_params: PerfParams | None = Field(default=None, description="Efficiency factors and overheads used.")
    provenance: Provenance | None = Field(default=None, description="Where the speed parameters and the model's "
                                          "shapes came from, and the measured error band of the speed model.")
    notes: list[str] = Field(default_factory=list, description="Assumptions worth knowing.")
    verdict: str | None = Field(default=None, description="Why it does not fit and what would, in one sentence "
                                "(the refusal `simulate` and `sim serve` give).")


def catalog_price(accelerator: str, count: int = 1, profile: str | None = None,
                  tier: str = "on-demand") -> tuple[float, str] | None:  # fmt: skip
    """USD per device-hour from the price catalog (issue 4), and a label saying which entry it is.

    A profile is priced as its whole deployment (GPU, vCPU and memory on Cloud Run; the machine on GCE; the
    slice on TPU) divided by its devices. An accelerator is priced by the catalog's deployment of it with
    ``count`` devices if there is one (``tpu-v6e-4``, ``gce-g2-standard-48``), else its smallest (catalog
    order breaks ties: Cloud Run first for L4), divided by its devices. None when the catalog has no
    price for it (the local ``cpu``; an entry without a price for the tier).
    """
    from inferctl.catalog.prices import get_price, hardware_price, prices
    from inferctl.errors import ConfigError

    if profile:
        from inferctl.profiles.profile import load_profile

        try:
            hp = hardware_price(profile, tier)
        except ConfigError:
            return None
        devices = max(1, load_profile(profile).accelerator_count or 1)
        return hp.usd_per_hour / devices, f"price catalog: profile {profile} ({hp.tier}, {hp.usd_per_hour:g} USD/h " \
            f"for {devices} device{'s' if devices > 1 else ''})"
    whole = [e for e in prices().values() if e.accelerator == accelerator and e.accelerator_count]
    if not whole:
        return None
    entry = next((e for e in whole if e.accelerator_count == count), None) or min(
        whole, key=lambda e: e.accelerator_count)
    try:
        hp = hardware_price(entry.key, tier)
    except ConfigError:  # in the catalog without a price for this tier
        return None
    n = entry.accelerator_count
    src = get_price(entry.key).source
    return hp.usd_per_hour / n, f"price catalog: {entry.key} ({hp.tier}, {hp.usd_per_hour:g} USD/h for {n} " \
        f"device{'s' if n > 1 else ''}; {src})"


def _point(engine: SimEngine, concurrency: int, context: int, output: int, price: float | None) -> PerfPoint:
    spec = SweepSpec(contexts=[context], concurrencies=[concurrency], output_tokens=output,
                     requests=max(8, 3 * concurrency), warmup=concurrency)  # fmt: skip
    cell = CellSpec(id=f"ctx{context}-c{concurrency}", row=0, context=context, concurrency=concurrency)
    res, _, _ = simulate_cell(engine, spec, cell)
    m = res.metrics
    replicas = engine.resolved.replicas
    out_tps = m.output_throughput * replicas
    cost = None
    if price is not None and out_tps > 0:
        devices = engine.resolved.config.count
        cost = round(price * devices / 3600 / out_tps * 1e6, 4)
    return PerfPoint(
        concurrency=concurrency * replicas, context=context, output_tokens=output,
        request_throughput=round(m.request_throughput * replicas, 4), output_throughput=round(out_tps, 2),
        ttft_p50_ms=m.ttft.p50, tpot_p50_ms=m.tpot.p50,
        tokens_per_user=round(1000 / m.tpot.p50, 2) if m.tpot.p50 else None, cost_per_million_output_tokens=cost,
    )  # fmt: skip


def with_catalog_price(cfg: ServingConfig, profile: str | None = None) -> tuple[ServingConfig, str | None]:
    """``cfg`` with the catalog's price per device-hour when it has none; and where the price came from."""
    if cfg.price_per_device_hour is not None:
        return cfg, "given"
    from inferctl.catalog import get_accelerator

    found = catalog_price(get_accelerator(cfg.accelerator).name, cfg.count, profile)
    if found is None:
        return cfg, None
    return cfg.model_copy(update={"price_per_device_hour": round(found[0], 6)}), found[1]


def check_fits(cfg: ServingConfig) -> None:
    """Refuse (ConfigError, the sentence `plan` gives) a configuration that does not fit."""
    from inferctl.plan.fit import require_fit
    from inferctl.plan.memory import plan_memory

    require_fit(cfg, plan_memory(cfg))


def plan(cfg: ServingConfig, *, context: int = 1024, output_tokens: int = 256, params: PerfParams | None = None,
         params_source: SpeedSource | None = None, profile: str | None = None) -> PlanReport:  # fmt: skip
    """Plan one serving configuration: memory, fit, suggestions, predicted speed and cost.

    Without a price in ``cfg`` the price catalog's is used (the ``profile``'s deployment, or the accelerator's).
    ``params_source`` says where ``params`` came from (a calibration file); without ``params`` the accelerator
    catalog's are used (fitted where it has a fit, else priors), and the report's ``provenance`` says which.
    """
    cfg, price_source = with_catalog_price(cfg, profile)
    engine = SimEngine(cfg, params)
    mem = engine.memory
    report = PlanReport(fits=mem.fits, memory=mem, price_per_device_hour=cfg.price_per_device_hour,
                        price_source=price_source, perf_params=engine.params,
                        provenance=provenance(engine.resolved, params_given=params is not None,
                                              source=params_source))  # fmt: skip
    if not mem.fits:
        report.suggestions = suggestions(cfg, mem)
        report.verdict = no_fit_sentence(mem, report.suggestions)
        return report
    r = engine.resolved
    context = min(context, r.max_model_len - output_tokens) if r.max_model_len > output_tokens else context
    per_request = engine.scheduler().blocks(context + output_tokens)
    users = max(1, min(r.max_num_seqs, int(mem.kv.num_blocks / max(1.0, per_request))))
    report.performance = [_point(engine, 1, context, output_tokens, cfg.price_per_device_hour)]
    if users > 1:
        report.performance.append(_point(engine, users, context, output_tokens, cfg.price_per_device_hour))
    if report.provenance and report.provenance.speed_params == "prior":
        report.notes.append("Speed uses the accelerator's prior efficiency factors (not calibrated); "
                            "run `inferctl calibrate` on a measured sweep to fit them.")  # fmt: skip
    if cfg.price_per_device_hour is None:
        report.notes.append("No price given and none in the price catalog for this hardware: pass "
                            "--price-per-hour for cost per million tokens.")
    if r.model.estimated or (r.drafter is not None and r.drafter.estimated):
        report.notes.append("Some model shapes are estimates (see the catalog's source field).")
    return report
