"""`inferctl cost RUN --hardware X | --price-per-hour X` and `inferctl cost --compare RUN...`."""

from __future__ import annotations

from pathlib import Path

from inferctl.catalog.prices import HardwarePrice, hardware_price
from inferctl.errors import ConfigError
from inferctl.report.cost import CostRanking, CostResult, cost, rank
from inferctl.report.data import Run, load_run


def _price(run: Run, hardware: str | None, price_per_hour: float | None, tier: str) -> HardwarePrice:
    if price_per_hour is not None:
        if price_per_hour <= 0:
            raise ConfigError("--price-per-hour must be a positive number of USD per hour.")
        return HardwarePrice(key=hardware or "custom", description="--price-per-hour", tier=tier,
                             usd_per_hour=price_per_hour, sources=["--price-per-hour"], verified=True)
    if hardware:
        return hardware_price(hardware, tier)
    if run.meta.source == "simulated" and (recorded := _simulated_price(run, tier)) is not None:
        return recorded
    # The run may say what it ran on: an imported --hardware label, or a deployment profile as its target.
    for guess in (run.meta.engine.get("hardware") if isinstance(run.meta.engine, dict) else None,
                  run.meta.target.get("name")):
        if guess:
            try:
                return hardware_price(str(guess), tier)
            except ConfigError:
                continue
    raise ConfigError(f"Run {run.run_id} does not say which priced hardware it ran on; pass --hardware "
                      "(a price key such as cloudrun-l4, a profile, or an accelerator) or --price-per-hour.")


def _simulated_price(run: Run, tier: str) -> HardwarePrice | None:
    """A simulated run knows its hardware: the serving configuration (and profile) it recorded.

    The deployment is priced again from the catalog for ``tier`` (a profile as its whole deployment, an
    accelerator by its catalog deployment of that many devices); a price the simulation was given
    (``price_source: given``) is reused as it was, per device-hour x devices.
    """
    from inferctl.catalog.prices import prices
    from inferctl.ops.plan import catalog_price

    engine = run.meta.engine if isinstance(run.meta.engine, dict) else {}
    cfg = engine.get("serving_config") if isinstance(engine.get("serving_config"), dict) else {}
    accelerator, count = cfg.get("accelerator"), cfg.get("count") or 1
    if not isinstance(accelerator, str) or not isinstance(count, int):
        return None
    per_device = cfg.get("price_per_device_hour")
    if engine.get("price_source") == "given" and isinstance(per_device, int | float) and per_device > 0:
        return HardwarePrice(key=f"{accelerator} x{count}", description="the price the simulation was given",
                             tier=tier, usd_per_hour=round(per_device * count, 6), sources=["simulation input"])
    profile = engine.get("profile") if isinstance(engine.get("profile"), str) else None
    if profile:  # a tier the deployment has no price for is said as such (ConfigError), not guessed around
        return hardware_price(profile, tier)
    exact = [e for e in prices().values() if e.accelerator == accelerator and e.accelerator_count == count]
    if exact:  # the catalog has this very deployment (cloudrun-l4, tpu-v6e-4, gce-a3-ultragpu-8g...)
        return hardware_price(exact[0].key, tier)
    found = catalog_price(accelerator, count, None, tier)  # else its smallest, per device, x count
    if found is None:
        return None
    per_device, label = found
    return HardwarePrice(key=f"{accelerator} x{count}", description=label, tier=tier,
                         usd_per_hour=round(per_device * count, 6), sources=[label])


def cost_of(ref: str, *, hardware: str | None = None, price_per_hour: float | None = None,
            tier: str = "on-demand", root: str | Path | None = None, slos: list[str] | None = None,
            max_error_rate: float = 0.01, active_hours: float = 8.0, label: str | None = None) -> CostResult:
    """Price one run's cells, its SLO-bounded capacity per context, and a month always-on vs active-only."""
    if not 0 <= active_hours <= 24:
        raise ConfigError("--active-hours is hours per day, between 0 and 24.")
    run = load_run(ref, root)
    return cost(run, _price(run, hardware, price_per_hour, tier), slos=slos, max_error_rate=max_error_rate,
                active_hours=active_hours, label=label)


def cost_compare(refs: list[str], *, hardware: list[str] | None = None, labels: list[str] | None = None,
                 tier: str = "on-demand", root: str | Path | None = None, slos: list[str] | None = None,
                 max_error_rate: float = 0.01, active_hours: float = 8.0) -> CostRanking:
    """Rank runs by $/1M output tokens at the same SLOs; ``hardware`` pairs with runs in order."""
    hardware, labels = list(hardware or []), list(labels or [])
    if len(refs) < 2:
        raise ConfigError("cost --compare needs at least two runs.")
    if len(hardware) > len(refs) or len(labels) > len(refs):
        raise ConfigError("Pass at most one --hardware and one --label per run (in the runs' order).")
    if not slos:  # the same SLOs for every option, or the ranking compares different promises
        from inferctl.report.findings import resolve_slos, slo_text

        slos = [slo_text(s) for s in resolve_slos(load_run(refs[0], root), None)[0]]
    results = []
    for i, ref in enumerate(refs):
        results.append(cost_of(ref, hardware=hardware[i] if i < len(hardware) else None, tier=tier, root=root,
                               slos=slos, max_error_rate=max_error_rate, active_hours=active_hours,
                               label=labels[i] if i < len(labels) else None))
    return rank(results)
