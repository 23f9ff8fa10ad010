"""The `vllm serve` command line for a profile, and the checks that run before any API call.

``serve_args`` is the single source of the server's argv: Cloud Run gets it as container args,
VM and TPU startup scripts get it quoted with ``shlex.quote``. ``validate`` refuses flags current
vLLM removed (the seed still passes ``--speculative-model``), impossible hardware shapes, and
unsafe settings, before anything is created.
"""

from __future__ import annotations

import ipaddress
import json
import re

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError
from inferctl.profiles.profile import Profile

# Flags (and env vars) that vLLM 0.33 no longer accepts, with what replaced them.
REMOVED_FLAGS: dict[str, str] = {
    "--speculative-model": "--speculative-config '{\"model\": ..., \"num_speculative_tokens\": N}'",
    "--num-speculative-tokens": "--speculative-config '{\"num_speculative_tokens\": N, ...}'",
    "--speculative-draft-tensor-parallel-size": "speculative_config.draft_tensor_parallel_size",
    "--speculative-max-model-len": "speculative_config.max_model_len",
    "--ngram-prompt-lookup-max": "speculative_config {\"method\": \"ngram\", \"prompt_lookup_max\": N}",
    "--ngram-prompt-lookup-min": "speculative_config {\"method\": \"ngram\", \"prompt_lookup_min\": N}",
    "--use-v2-block-manager": "nothing (the V1 engine always uses it)",
    "--disable-log-requests": "nothing (requests are not logged unless --enable-log-requests)",
}
REMOVED_ENV: dict[str, str] = {"VLLM_USE_V1": "nothing (the V0 engine was removed; V1 is the only engine)"}

# Cloud Run's documented minimums per GPU (cpu, memory GiB).
CLOUDRUN_GPU_MINIMUMS: dict[str, tuple[float, float]] = {"nvidia-l4": (4, 16), "nvidia-rtx-pro-6000": (20, 80)}
CLOUDRUN_GPU_VRAM_GB: dict[str, int] = {"nvidia-l4": 24, "nvidia-rtx-pro-6000": 96}
_SECRET_NAMES = re.compile(r"(token|secret|password|api[_-]?key)", re.IGNORECASE)


class ValidationReport(BaseModel):
    """What the pre-flight check found; errors stop a deploy, warnings are printed."""

    errors: list[str] = Field(default_factory=list, description="Problems that make the deploy fail or unsafe.")
    warnings: list[str] = Field(default_factory=list, description="Allowed, but the user should know.")
    fit: str | None = Field(default=None, description="The planner's fit verdict, when the planner is available.")


def serve_args(profile: Profile) -> list[str]:
    """The arguments after `vllm serve` (model first), as an argv list."""
    v = profile.vllm
    args: list[str] = [profile.model.served_path]
    if v.served_model_name:
        args += ["--served-model-name", v.served_model_name]
    args += ["--host", "0.0.0.0", "--port", str(profile.port)]
    pairs = [("--max-model-len", v.max_model_len), ("--dtype", v.dtype), ("--quantization", v.quantization),
             ("--kv-cache-dtype", v.kv_cache_dtype), ("--gpu-memory-utilization", v.gpu_memory_utilization),
             ("--max-num-seqs", v.max_num_seqs), ("--max-num-batched-tokens", v.max_num_batched_tokens)]
    for flag, value in pairs:
        if value is not None:
            args += [flag, str(value)]
    if v.tensor_parallel_size != 1:
        args += ["--tensor-parallel-size", str(v.tensor_parallel_size)]
    if v.enable_prefix_caching is not None:
        args.append("--enable-prefix-caching" if v.enable_prefix_caching else "--no-enable-prefix-caching")
    if v.speculative_config:
        args += ["--speculative-config", json.dumps(v.speculative_config, separators=(",", ":"))]
    if v.enable_auto_tool_choice:
        args.append("--enable-auto-tool-choice")
    if v.tool_call_parser:
        args += ["--tool-call-parser", v.tool_call_parser]
    if v.reasoning_parser:
        args += ["--reasoning-parser", v.reasoning_parser]
    if v.limit_mm_per_prompt is not None:
        args += ["--limit-mm-per-prompt", json.dumps(v.limit_mm_per_prompt, separators=(",", ":"))]
    args += v.extra_args
    return args


def _gib(memory: str) -> float:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(Gi|G|Mi|M)?", memory.strip())
    if not m:
        raise ConfigError(f"Memory '{memory}' is not a size like 32Gi.")
    value = float(m[1])
    unit = m[2] or "Gi"
    return value / 1024 if unit in ("Mi", "M") else value


def _tpu_chips(accelerator: str) -> int | None:
    m = re.fullmatch(r"(v6e|v5litepod|v5e|v5p|v4)-(\d+)", accelerator)
    if not m:
        return None
    chips = int(m[2])
    return chips // 2 if m[1] in ("v4", "v5p") else chips  # v4/v5p types count TensorCores, two per chip


# A release tag (v0.26.0, v0.26.0-cu129) or a digest: what deploys next month is what deployed today.
PINNED = re.compile(r":v?\d+\.\d+(\.\d+)?([-.][\w.-]+)?$|@sha256:[0-9a-f]{64}$")


def validate(profile: Profile) -> ValidationReport:
    """Every check that needs no API call; raise nothing, report everything."""
    r = ValidationReport()
    v = profile.vllm
    for arg in v.extra_args:
        flag = arg.split("=", 1)[0]
        if flag in REMOVED_FLAGS:
            r.errors.append(f"vLLM flag {flag} was removed; use {REMOVED_FLAGS[flag]}.")
        elif arg.startswith("--") and flag in ("--host", "--port", "--api-key"):
            r.errors.append(f"{flag} is set by inferctl; remove it from vllm.extra_args.")
    for name in v.env:
        if name in REMOVED_ENV:
            r.errors.append(f"Environment variable {name} has no effect any more; use {REMOVED_ENV[name]}.")
        if _SECRET_NAMES.search(name):
            r.errors.append(f"vllm.env.{name} looks like a secret; secrets belong in Secret Manager, not profiles.")
    if v.speculative_config is not None:
        spec = v.speculative_config
        if "model" not in spec and "method" not in spec:
            r.errors.append("speculative_config needs a 'model' (MTP assistant / draft) or a 'method' (e.g. ngram).")
        n = spec.get("num_speculative_tokens")
        if n is not None and (not isinstance(n, int) or n <= 0):
            r.errors.append("speculative_config.num_speculative_tokens must be a positive integer.")
        if spec.get("method") == "ngram":
            lo, hi = spec.get("prompt_lookup_min"), spec.get("prompt_lookup_max")
            if isinstance(lo, int) and isinstance(hi, int) and lo > hi:
                r.errors.append("speculative_config.prompt_lookup_min must not exceed prompt_lookup_max.")
    if not PINNED.search(profile.image):
        r.warnings.append(f"image {profile.image} is not pinned to a vLLM version: the same profile deploys a "
                          "different vLLM next month; pin a tag such as vllm/vllm-openai:v0.26.0-cu129 "
                          "(docs/cloud.md, \"Choosing an image\").")
    if profile.platform == "cloudrun":
        _check_cloudrun(profile, r)
    elif profile.platform == "gce":
        _check_vm(profile, r)
    else:
        _check_tpu(profile, r)
    for cidr in profile.allowed_source_ranges:
        try:
            net = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            r.errors.append(f"allowed_source_ranges entry {cidr!r} is not a CIDR like 203.0.113.7/32.")
            continue
        if net.prefixlen == 0:
            r.errors.append(f"allowed_source_ranges {cidr} opens the server to the whole internet; "
                            "list your own address ranges instead.")
    return r


def _check_cloudrun(p: Profile, r: ValidationReport) -> None:
    if p.accelerator not in CLOUDRUN_GPU_MINIMUMS:
        r.errors.append(f"Cloud Run GPUs are {', '.join(CLOUDRUN_GPU_MINIMUMS)}; got '{p.accelerator}'.")
        return
    if p.accelerator_count != 1:
        r.errors.append("Cloud Run supports exactly one GPU per instance (accelerator_count = 1).")
    if p.vllm.tensor_parallel_size > 1:
        r.errors.append(f"tensor_parallel_size {p.vllm.tensor_parallel_size} needs more GPUs than Cloud Run's "
                        "one per instance.")
    min_cpu, min_mem = CLOUDRUN_GPU_MINIMUMS[p.accelerator]
    if p.cpu is None or p.memory is None:
        r.errors.append(f"A Cloud Run {p.accelerator} service needs cpu and memory (at least {min_cpu:g} CPU / "
                        f"{min_mem:g}Gi).")
    else:
        try:
            cpu = float(p.cpu)
        except ValueError:
            r.errors.append(f"cpu '{p.cpu}' is not a number.")
            cpu = min_cpu
        if cpu < min_cpu or _gib(p.memory) < min_mem:
            r.errors.append(f"{p.accelerator} on Cloud Run needs at least {min_cpu:g} CPU and {min_mem:g}Gi memory "
                            f"(profile has {p.cpu} CPU / {p.memory}).")
    if p.scaling.min_instances > p.scaling.max_instances:
        r.errors.append("scaling.min_instances is larger than scaling.max_instances.")
    if p.scaling.min_instances > 0:
        r.warnings.append(f"min_instances = {p.scaling.min_instances}: GPU instances are billed while idle.")
    if p.allow_unauthenticated:
        r.warnings.append("allow_unauthenticated = true: anyone on the internet can call this model and spend your "
                          "GPU hours.")
    if p.allowed_source_ranges:
        r.warnings.append("allowed_source_ranges has no effect on Cloud Run (access is controlled by IAM).")


def _check_vm(p: Profile, r: ValidationReport) -> None:
    if not p.machine_type:
        r.errors.append("A GCE profile needs machine_type (e.g. g2-standard-48).")
    elif p.machine_type.startswith("g2-") and p.accelerator != "nvidia-l4":
        r.errors.append(f"g2 machine types come with NVIDIA L4s; accelerator is '{p.accelerator}'.")
    if p.vllm.tensor_parallel_size > p.accelerator_count:
        r.errors.append(f"tensor_parallel_size {p.vllm.tensor_parallel_size} exceeds the "
                        f"{p.accelerator_count} GPUs of the VM.")
    _check_remote_access(p, r)


def _check_tpu(p: Profile, r: ValidationReport) -> None:
    chips = _tpu_chips(p.accelerator)
    if chips is None:
        r.errors.append(f"'{p.accelerator}' is not a TPU type such as v6e-4 or v5litepod-1.")
    elif p.vllm.tensor_parallel_size > chips:
        r.errors.append(f"tensor_parallel_size {p.vllm.tensor_parallel_size} exceeds the {chips} chips of "
                        f"{p.accelerator}.")
    if not p.runtime_version:
        r.errors.append("A TPU profile needs runtime_version (v2-alpha-tpuv6e for v6e, v2-alpha-tpuv5-lite for v5e).")
    if p.model.bucket:
        r.errors.append("TPU profiles load weights from Hugging Face (hf_repo); bucket mounts are not supported.")
    _check_remote_access(p, r)


def _check_remote_access(p: Profile, r: ValidationReport) -> None:
    r.warnings.append(p.access_hint() or "")
    if not p.allowed_source_ranges:
        r.warnings.append("No allowed_source_ranges: no firewall rule is created, so the server is reachable only "
                          "from inside the VPC (or add your CIDR to the profile).")
