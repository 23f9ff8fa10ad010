"""Accelerators as data: memory, bandwidth, peaks and roofline priors (``data/accelerators.toml``)."""

from __future__ import annotations

import tomllib
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError

GIB = 1024**3


class Calibration(BaseModel):
    """Roofline parameters fitted on public measurements (the corpus), shipped only where they predicted
    held-out measurements better than the prior. ``inferctl calibrate --corpus`` refits them;
    ``benchmarks/corpus_calibration.py`` measures the held-out error recorded here."""

    bw_efficiency: float
    compute_efficiency: float
    step_overhead_ms: float
    per_seq_overhead_ms: float
    request_overhead_ms: float
    per_token_us: float
    compute_half_hidden: float = 0.0
    measurements: int = Field(description="How many corpus entries the parameters were fitted on.")
    entries: list[str] = Field(description="The corpus entry ids fitted on.")
    sources: list[str] = Field(description="The corpus source ids those entries come from.")
    held_out: Literal["leave-one-source-out", "leave-one-entry-out"] = Field(
        description="How the error band was measured (leave-one-entry-out is weaker: one source).")
    error_band: dict[str, float] = Field(
        description="Held-out median absolute error, percent, per metric (request_throughput, tpot_p50, ttft_p50).")
    prior_error: dict[str, float] = Field(description="The uncalibrated prior's median absolute error, same entries.")
    method: str = Field(description="How the parameters were fitted.")
    date: str = Field(description="When they were fitted (ISO date).")


class Accelerator(BaseModel):
    """One device type. Bandwidths in bytes/s and peaks in FLOP/s are derived from the catalog's units."""

    name: str = Field(description="Catalog key, e.g. 'l4'.")
    display_name: str = Field(description="Vendor name.")
    kind: Literal["gpu", "tpu", "cpu"] = Field(description="Device family; decides vLLM's defaults.")
    aliases: list[str] = Field(default_factory=list, description="Other names accepted on the command line.")
    memory_gib: float = Field(description="Device memory the runtime reports, GiB.")
    bandwidth_gbps: float = Field(description="Peak memory bandwidth, GB/s (1e9).")
    bf16_tflops: float = Field(description="Dense BF16 tensor peak, TFLOP/s.")
    fp8_tflops: float = Field(default=0.0, description="Dense FP8 peak, TFLOP/s (0: no FP8 units).")
    int8_tops: float = Field(default=0.0, description="Dense INT8 peak, TOP/s.")
    link_gbps: float = Field(description="Per-device bandwidth for tensor-parallel all-reduce, GB/s one way.")
    max_per_host: int = Field(description="Most devices one host holds; TP beyond it crosses hosts.")
    bw_efficiency: float = Field(description="Prior: achievable fraction of peak bandwidth.")
    compute_efficiency: float = Field(description="Prior: achievable fraction of peak FLOPs.")
    step_overhead_ms: float = Field(description="Prior: fixed cost of one engine step (scheduling, launch), ms.")
    kv_budget_is_memory: bool = Field(
        default=False, description="True when the KV space is configured directly (vLLM CPU), not from utilization."
    )
    source: str = Field(description="Where the figures come from.")
    date: str = Field(description="When they were recorded (ISO date).")
    calibration: Calibration | None = Field(
        default=None, description="Fitted on public measurements (None: the priors above are used as they are).")

    @property
    def memory_bytes(self) -> float:
        return self.memory_gib * GIB

    @property
    def bandwidth(self) -> float:
        """Peak bandwidth, bytes/s."""
        return self.bandwidth_gbps * 1e9

    def peak_flops(self, weight_format: str) -> float:
        """Peak FLOP/s for the matmuls of a weight format.

        w4a16 dequantizes to bf16 before the multiply, so it runs at the bf16 peak; fp8 uses FP8 units
        where the device has them (A100 and TPUs run FP8 checkpoints as weight-only, at the bf16 peak).
        """
        if weight_format == "fp8" and self.fp8_tflops > 0:
            return self.fp8_tflops * 1e12
        return self.bf16_tflops * 1e12


@cache
def _raw() -> dict[str, dict]:
    text = resources.files("inferctl.catalog").joinpath("data/accelerators.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def accelerators() -> dict[str, Accelerator]:
    """Every accelerator in the catalog, by name."""
    return {name: Accelerator(name=name, **entry) for name, entry in _raw().items()}


def get_accelerator(name: str) -> Accelerator:
    """The accelerator called ``name`` (or one of its aliases, case-insensitive).

    Raises ConfigError listing the valid names when there is none.
    """
    key = name.strip().lower()
    all_ = accelerators()
    if key in all_:
        return all_[key]
    for acc in all_.values():
        if key in (a.lower() for a in acc.aliases):
            return acc
    raise ConfigError(f"Unknown accelerator '{name}'; choose one of: {', '.join(sorted(all_))}.")
