"""What to serve, as the planner reads it: one serving configuration, and a deployment profile turned into one.

:class:`ServingConfig` is data (model, format, hardware, vLLM settings; unset fields take vLLM's default,
filled by ``inferctl.plan.config.resolve``). It lives here, below both of its users, so a profile converts
into it without the profile package importing the planner or the planner importing ``cloud/``.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from inferctl.profiles.profile import Profile


class SpecDecode(BaseModel):
    """Speculative decoding: the method, draft length and per-position acceptance."""

    method: str = Field(description="'mtp' (the model's assistant), 'ngram', or 'draft_model'.")
    num_speculative_tokens: int = Field(description="Draft tokens proposed per step.")
    acceptance: list[float] = Field(
        default_factory=list,
        description="Probability the draft token at each position is accepted given all before it were "
        "(empty: the method's default).",
    )


class ServingConfig(BaseModel):
    """One way to serve a model. Unset fields take vLLM's default for the accelerator (``plan.config.resolve``)."""

    model: str = Field(description="Catalog model name, HF id, or a directory with a config.json.")
    accelerator: str = Field(default="l4", description="Catalog accelerator name.")
    count: int = Field(default=1, ge=1, description="Devices in the deployment.")
    tp: int | None = Field(default=None, ge=1, description="Tensor-parallel size (default: count).")
    quant: str = Field(default="bf16", description="Weight format: bf16, fp8 or w4a16.")
    kv_dtype: str = Field(default="auto", description="KV-cache dtype: auto (= bf16) or fp8.")
    max_model_len: int | None = Field(default=None, ge=16, description="Context length (default: the model's).")
    gpu_mem_util: float = Field(default=0.92, gt=0, le=1, description="--gpu-memory-utilization.")
    max_num_seqs: int | None = Field(default=None, ge=1, description="--max-num-seqs.")
    max_num_batched_tokens: int | None = Field(default=None, ge=16, description="--max-num-batched-tokens.")
    block_size: int | None = Field(default=None, ge=1, description="--block-size (tokens per KV block).")
    kv_cache_memory_gib: float | None = Field(
        default=None, gt=0, description="KV memory per device, GiB (--kv-cache-memory-bytes; the CPU KV space)."
    )
    speculative: SpecDecode | None = Field(default=None, description="Speculative decoding, if any.")
    async_scheduling: bool | None = Field(default=None, description="Async scheduling (default: on, CPU off).")
    hybrid_kv_cache: bool = Field(default=True, description="False = --disable-hybrid-kv-cache-manager.")
    language_model_only: bool = Field(default=False, description="Skip vision/audio encoders' weights.")
    price_per_device_hour: float | None = Field(
        default=None, ge=0, description="USD per device-hour, for cost per million tokens."
    )


def serving_config(profile: Profile) -> ServingConfig:
    """The planner's view of a profile (issue 6): catalog model, accelerator, count and vLLM limits."""
    source = profile.model.hf_repo or f"google/{(profile.model.path or '').rstrip('/').rsplit('/', 1)[-1]}"
    low = source.lower()
    quant = "w4a16" if "w4a16" in low else "fp8" if "fp8" in low else "bf16"
    base = re.sub(r"-qat.*$|-(fp8|w4a16).*$", "", source, flags=re.IGNORECASE)
    acc, count = profile.accelerator, profile.accelerator_count
    if m := re.fullmatch(r"(v6e|v5litepod|v5e)-(\d+)", acc):
        acc, count = ("tpu-v6e" if m[1] == "v6e" else "tpu-v5e"), int(m[2])
    else:
        acc = acc.removeprefix("nvidia-")
    v = profile.vllm
    spec = None
    if v.speculative_config:
        method = v.speculative_config.get("method") or ("mtp" if "model" in v.speculative_config else "ngram")
        spec = SpecDecode(method="mtp" if method in ("mtp", "gemma4_mtp") else method,
                          num_speculative_tokens=int(v.speculative_config.get("num_speculative_tokens") or 1))
    return ServingConfig(model=base, accelerator=acc, count=count, tp=v.tensor_parallel_size, quant=quant,
                         kv_dtype="fp8" if (v.kv_cache_dtype or "").startswith("fp8") else "auto",
                         max_model_len=v.max_model_len, gpu_mem_util=v.gpu_memory_utilization or 0.92,
                         max_num_seqs=v.max_num_seqs, max_num_batched_tokens=v.max_num_batched_tokens,
                         speculative=spec)
