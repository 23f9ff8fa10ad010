"""The planner's input resolved: one :class:`~inferctl.profiles.serving.ServingConfig` with vLLM's defaults filled.

The model itself lives with the deployment profiles (``inferctl.profiles.serving``), which convert into it;
so do the CLI's flags (:func:`build_config`). Defaults
follow vLLM 0.33 where it has one (reference/vllm.md §4), resolved against the accelerator by
:func:`resolve`: ``max_num_seqs`` 256 (1024 on devices with >= 70 GiB, not A100), ``max_num_batched_tokens``
2048 (8192 on >= 70 GiB, 16384 on >= 160 GiB; TPU v6e 1024, v5e 512), block size 16 (CPU 128),
``gpu_memory_utilization`` 0.92, async scheduling on (off on the CPU build).
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from inferctl.catalog import Accelerator, ModelSpec, get_accelerator, load_model
from inferctl.errors import ConfigError
from inferctl.profiles.serving import ServingConfig, SpecDecode

KV_DTYPE_BYTES = {"auto": 2.0, "bf16": 2.0, "bfloat16": 2.0, "fp16": 2.0, "float16": 2.0,
                  "fp8": 1.0, "fp8_e4m3": 1.0, "fp8_e5m2": 1.0}  # fmt: skip


def parse_speculative(text: str | None) -> SpecDecode | None:
    """``mtp``, ``mtp:4``, ``ngram:3``, ``mtp:4@0.8,0.7,0.6,0.5`` (acceptance per position) or ``off``."""
    if text is None or text.strip().lower() in ("", "off", "none", "no"):
        return None
    m = re.fullmatch(r"(mtp|ngram|draft_model)(?::(\d+))?(?:@([\d.,\s]+))?", text.strip().lower())
    if not m:
        raise ConfigError(
            f"Cannot read --speculative '{text}'; write METHOD[:TOKENS][@ACCEPT,...] with METHOD mtp, ngram "
            f"or draft_model, e.g. 'mtp:4' or 'ngram:3@0.5,0.3,0.2'."
        )
    acc = [float(x) for x in m.group(3).split(",") if x.strip()] if m.group(3) else []
    if any(not 0 <= a <= 1 for a in acc):
        raise ConfigError("Speculative acceptance rates must lie between 0 and 1.")
    n = int(m.group(2)) if m.group(2) else (len(acc) or (4 if m.group(1) == "mtp" else 3))
    if n < 1:
        raise ConfigError("--speculative needs at least one draft token.")
    return SpecDecode(method=m.group(1), num_speculative_tokens=n, acceptance=acc)


def build_config(
    *,
    model: str | None = None,
    profile: str | None = None,
    speculative: str | None = None,
    price_per_device_hour: float | None = None,
    **fields: object,
) -> ServingConfig:
    """A ServingConfig from a deployment profile, or from a model name and fields — what the CLI and MCP accept.

    A profile wins over the other fields (it already says model, hardware and vLLM settings); only the
    price can be given alongside it.
    """
    if profile:
        from inferctl.profiles.profile import load_profile
        from inferctl.profiles.serving import serving_config

        cfg = serving_config(load_profile(profile))
        return cfg.model_copy(update={"price_per_device_hour": price_per_device_hour})
    if not model:
        raise ConfigError("Name a model (e.g. gemma-4-12b) or a deployment profile.")
    if isinstance(fields.get("accelerator"), str):  # any alias -> the catalog key; a TPU slice name sets the count
        from inferctl.catalog import resolve_accelerator

        asked = str(fields["accelerator"])
        acc, devices = resolve_accelerator(asked)
        fields["accelerator"] = acc.name
        count = fields.get("count")
        if devices is not None:
            if count not in (None, 1, devices):
                raise ConfigError(f"Accelerator '{asked}' is a slice of {devices} chips but count is "
                                  f"{count}; give one or the other.")
            fields["count"] = devices
    return ServingConfig(model=model, speculative=parse_speculative(speculative),
                         price_per_device_hour=price_per_device_hour, **fields)  # type: ignore[arg-type]


class Resolved(BaseModel):
    """A ServingConfig with every default filled in and its model and accelerator loaded."""

    config: ServingConfig
    model: ModelSpec
    accelerator: Accelerator
    drafter: ModelSpec | None
    tp: int
    replicas: int
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    kv_dtype_bytes: float
    async_scheduling: bool


def _default_seqs_tokens(acc: Accelerator) -> tuple[int, int]:
    if acc.kind == "tpu":
        return 256, (1024 if "v6e" in acc.name else 512)
    big = acc.memory_gib >= 70 and not acc.name.startswith("a100")
    seqs = 1024 if (acc.memory_gib >= 160 or big) else 256
    tokens = 16384 if acc.memory_gib >= 160 else (8192 if big else 2048)
    return seqs, tokens


def resolve(cfg: ServingConfig) -> Resolved:
    """Load the model and accelerator and fill vLLM's defaults. Raises ConfigError on bad combinations."""
    acc = get_accelerator(cfg.accelerator)
    model = load_model(cfg.model)
    if model.drafter_for:
        raise ConfigError(f"{model.name} is a speculative-decoding assistant; plan its target {model.drafter_for}.")
    if cfg.quant not in model.formats:
        raise ConfigError(f"{model.name} has no '{cfg.quant}' weights; choose one of: {', '.join(model.formats)}.")
    if cfg.kv_dtype not in KV_DTYPE_BYTES:
        raise ConfigError(f"Unknown --kv-dtype '{cfg.kv_dtype}'; choose one of: auto, bf16, fp8.")
    tp = cfg.tp or cfg.count
    if cfg.count % tp:
        raise ConfigError(f"--count {cfg.count} is not a multiple of --tp {tp}; each replica needs tp devices.")
    if tp > acc.max_per_host and acc.kind == "gpu":
        raise ConfigError(f"--tp {tp} exceeds the {acc.max_per_host} {acc.display_name} devices one host holds.")
    seqs, tokens = _default_seqs_tokens(acc)
    max_len = cfg.max_model_len or model.max_position_embeddings
    if max_len > model.max_position_embeddings:
        raise ConfigError(
            f"--max-model-len {max_len} exceeds {model.name}'s maximum of {model.max_position_embeddings}."
        )
    drafter = None
    if cfg.speculative and cfg.speculative.method == "mtp":
        if not model.drafter:
            raise ConfigError(f"{model.name} has no MTP assistant in the catalog; use --speculative ngram:N.")
        drafter = load_model(model.drafter)
    return Resolved(
        config=cfg,
        model=model,
        accelerator=acc,
        drafter=drafter,
        tp=tp,
        replicas=cfg.count // tp,
        max_model_len=max_len,
        max_num_seqs=cfg.max_num_seqs or seqs,
        max_num_batched_tokens=cfg.max_num_batched_tokens or tokens,
        block_size=cfg.block_size or (128 if acc.kind == "cpu" else 16),
        kv_dtype_bytes=KV_DTYPE_BYTES[cfg.kv_dtype],
        async_scheduling=cfg.async_scheduling if cfg.async_scheduling is not None else acc.kind != "cpu",
    )
