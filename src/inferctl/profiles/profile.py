"""Deployment profiles: what to deploy where, as data.

A profile says platform (cloudrun | gce | tpu), place, hardware, model source, vLLM settings,
scaling and probes. Shipped examples live in this package (``profile_data/*.toml``); users add
or override them in the config file::

    [cloud]
    project = "my-proj"                 # or GOOGLE_CLOUD_PROJECT

    [profiles.my-l4]
    base = "cloudrun-l4-12b-qat"        # start from a shipped profile...
    region = "europe-west4"             # ...and change what differs
    vllm.max_model_len = 16384

The project is never hard-coded: profile ``project`` > ``GOOGLE_CLOUD_PROJECT`` > ``[cloud] project``.
Secrets never live in a profile: the HF token is the *name* of a Secret Manager secret.
"""

from __future__ import annotations

import os
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from inferctl.errors import ConfigError

Platform = Literal["cloudrun", "gce", "tpu"]
MANAGED_LABEL = "managed-by"
MANAGED_VALUE = "inferctl"
PROFILE_LABEL = "inferctl-profile"
IAP_RANGE = "35.235.240.0/20"  # where Identity-Aware Proxy TCP forwarding connects from


class ProjectMissing(ConfigError):
    """No project in the profile, GOOGLE_CLOUD_PROJECT or the config file's [cloud] table."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSource(_Strict):
    """Where the weights come from: a Hugging Face repo, or a Cloud Storage bucket mounted read-only."""

    hf_repo: str | None = Field(default=None, description="Hugging Face repo id, e.g. google/gemma-4-12B-it.")
    hf_token_secret: str | None = Field(
        default="hf-token", description="Secret Manager secret holding the HF token (None: public model).")
    bucket: str | None = Field(default=None, description="Cloud Storage bucket with the weights (FUSE, read-only).")
    path: str | None = Field(default=None, description="Folder inside the bucket.")
    mount_path: str = Field(default="/mnt/models", description="Where the bucket is mounted in the container.")

    @model_validator(mode="after")
    def _one_source(self) -> ModelSource:
        if not self.hf_token_secret:  # "" in TOML means: a public model, no token
            self.hf_token_secret = None
        if bool(self.hf_repo) == bool(self.bucket):
            raise ValueError("model needs exactly one of hf_repo or bucket")
        if self.bucket and not self.path:
            raise ValueError("model.bucket needs model.path (the folder with config.json)")
        return self

    @property
    def served_path(self) -> str:
        """What `vllm serve` is given: the repo id or the mounted folder."""
        if self.hf_repo:
            return self.hf_repo
        return f"{self.mount_path.rstrip('/')}/{(self.path or '').strip('/')}"


class VLLMSettings(_Strict):
    """`vllm serve` settings (current flag names only; see serve.py for the removed ones)."""

    served_model_name: str | None = Field(default=None, description="--served-model-name.")
    max_model_len: int | None = Field(default=None, gt=0, description="--max-model-len.")
    dtype: str | None = Field(default=None, description="--dtype (auto, bfloat16, float16).")
    quantization: str | None = Field(default=None, description="--quantization (usually read from the checkpoint).")
    kv_cache_dtype: str | None = Field(default=None, description="--kv-cache-dtype (auto, fp8, ...).")
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1, description="--gpu-memory-utilization.")
    max_num_seqs: int | None = Field(default=None, gt=0, description="--max-num-seqs.")
    max_num_batched_tokens: int | None = Field(default=None, gt=0, description="--max-num-batched-tokens.")
    tensor_parallel_size: int = Field(default=1, gt=0, description="--tensor-parallel-size.")
    enable_prefix_caching: bool | None = Field(default=None, description="--[no-]enable-prefix-caching.")
    speculative_config: dict[str, Any] | None = Field(
        default=None, description="--speculative-config JSON: an MTP assistant model or an ngram method.")
    enable_auto_tool_choice: bool = Field(default=False, description="--enable-auto-tool-choice.")
    tool_call_parser: str | None = Field(default=None, description="--tool-call-parser (gemma4 for Gemma 4).")
    reasoning_parser: str | None = Field(default=None, description="--reasoning-parser (gemma4 for Gemma 4).")
    limit_mm_per_prompt: dict[str, Any] | None = Field(default=None, description="--limit-mm-per-prompt JSON.")
    extra_args: list[str] = Field(default_factory=list,
        description="More `vllm serve` flags, checked against removed ones.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment for the server (no secrets).")


class Scaling(_Strict):
    min_instances: int = Field(default=0, ge=0, description="Cloud Run minimum instances (billed while idle).")
    max_instances: int = Field(default=1, ge=1, description="Cloud Run maximum instances.")
    concurrency: int = Field(default=16, ge=1, description="Requests per instance Cloud Run sends at once.")


class Probe(_Strict):
    """Startup probe: vLLM loads weights for minutes before it listens."""

    kind: Literal["tcp", "http"] = "tcp"
    initial_delay_s: int = Field(default=60, ge=0, le=240)
    period_s: int = Field(default=15, ge=1, le=240)
    timeout_s: int = Field(default=10, ge=1, le=240)
    failure_threshold: int = Field(default=120, ge=1)


class Profile(_Strict):
    """One deployment of vLLM on Google Cloud."""

    name: str = Field(description="Profile name (the table key); also the default resource name.")
    description: str = ""
    platform: Platform
    project: str | None = Field(default=None, description="Project id; default GOOGLE_CLOUD_PROJECT or [cloud].")
    region: str | None = Field(default=None, description="Cloud Run region.")
    zone: str | None = Field(default=None, description="GCE / TPU zone.")
    resource_name: str | None = Field(default=None, description="Service / VM / queued resource id (default: name).")
    accelerator: str = Field(description="nvidia-l4, nvidia-rtx-pro-6000, or a TPU type such as v6e-4.")
    accelerator_count: int = Field(default=1, ge=1, description="GPUs per instance (Cloud Run: 1).")
    cpu: str | None = Field(default=None, description="Cloud Run CPU limit, e.g. '8'.")
    memory: str | None = Field(default=None, description="Cloud Run memory limit, e.g. '32Gi'.")
    machine_type: str | None = Field(default=None, description="GCE machine type, e.g. g2-standard-48.")
    runtime_version: str | None = Field(default=None, description="TPU runtime, e.g. v2-alpha-tpuv6e.")
    image: str = Field(default="vllm/vllm-openai:v0.26.0-cu129",
                       description="Container image with vLLM, pinned to a release tag (docs/cloud.md).")
    port: int = Field(default=8000, ge=1, le=65535)
    model: ModelSource
    vllm: VLLMSettings = Field(default_factory=VLLMSettings)
    scaling: Scaling = Field(default_factory=Scaling)
    probe: Probe = Field(default_factory=Probe)
    spot: bool = Field(default=False, description="Spot VM / spot TPU (cheaper, can be preempted).")
    flex: bool = Field(default=False, description="TPU: flex-start style queueing with valid_until.")
    valid_until_s: int = Field(default=3600, ge=60, description="TPU queued resource: give up after this long.")
    gpu_zonal_redundancy: bool = Field(default=False, description="Cloud Run GPU zonal redundancy (needs quota).")
    allow_unauthenticated: bool = Field(
        default=False, description="Cloud Run: let anyone on the internet call the model (inferctl warns).")
    network_access: Literal["tunnel", "external"] = Field(
        default="tunnel", description="VM/TPU: tunnel (default) = no external IP, reach it through an IAP tunnel; "
                                      "external = an external IP, open to allowed_source_ranges. Every route but "
                                      "/health needs the API key either way.")
    allowed_source_ranges: list[str] = Field(
        default_factory=list, description="VM/TPU: CIDRs allowed to reach the port. Empty: no firewall rule.")
    service_account: str | None = Field(default=None, description="Runtime service account (needs secretAccessor).")
    boot_disk_gb: int = Field(default=200, ge=50)
    network: str = Field(default="default")
    labels: dict[str, str] = Field(default_factory=dict)

    @property
    def resource_id(self) -> str:
        return self.resource_name or self.name

    @property
    def location(self) -> str:
        """Region for Cloud Run, zone for GCE and TPU."""
        loc = self.region if self.platform == "cloudrun" else self.zone
        if not loc:
            field = "region" if self.platform == "cloudrun" else "zone"
            raise ConfigError(f"Profile '{self.name}' needs a {field}.")
        return loc

    def resource_labels(self) -> dict[str, str]:
        """Labels on everything inferctl creates: how destroy knows what is ours."""
        return {**self.labels, MANAGED_LABEL: MANAGED_VALUE, PROFILE_LABEL: label_value(self.name)}

    @property
    def external_ip(self) -> bool:
        """VM / TPU: whether it gets an external IP (``network_access = "external"``); tunnel otherwise."""
        return self.platform != "cloudrun" and self.network_access == "external"

    def access_hint(self) -> str | None:
        """One sentence saying how to reach a VM / TPU server (None for Cloud Run).

        Either way every route but ``GET /health`` needs the server's API key (cloud/vm_auth.py, installed by
        the startup script), so /metrics, /tokenize and /invocations are not open doors.
        """
        if self.platform == "cloudrun":
            return None
        port, zone = self.port, self.zone or "ZONE"  # a profile still being written may have no zone yet
        if self.external_ip:
            ranges = ", ".join(self.allowed_source_ranges) or "nobody outside the VPC (no allowed_source_ranges)"
            return (f"network_access = external: an external IP, reachable on port {port} from {ranges}; every "
                    "route but /health needs the API key.")
        if self.platform == "tpu":
            tunnel = (f"gcloud compute tpus tpu-vm ssh {self.resource_id}-node --zone {zone} "
                      f"--tunnel-through-iap -- -N -L {port}:localhost:{port}")
        else:
            tunnel = (f"gcloud compute start-iap-tunnel {self.resource_id} {port} "
                      f"--local-host-port=localhost:{port} --zone {zone}")
        return (f"network_access = tunnel: no external IP; reach the server through IAP with `{tunnel}` (a "
                f"firewall rule must let {IAP_RANGE} reach port {'22' if self.platform == 'tpu' else port}), then "
                f"use http://localhost:{port} with the API key; every route but /health needs it.")

    def with_project(self) -> Profile:
        """This profile with its project resolved (profile > GOOGLE_CLOUD_PROJECT > config [cloud])."""
        project = self.project or os.environ.get("GOOGLE_CLOUD_PROJECT") or _config_project()
        if not project:
            raise ProjectMissing(
                f"Profile '{self.name}' has no project; set GOOGLE_CLOUD_PROJECT or `project` under [cloud] in "
                "the config file.")
        return self.model_copy(update={"project": project})


def resolve_project(explicit: str | None = None) -> str:
    """--project > GOOGLE_CLOUD_PROJECT > [cloud] project in the config file."""
    project = explicit or os.environ.get("GOOGLE_CLOUD_PROJECT") or _config_project()
    if not project:
        raise ProjectMissing("No Google Cloud project; pass --project, set GOOGLE_CLOUD_PROJECT or `project` under "
                             "[cloud] in the config file.")
    return project


def label_value(value: str) -> str:
    # label values: lowercase letters, digits, '-', '_', at most 63 characters
    out = "".join(c if c.isalnum() or c in "-_" else "-" for c in value.lower())
    return out[:63]


def _config_data() -> dict[str, Any]:
    from inferctl.config import config_path

    path = config_path()
    if not path.exists():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc}.") from None


def _config_project() -> str | None:
    cloud = _config_data().get("cloud") or {}
    project = cloud.get("project") if isinstance(cloud, dict) else None
    return str(project) if project else None


def _shipped() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    folder = resources.files("inferctl.profiles") / "profile_data"
    for entry in folder.iterdir():
        if entry.name.endswith(".toml"):
            out[entry.name[: -len(".toml")]] = tomllib.loads(entry.read_text(encoding="utf-8"))
    return out


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _raw_profiles() -> tuple[dict[str, dict[str, Any]], set[str]]:
    shipped = _shipped()
    user = _config_data().get("profiles") or {}
    if not isinstance(user, dict):
        raise ConfigError("[profiles] in the config file must be a table of profiles.")
    raw = dict(shipped)
    for name, table in user.items():
        if not isinstance(table, dict):
            raise ConfigError(f"[profiles.{name}] in the config file must be a table.")
        table = dict(table)
        base_name = table.pop("base", None)
        if base_name is not None and base_name not in shipped:
            raise ConfigError(f"Profile '{name}' has base '{base_name}', which is not a shipped profile.")
        raw[name] = _merge(shipped[base_name], table) if base_name else table
    return raw, set(shipped) - set(user)


def profile_names() -> list[str]:
    """Names of every profile, shipped and user-defined."""
    return sorted(_raw_profiles()[0])


def is_profile(name: str) -> bool:
    """Whether ``name`` is a deployment profile (cheap: reads data files, imports no google library)."""
    try:
        return name in _raw_profiles()[0]
    except ConfigError:
        return False


def load_profile(name: str) -> Profile:
    """The named profile, validated; unknown names and invalid fields are one-sentence ConfigErrors."""
    raw, _ = _raw_profiles()
    if not name.strip():
        raise ConfigError(f"Name a profile; known profiles: {', '.join(sorted(raw))}.")
    if name not in raw:
        raise ConfigError(f"Unknown profile '{name}'; known profiles: {', '.join(sorted(raw))}.")
    return parse_profile(name, raw[name])


def parse_profile(name: str, data: dict[str, Any]) -> Profile:
    """Validate one profile table."""
    try:
        return Profile.model_validate({**data, "name": name})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "profile"
        raise ConfigError(f"Profile '{name}' is invalid at '{where}': {first['msg']}.") from None


def list_profiles() -> list[tuple[Profile, bool]]:
    """Every profile and whether it is a shipped example (unchanged by the config file)."""
    raw, shipped_only = _raw_profiles()
    return [(parse_profile(n, raw[n]), n in shipped_only) for n in sorted(raw)]


def profile_file(name: str) -> Path | None:
    """The shipped data file of a profile, when it is one."""
    path = Path(str(resources.files("inferctl.profiles") / "profile_data" / f"{name}.toml"))
    return path if path.exists() else None
