"""`inferctl plan --workload FILE`: the cheapest deployments that meet a workload, ranked (plan/fleet.py).

Reads the workload (a TOML file, or flags), lets flags override its common fields, runs the fleet search
and, when asked, writes the HTML report with the cost-vs-capacity frontier.
"""

from __future__ import annotations

from pathlib import Path

from inferctl.errors import ConfigError
from inferctl.plan.fleet import FleetResult, Row, search
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


_GCE_GPU = {"l4": "nvidia-l4", "a100-40": "nvidia-tesla-a100", "a100-80": "nvidia-a100-80gb",
            "h100": "nvidia-h100-80gb", "h200": "nvidia-h200-141gb"}
_TPU_RUNTIME = {"tpu-v6e": ("v6e", "v2-alpha-tpuv6e"), "tpu-v5e": ("v5litepod", "v2-alpha-tpuv5-lite")}


def _toml_value(v: object) -> str:
    import json

    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(x)}" for k, x in v.items()) + " }"
    return json.dumps(v)  # numbers and strings: TOML's basic strings read JSON's escapes


def profile_toml(row: Row, workload: Workload) -> str:
    """A deployment profile (docs/cloud.md) for one ranked deployment, as TOML to save and edit."""
    from inferctl.catalog import load_model
    from inferctl.catalog.prices import get_price
    from inferctl.plan.fleet import speculative_config

    c = row.candidate
    model = load_model(c.model)
    top: dict[str, object] = {"description": f"{row.label}; {row.replicas} replica(s) for {workload.peak_rate:g} "
                              f"req/s ({workload.name}), from inferctl plan --workload",
                              "platform": row.platform}
    if row.platform == "cloudrun":
        parts = get_price(row.price_key).components
        top |= {"accelerator": f"nvidia-{c.accelerator}", "accelerator_count": 1,
                "cpu": f"{parts.get('cloudrun-vcpu', 8):g}", "memory": f"{parts.get('cloudrun-memory', 32):g}Gi"}
    elif row.platform == "gce":
        top |= {"accelerator": _GCE_GPU.get(c.accelerator, c.accelerator), "accelerator_count": row.devices_per_machine,
                "machine_type": row.price_key.removeprefix("gce-")}
    else:
        prefix, runtime = _TPU_RUNTIME.get(c.accelerator, (c.accelerator.removeprefix("tpu-"), None))
        top |= {"accelerator": f"{prefix}-{row.devices_per_machine}"}
        if runtime:
            top["runtime_version"] = runtime
    if row.tier == "spot":
        top["spot"] = True
    vllm: dict[str, object] = {"served_model_name": model.name, "max_model_len": workload.max_model_len,
                               "tensor_parallel_size": c.tp}
    if c.kv_dtype == "fp8":
        vllm["kv_cache_dtype"] = "fp8"
    if row.replicas_per_machine > 1:  # one server per machine, a replica per TP group: vLLM's data parallelism
        vllm["extra_args"] = ["--data-parallel-size", str(row.replicas_per_machine)]
    if c.mtp:
        drafter = load_model(model.drafter).hf_id if model.drafter else None
        vllm["speculative_config"] = speculative_config(drafter)
    lines = [f"{k} = {_toml_value(v)}" for k, v in top.items()]
    lines += ["", "[model]"]
    if c.quant != "bf16":
        lines.append(f"# the {c.quant} checkpoint of {model.hf_id} (the simulation assumed {c.quant} weights)")
    lines.append(f"hf_repo = {_toml_value(model.hf_id or model.name)}")
    lines += ["", "[vllm]", *[f"{k} = {_toml_value(v)}" for k, v in vllm.items()]]
    if row.platform == "cloudrun":
        lines += ["", "[scaling]", f"min_instances = {0 if row.scale_to_zero else 1}",
                  f"max_instances = {row.machines}"]
    return "\n".join(lines) + "\n"


def plan_fleet(workload: Workload, *, html: str | Path | None = None) -> FleetResult:
    """Search the catalog for the cheapest deployments meeting ``workload``; optionally write the HTML report."""
    result = search(workload)
    if result.rows:
        result.profile = profile_toml(result.rows[0], workload)
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
