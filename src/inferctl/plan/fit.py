"""Will it fit, in one sentence: the single changes that would make a configuration fit, and the refusal.

``plan`` shows the sentence beside its memory table; ``simulate``, ``sim serve`` and the MCP tools refuse
with the same sentence instead of simulating a configuration that cannot load as a row of zeros.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError
from inferctl.plan.config import resolve
from inferctl.plan.memory import MemoryPlan, plan_resolved
from inferctl.profiles.serving import ServingConfig


class Suggestion(BaseModel):
    """A change that makes the configuration fit."""

    change: str = Field(description="What to change, in words.")
    flags: str = Field(description="The inferctl flags for it.")
    kv_cache_tokens: int = Field(description="KV capacity with the change, tokens.")
    max_concurrency: float = Field(description="Requests of max_model_len that fit at once with the change.")


def _variants(cfg: ServingConfig, mem: MemoryPlan) -> list[tuple[str, str, ServingConfig]]:
    from inferctl.catalog import get_accelerator, load_model

    acc, model = get_accelerator(cfg.accelerator), load_model(cfg.model)
    out: list[tuple[str, str, ServingConfig]] = []
    for fmt in ("fp8", "w4a16"):
        if fmt != cfg.quant and fmt in model.formats and model.weight_bytes(fmt) < model.weight_bytes(cfg.quant):
            out.append((f"{fmt} weights", f"--quant {fmt}", cfg.model_copy(update={"quant": fmt})))
    if cfg.kv_dtype in ("auto", "bf16", "bfloat16"):
        out.append(("fp8 KV cache", "--kv-dtype fp8", cfg.model_copy(update={"kv_dtype": "fp8"})))
    tp = cfg.tp or cfg.count
    for n in (2, 4, 8):
        if n > tp and n <= acc.max_per_host:
            out.append((f"{n} devices with tensor parallelism {n}", f"--count {n} --tp {n}",
                        cfg.model_copy(update={"count": n, "tp": n})))
    if mem.max_model_len_that_fits:
        n = mem.max_model_len_that_fits
        out.append((f"max_model_len {n:,}", f"--max-model-len {n}", cfg.model_copy(update={"max_model_len": n})))
    return out


def suggestions(cfg: ServingConfig, mem: MemoryPlan) -> list[Suggestion]:
    """Single changes (format, KV dtype, more devices, shorter context) that make ``cfg`` fit, re-planned."""
    out = []
    for change, flags, variant in _variants(cfg, mem):
        try:
            m = plan_resolved(resolve(variant))
        except Exception:  # noqa: BLE001 - a variant the catalog rejects is simply not suggested
            continue
        if m.fits:
            out.append(Suggestion(change=change, flags=flags, kv_cache_tokens=m.kv.kv_cache_tokens,
                                  max_concurrency=round(m.kv.max_concurrency, 2)))  # fmt: skip
    return out


def no_fit_sentence(mem: MemoryPlan, fixes: list[Suggestion]) -> str:
    """The one sentence every face gives for a configuration that does not fit."""
    what = (f"{mem.model} ({mem.quant} weights, KV {mem.kv_dtype}, max_model_len {mem.max_model_len:,}) does not "
            f"fit {mem.tp * mem.replicas} x {mem.accelerator} (TP {mem.tp}): {mem.reason}")
    if not fixes:
        return f"{what}; no single change (format, fp8 KV, more devices, shorter context) makes it fit."
    return f"{what}; it would fit with " + ", or ".join(f"{s.change} ({s.flags})" for s in fixes) + "."


def require_fit(cfg: ServingConfig, mem: MemoryPlan) -> None:
    """Raise ConfigError with :func:`no_fit_sentence` when ``mem`` does not fit."""
    if not mem.fits:
        raise ConfigError(no_fit_sentence(mem, suggestions(cfg, mem)))
