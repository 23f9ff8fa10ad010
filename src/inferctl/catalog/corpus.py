"""Public measurements of vLLM serving, as data (``data/measurements/*.toml``): schema, loader, model lookup.

One TOML file per source. ``[source]`` says where the numbers come from (address, date, kind); each
``[[entries]]`` is one measured run: hardware and device count, model and weight format, vLLM version and
serving flags where the source states them, the workload and the metrics exactly as the source prints them.
A field the source does not state is left out (``None``) - nothing is estimated. ``models.toml`` in the same
folder holds the config.json fields of measured models the model catalog does not know, with their source,
so the planner can describe them.
"""

from __future__ import annotations

import json
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from inferctl.errors import ConfigError

_DIR = "data/measurements"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Source(_Strict):
    id: str = Field(description="Short stable name of the source, unique in the corpus.")
    url: str = Field(description="Where the numbers are published (a commit-pinned address where possible).")
    date: str = Field(description="Date of the source (ISO), as published or committed.")
    title: str
    kind: Literal["github-readme", "github-issue", "github-pr", "recipe", "vendor-doc", "blog", "results-json",
                  "mlperf"]  # fmt: skip
    notes: str = ""


class Workload(_Strict):
    dataset: str = Field(description="random | sharegpt | ... as the source names it.")
    input_len: int | None = Field(default=None, description="Configured input tokens per request (random).")
    output_len: int | None = Field(default=None, description="Configured output tokens per request.")
    num_prompts: int | None = None
    request_rate: float | None = Field(default=None, description="Requests/s; inf = all sent at once.")
    max_concurrency: int | None = None
    ignore_eos: bool | None = None


class Metrics(_Strict):
    completed: int | None = None
    failed: int | None = None
    duration_s: float | None = None
    total_input_tokens: int | None = None
    total_output_tokens: int | None = None
    request_throughput: float | None = Field(default=None, description="req/s")
    output_throughput: float | None = Field(default=None, description="output tok/s")
    total_token_throughput: float | None = None
    ttft_mean_ms: float | None = None
    ttft_median_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_mean_ms: float | None = None
    tpot_median_ms: float | None = None
    tpot_p99_ms: float | None = None
    itl_mean_ms: float | None = None
    itl_median_ms: float | None = None
    itl_p99_ms: float | None = None


class Entry(_Strict):
    id: str = Field(description="Unique in the corpus.")
    accelerator: str = Field(description="Accelerator catalog name (e.g. 'a100-80', 'tpu-v6e').")
    hardware: str = Field(description="The hardware as the source words it.")
    count: int = Field(ge=1, description="Devices serving the model.")
    tp: int | None = Field(default=None, description="Tensor-parallel size, where stated.")
    model: str = Field(description="The served model (HF id).")
    weight_format: Literal["bf16", "fp16", "fp8", "w4a16", "int8"]
    vllm_version: str | None = None
    flags: dict[str, Any] = Field(default_factory=dict, description="Serving flags as the source states them.")
    workload: Workload
    metrics: Metrics
    notes: str = ""
    source: Source | None = Field(default=None, exclude=True, description="Filled in by the loader.")

    @field_validator("metrics")
    @classmethod
    def _some_metric(cls, m: Metrics) -> Metrics:
        if m.request_throughput is None and m.output_throughput is None:
            raise ValueError("an entry needs at least request or output throughput")
        return m

    def key(self) -> tuple:
        """What makes two entries the same measurement (the duplicate check)."""
        return (self.accelerator, self.count, self.model, self.weight_format, self.vllm_version,
                json.dumps(self.flags, sort_keys=True), self.workload.model_dump_json(),
                self.metrics.model_dump_json())  # fmt: skip


class CorpusFile(_Strict):
    source: Source
    entries: list[Entry]


class ModelConfig(_Strict):
    source: str = Field(description="Where the config.json fields were read.")
    family: str | None = None
    config: dict[str, Any] | None = None
    catalog: str | None = Field(default=None, description="The model catalog's name for the same architecture "
                                "(a re-quantized or renamed checkpoint), instead of a copy of its config fields.")

    @model_validator(mode="after")
    def _one_description(self) -> ModelConfig:
        if (self.config is None) == (self.catalog is None):
            raise ValueError("give either config (config.json fields) or catalog (a model catalog name)")
        return self


def parse_file(name: str, text: str) -> CorpusFile:
    """One corpus file, validated; a one-sentence ConfigError on any problem."""
    try:
        cf = CorpusFile.model_validate(tomllib.loads(text))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{name} is not valid TOML: {exc}.") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"{name} is not a valid measurement corpus file: {where}: {err['msg']}.") from None
    for e in cf.entries:
        e.source = cf.source
    return cf


def _data_files() -> list[tuple[str, str]]:
    root = resources.files("inferctl.catalog").joinpath(_DIR)
    return sorted((p.name, p.read_text(encoding="utf-8")) for p in root.iterdir()
                  if p.name.endswith(".toml") and p.name != "models.toml")  # fmt: skip


@cache
def load_corpus() -> tuple[Entry, ...]:
    """Every entry of the shipped corpus, validated: known accelerators, unique ids, no duplicates."""
    from inferctl.catalog.accelerators import accelerators

    known = accelerators()
    entries: list[Entry] = []
    sources: set[str] = set()
    for name, text in _data_files():
        cf = parse_file(name, text)
        if cf.source.id in sources:
            raise ConfigError(f"{name}: source id {cf.source.id} is used twice.")
        sources.add(cf.source.id)
        entries += cf.entries
    ids, keys = set(), set()
    for e in entries:
        if e.accelerator not in known:
            raise ConfigError(f"Corpus entry {e.id}: unknown accelerator '{e.accelerator}'.")
        if e.id in ids:
            raise ConfigError(f"Corpus entry id {e.id} is used twice.")
        if e.key() in keys:
            raise ConfigError(f"Corpus entry {e.id} duplicates another entry.")
        ids.add(e.id)
        keys.add(e.key())
    return tuple(entries)


@cache
def corpus_models() -> dict[str, ModelConfig]:
    """config.json fields of measured models the model catalog does not hold, by HF id (lower case)."""
    text = resources.files("inferctl.catalog").joinpath(f"{_DIR}/models.toml").read_text(encoding="utf-8")
    return {k.lower(): ModelConfig.model_validate(v) for k, v in tomllib.loads(text).items()}


def model_ref(model: str, cache_dir: Path) -> str | None:
    """A model reference ``load_model`` accepts for a corpus model, or None when it cannot be described.

    Catalog models are returned as they are, and so is the catalog name a ``models.toml`` entry points to
    (``catalog = ...``: the same architecture under another id, e.g. a re-quantized checkpoint, whose weight
    formats are the catalog model's); other ``models.toml`` models are written as a config.json under
    ``cache_dir`` (the planner reads checkpoints by directory).
    """
    from inferctl.catalog.models import load_model

    try:
        load_model(model)
        return model
    except ConfigError:
        pass
    mc = corpus_models().get(model.lower())
    if mc is None:
        return None
    if mc.catalog is not None:
        return mc.catalog
    d = cache_dir / model.replace("/", "--")
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.json").write_text(json.dumps(mc.config), encoding="utf-8")
    return str(d)


def coverage(entries: tuple[Entry, ...] | list[Entry]) -> dict[str, Any]:
    """Counts the corpus targets are stated in: entries per accelerator, Gemma-family entries, sources."""
    per: dict[str, int] = {}
    for e in entries:
        per[e.accelerator] = per.get(e.accelerator, 0) + 1
    return {"entries": len(entries), "sources": len({e.source.id for e in entries if e.source}),
            "per_accelerator": dict(sorted(per.items())),
            "gemma": sum(1 for e in entries if "gemma" in e.model.lower())}  # fmt: skip
