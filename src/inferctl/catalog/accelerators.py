"""Accelerators as data: memory, bandwidth, peaks and roofline priors (``data/accelerators.toml``)."""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError

GIB = 1024**3


class ErrorBand(BaseModel):
    """How far the speed model's predictions were from measurements, per metric (absolute percent).

    Metrics use the calibration's names: ``request_throughput``, ``output_throughput``, ``ttft_p50``,
    ``tpot_p50``. Only ever filled from a measurement; a metric nobody measured is absent.
    """

    method: str = Field(description="leave-one-source-out, leave-one-entry-out (held out: error on measurements the "
                        "fit did not see) or in-sample (fitted and scored on the same measurements).")
    measurements: int = Field(description="Measurements (corpus entries or sweep cells) scored.")
    sources: list[str] = Field(default_factory=list, description="Corpus sources the measurements come from.")
    median_abs_pct: dict[str, float] = Field(description="Median absolute percent error per metric.")
    max_abs_pct: dict[str, float] = Field(default_factory=dict, description="Worst measurement per metric.")
    date: str = Field(default="", description="When it was measured (ISO date).")
    command: str = Field(default="", description="The command that reproduces it.")


class AcceleratorCalibration(BaseModel):
    """Speed parameters fitted on the public measurement corpus (``inferctl calibrate``), replacing the priors."""

    params: dict[str, float] = Field(description="PerfParams fields (bw_efficiency, compute_efficiency, "
                                     "step_overhead_ms, ...); a field left out keeps its prior.")
    entries: list[str] = Field(description="Ids of the corpus entries the fit used.")
    error: ErrorBand | None = Field(default=None, description="Held-out error of these parameters.")
    source: str = Field(default="", description="How the fit was made (command, corpus revision).")
    date: str = Field(default="", description="When it was fitted (ISO date).")


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
    calibration: AcceleratorCalibration | None = Field(
        default=None, description="Speed parameters fitted on measurements; None: the priors above are used."
    )
    prior_error: ErrorBand | None = Field(
        default=None, description="The priors' measured error on this accelerator (None: never measured)."
    )

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


@cache
def alias_table() -> dict[str, str]:
    """Every name an accelerator goes by (catalog key and aliases, lower case) -> its catalog key.

    The one alias table: plan, cost and capacity all resolve accelerator names through it.
    """
    table: dict[str, str] = {}
    for name, entry in _raw().items():
        for alias in (name, *entry.get("aliases", [])):
            table[alias.lower()] = name
    return table


def resolve_accelerator(name: str) -> tuple[Accelerator, int | None]:
    """An accelerator name -> (accelerator, devices the name implies, if any).

    ``l4``, ``nvidia-l4``, ``tpu-v6e``, ``v6e``, ``trillium`` name a device; a TPU slice name (``v6e-4``,
    ``tpu-v6e-4``) also says how many chips. Raises ConfigError listing the valid names when there is none.
    """
    key = name.strip().lower()
    table, all_ = alias_table(), accelerators()
    if key in table:
        return all_[table[key]], None
    m = re.fullmatch(r"(.+)-(\d{1,4})", key)
    if m and m.group(1) in table and all_[table[m.group(1)]].kind == "tpu" and int(m.group(2)) >= 1:
        return all_[table[m.group(1)]], int(m.group(2))
    raise ConfigError(f"Unknown accelerator '{name}'; choose one of: {', '.join(sorted(all_))} (or an alias: "
                      f"{', '.join(sorted(set(table) - set(all_)))}; a TPU slice as v6e-4).")


def get_accelerator(name: str) -> Accelerator:
    """The accelerator called ``name`` (its key, an alias or a TPU slice name, case-insensitive).

    Raises ConfigError listing the valid names when there is none.
    """
    return resolve_accelerator(name)[0]
