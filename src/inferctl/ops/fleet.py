"""`inferctl plan --workload FILE`: the cheapest deployments that meet a workload, ranked (plan/fleet.py).

Reads the workload (a TOML file, or flags), lets flags override its common fields, runs the fleet search
and, when asked, writes the HTML report with the cost-vs-capacity frontier.
"""

from __future__ import annotations

from pathlib import Path

from inferctl.errors import ConfigError
from inferctl.plan.fleet import FleetResult, search
from inferctl.plan.workload import Workload, load_workload, workload_from_dict


def build_workload(path: str | Path | None = None, *, model: str | None = None, rate: float | None = None,
                   prompt_tokens: int | None = None, output_tokens: int | None = None,
                   slo: list[str] | None = None) -> Workload:  # fmt: skip
    """A workload from a file, from flags, or a file with flags over it (flags win)."""
    if path is not None:
        base = load_workload(path).model_dump(exclude_none=True)
    else:
        if rate is None:
            raise ConfigError("Give a workload file (--workload FILE) or at least --rate REQ_PER_S and a model.")
        base = {"name": "flags"}
    over: dict = {"rate": rate, "prompt_tokens": prompt_tokens, "output_tokens": output_tokens,
                  "slo": slo or None, "models": [model] if model else None}
    for key, value in over.items():
        if value is not None:
            base[key] = value
    if rate is not None:
        base.pop("users", None)
        base.pop("think_time_s", None)
    if "models" not in base:
        raise ConfigError("Name the acceptable model(s): a MODEL argument, or models = [...] in the workload file.")
    return workload_from_dict(base, "from flags" if path is None else f"file {path} (with flags)")


def plan_fleet(workload: Workload, *, html: str | Path | None = None) -> FleetResult:
    """Search the catalog for the cheapest deployments meeting ``workload``; optionally write the HTML report."""
    result = search(workload)
    if html is not None:
        from inferctl.report.figures import fleet_figure
        from inferctl.report.html import fleet_html

        out = Path(html)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(fleet_html(result, [fleet_figure(result)]), encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot write the report to {out}: {exc.strerror or exc}.") from None
        result.notes.append(f"HTML report: {out}")
    return result
