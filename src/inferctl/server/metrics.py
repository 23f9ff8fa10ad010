"""vLLM's Prometheus ``/metrics`` text -> a typed snapshot, and two snapshots -> rates.

Pure functions: the caller fetches the text and says when (``taken_at``); ``inferctl.server.rates``
turns two snapshots into rates. Definitions of every field
are in ``docs/metrics.md`` ("Server metrics"); the short form is in each ``Field(description=...)``.

Version tolerance, decided once here so callers never care which vLLM they talk to:

* Series are read by *sample* name, not by the ``# TYPE`` line, so a body without TYPE lines, a
  counter declared as ``foo_total`` or as ``foo``, and OpenMetrics all read the same.
* The ``engine`` label (data-parallel engine index) is optional: early V1 did not have it. Counters
  and gauges that count things are summed over engines; KV-cache usage is reported as the mean over
  engines (``kv_cache_usage``: data-parallel engines have equal capacity, so the mean is the fraction
  of all KV blocks in use) and the max (``kv_cache_usage_max``: the engine closest to preempting).
* Names removed after 0.10 are read when the new one is absent: ``gpu_cache_usage_perc`` -> KV usage,
  ``gpu_prefix_cache_{queries,hits}`` -> prefix cache, ``time_per_output_token_seconds`` -> ITL.
  ``num_requests_swapped`` (V0 CPU swap) is dropped. ``_created`` series are not values; their earliest
  timestamp becomes ``series_created_at`` (used to notice restarts). ``python_*``, ``process_*`` and
  ``http_*`` families are ignored. Any other ``vllm:*`` series lands in ``other`` /
  ``other_histograms`` so nothing is lost when vLLM adds a metric.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Iterable

from prometheus_client.parser import text_string_to_metric_families
from pydantic import BaseModel, Field

from inferctl.errors import MetricsParseError
from inferctl.server.histogram import HistogramSummary, summarize

__all__ = [
    "CacheConfigInfo",
    "HistogramSummary",
    "MetricsSnapshot",
    "SpecDecodeStats",
    "parse_metrics",
]

# Labels that say *where* a series comes from rather than *what* it measures.
_LOCATION_LABELS = frozenset({"engine", "model_name"})
_IGNORED = frozenset({"vllm:num_requests_swapped"})

# Snapshot field -> vLLM histogram names, newest first (older names are fallbacks).
HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
    "tpot": ("vllm:request_time_per_output_token_seconds",),
    "e2e": ("vllm:e2e_request_latency_seconds",),
    "queue": ("vllm:request_queue_time_seconds",),
    "prefill": ("vllm:request_prefill_time_seconds",),
    "decode": ("vllm:request_decode_time_seconds",),
    "inference": ("vllm:request_inference_time_seconds",),
}
COUNTERS: dict[str, tuple[str, ...]] = {
    "prompt_tokens": ("vllm:prompt_tokens_total",),
    "generation_tokens": ("vllm:generation_tokens_total",),
    "preemptions": ("vllm:num_preemptions_total",),
    "prefix_cache_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_cache_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
}
_GAUGES: dict[str, tuple[str, ...]] = {
    "requests_running": ("vllm:num_requests_running",),
    "requests_waiting": ("vllm:num_requests_waiting",),
}
_KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
_WAITING_BY_REASON = "vllm:num_requests_waiting_by_reason"
_FINISHED = "vllm:request_success_total"
_CACHE_CONFIG = "vllm:cache_config_info"
_SPEC = {
    "drafts": "vllm:spec_decode_num_drafts_total",
    "draft_tokens": "vllm:spec_decode_num_draft_tokens_total",
    "accepted_tokens": "vllm:spec_decode_num_accepted_tokens_total",
    "per_position": "vllm:spec_decode_num_accepted_tokens_per_pos_total",
}
_HIST_SUFFIXES = ("_bucket", "_count", "_sum")

FIELD_HELP = {
    "ttft": "Time to first token, seconds (server-side: arrival to first token).",
    "itl": "Inter-token latency, seconds: every gap between output tokens, pooled over requests.",
    "tpot": "Time per output token, seconds: one observation per finished request (its mean gap).",
    "e2e": "End-to-end request latency, seconds (arrival to finish, server-side).",
    "queue": "Time a request spent WAITING before it was first scheduled, seconds.",
    "prefill": "Time a request spent in the PREFILL phase, seconds.",
    "decode": "Time a request spent in the DECODE phase, seconds.",
    "inference": "Time a request spent RUNNING (prefill + decode), seconds.",
}


def _hist_field(key: str) -> HistogramSummary | None:
    return Field(default=None, description=FIELD_HELP[key] + " None if the server does not expose it.")


class CacheConfigInfo(BaseModel):
    """The engine's KV-cache configuration, from the labels of ``vllm:cache_config_info``."""

    block_size: int | None = Field(default=None, description="Tokens per KV-cache block.")
    cache_dtype: str | None = Field(default=None, description="KV-cache dtype ('auto' = model dtype).")
    gpu_memory_utilization: float | None = Field(
        default=None, description="Fraction of device memory vLLM may use (--gpu-memory-utilization)."
    )
    enable_prefix_caching: bool | None = Field(default=None, description="Automatic prefix caching on.")
    num_gpu_blocks: int | None = Field(default=None, description="KV-cache blocks on the device, per engine.")
    kv_cache_size_tokens: int | None = Field(
        default=None, description="KV-cache capacity in tokens as vLLM states it (group-aware), per engine."
    )
    kv_cache_max_concurrency: float | None = Field(
        default=None, description="Requests of max_model_len tokens that fit in the KV cache at once."
    )
    kv_cache_memory_bytes: int | None = Field(default=None, description="Bytes reserved for the KV cache.")
    labels: dict[str, str] = Field(default_factory=dict, description="Every label, verbatim.")


class SpecDecodeStats(BaseModel):
    """Speculative-decoding counters since server start, and the ratios vLLM documents for them."""

    drafts: float = Field(description="Draft proposals made (one per request per step that speculated).")
    draft_tokens: float = Field(description="Draft tokens proposed.")
    accepted_tokens: float = Field(description="Draft tokens accepted by the target model.")
    accepted_per_position: list[float] = Field(
        default_factory=list, description="Accepted tokens at each draft position (index 0 = first)."
    )
    acceptance_rate: float | None = Field(
        default=None, description="accepted_tokens / draft_tokens (0..1); None before any draft."
    )
    mean_acceptance_length: float | None = Field(
        default=None,
        description="1 + accepted_tokens / drafts: tokens emitted per target step, bonus token included.",
    )
    per_position_acceptance: list[float] = Field(
        default_factory=list, description="accepted_per_position[i] / drafts (0..1) for each position."
    )


class MetricsSnapshot(BaseModel):
    """One scrape of a vLLM server's /metrics, summed over engines (see the module docstring)."""

    taken_at: float = Field(description="Unix time of the scrape, as given by the caller.")
    model_names: list[str] = Field(description="Every model_name label seen (before any filter).")
    model_filter: str | None = Field(default=None, description="The model_name the snapshot is limited to.")
    engine_count: int = Field(description="Distinct data-parallel engines seen (1 when unlabelled).")
    series_created_at: float | None = Field(
        default=None,
        description="Earliest `_created` timestamp of the vllm:* series (about server start); it changes "
        "when the server restarts. None when absent (multiprocess mode).",
    )
    requests_running: float | None = Field(default=None, description="Requests in the running batch now.")
    requests_waiting: float | None = Field(default=None, description="Requests queued, not yet running.")
    requests_waiting_by_reason: dict[str, float] = Field(
        default_factory=dict, description="Waiting requests by reason ('capacity', 'deferred'); {} if absent."
    )
    kv_cache_usage: float | None = Field(
        default=None, description="Fraction (0..1) of KV-cache blocks in use, mean over engines."
    )
    kv_cache_usage_max: float | None = Field(
        default=None, description="Highest KV-cache usage fraction of any single engine."
    )
    prefix_cache_queries: float | None = Field(
        default=None, description="Prompt tokens looked up in the prefix cache, since start."
    )
    prefix_cache_hits: float | None = Field(
        default=None, description="Prompt tokens found in the prefix cache, since start."
    )
    prefix_cache_hit_rate: float | None = Field(
        default=None, description="prefix_cache_hits / prefix_cache_queries since start; None if no queries."
    )
    prompt_tokens: float | None = Field(default=None, description="Prompt (prefill) tokens processed.")
    generation_tokens: float | None = Field(default=None, description="Output tokens generated.")
    preemptions: float | None = Field(default=None, description="Times the engine preempted a request.")
    requests_finished: float | None = Field(
        default=None, description="Requests finished for any reason (sum of finished_by_reason)."
    )
    finished_by_reason: dict[str, float] = Field(
        default_factory=dict,
        description="Finished requests by finish reason (stop, length, abort, error, repetition).",
    )
    ttft: HistogramSummary | None = _hist_field("ttft")
    itl: HistogramSummary | None = _hist_field("itl")
    tpot: HistogramSummary | None = _hist_field("tpot")
    e2e: HistogramSummary | None = _hist_field("e2e")
    queue: HistogramSummary | None = _hist_field("queue")
    prefill: HistogramSummary | None = _hist_field("prefill")
    decode: HistogramSummary | None = _hist_field("decode")
    inference: HistogramSummary | None = _hist_field("inference")
    spec_decode: SpecDecodeStats | None = Field(
        default=None, description="Speculative decoding counters; None when spec decode is off."
    )
    cache_config: CacheConfigInfo | None = Field(
        default=None, description="KV-cache configuration (lowest engine index); None if not exposed."
    )
    other: dict[str, float] = Field(
        default_factory=dict,
        description='Every other vllm:* counter/gauge, keyed `name{label="v"}` without engine/model_name, '
        "summed over engines.",
    )
    other_histograms: dict[str, HistogramSummary] = Field(
        default_factory=dict, description="Every other vllm:* histogram, keyed like `other`."
    )


# ---------------------------------------------------------------------------------------------- parsing

Labels = dict[str, str]


def _samples(text: str) -> list[tuple[str, Labels, float]]:
    if not text or not text.strip():
        raise MetricsParseError(
            "The /metrics response was empty; is this a vLLM server with metrics enabled?"
        )
    head = text.lstrip()[:200].lower()
    if head.startswith(("<!doctype", "<html", "<?xml", "{", "[")):
        raise MetricsParseError(
            "The /metrics response is an HTML/JSON page, not Prometheus text; check the URL points at vLLM."
        )
    try:
        if text.rstrip().endswith("# EOF"):
            from prometheus_client.openmetrics.parser import text_string_to_metric_families as om_parse

            families = list(om_parse(text))
        else:
            families = list(text_string_to_metric_families(text))
    except Exception as exc:  # the parser raises ValueError, IndexError, KeyError... on bad input
        first = text.strip().splitlines()[0][:80]
        raise MetricsParseError(
            f"The /metrics response is not Prometheus exposition text (first line: {first!r})."
        ) from exc
    return [(s.name, dict(s.labels), float(s.value)) for f in families for s in f.samples]


def _key(name: str, labels: Labels, drop: Iterable[str] = ()) -> str:
    skip = _LOCATION_LABELS | set(drop)
    inner = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()) if k not in skip)
    return f"{name}{{{inner}}}" if inner else name


def _to_int(raw: str | None) -> int | None:
    try:
        return int(float(raw)) if raw not in (None, "", "None") else None
    except (ValueError, OverflowError):  # not a number, or inf / nan
        return None


def _to_float(raw: str | None) -> float | None:
    try:
        value = float(raw) if raw not in (None, "", "None") else None
    except ValueError:
        return None
    return value if value is None or math.isfinite(value) else None


def _bucket_bound(name: str, raw: str) -> float:
    """A histogram bucket's ``le`` label as a number (``+Inf`` included); anything else is a parse error."""
    try:
        le = float(raw)
    except ValueError:
        le = math.nan
    if math.isnan(le):
        raise MetricsParseError(
            f"The /metrics response has a {name} bucket with le={raw[:40]!r}, which is not a number."
        )
    return le


def _to_bool(raw: str | None) -> bool | None:
    return {"true": True, "false": False}.get((raw or "").lower())


def _cache_config(series: list[tuple[Labels, float]]) -> CacheConfigInfo:
    labels = min((lbl for lbl, _ in series), key=lambda lbl: _to_int(lbl.get("engine")) or 0)
    return CacheConfigInfo(
        block_size=_to_int(labels.get("block_size")),
        cache_dtype=labels.get("cache_dtype"),
        gpu_memory_utilization=_to_float(labels.get("gpu_memory_utilization")),
        enable_prefix_caching=_to_bool(labels.get("enable_prefix_caching")),
        num_gpu_blocks=_to_int(labels.get("num_gpu_blocks")),
        kv_cache_size_tokens=_to_int(labels.get("kv_cache_size_tokens")),
        kv_cache_max_concurrency=_to_float(labels.get("kv_cache_max_concurrency")),
        kv_cache_memory_bytes=_to_int(labels.get("kv_cache_memory_bytes")),
        labels=dict(labels),
    )


def ratio(num: float | None, den: float | None) -> float | None:
    return num / den if num is not None and den else None


def _spec_decode(sums: dict[str, float], by_pos: dict[str, float]) -> SpecDecodeStats | None:
    if _SPEC["drafts"] not in sums and _SPEC["draft_tokens"] not in sums:
        return None
    drafts = sums.get(_SPEC["drafts"], 0.0)
    draft_tokens = sums.get(_SPEC["draft_tokens"], 0.0)
    accepted = sums.get(_SPEC["accepted_tokens"], 0.0)
    bad = [p for p in by_pos if not (p.isascii() and p.isdigit())]
    if bad:
        raise MetricsParseError(
            f"The /metrics response has a {_SPEC['per_position']} series with position={bad[0][:40]!r}, "
            "which is not a position number."
        )
    per_pos = [by_pos[p] for p in sorted(by_pos, key=int)]
    return SpecDecodeStats(
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted_tokens=accepted,
        accepted_per_position=per_pos,
        acceptance_rate=ratio(accepted, draft_tokens),
        mean_acceptance_length=1 + accepted / drafts if drafts else None,
        per_position_acceptance=[a / drafts for a in per_pos] if drafts else [],
    )


def _sum(values: Iterable[float]) -> float:
    """An exact sum (fsum); values whose sum overflows a float (a hostile server) give infinity, not a crash."""
    values = list(values)
    try:
        return math.fsum(values)
    except OverflowError:
        return math.copysign(math.inf, sum(values))


def parse_metrics(
    text: str, *, taken_at: float | None = None, model_name: str | None = None
) -> MetricsSnapshot:
    """Parse a vLLM ``/metrics`` body into a snapshot.

    ``taken_at`` is when the text was fetched (defaults to now; pass it explicitly to stay pure).
    ``model_name`` keeps only series for that served model (series without a model_name label, like
    ``cache_config_info``, are always kept). Raises ``MetricsParseError`` for an empty body, a
    non-Prometheus body (HTML, JSON, garbage), a body with no vllm:* series, or a model not present.
    """
    samples = [(n, lbl, v) for n, lbl, v in _samples(text) if n.startswith("vllm:") and n not in _IGNORED]
    if not samples:
        raise MetricsParseError("The /metrics response has no vllm:* metrics; is this a vLLM server?")
    model_names = sorted({lbl["model_name"] for _, lbl, _ in samples if "model_name" in lbl})
    if model_name is not None:
        if model_name not in model_names:
            raise MetricsParseError(
                f"The /metrics response has no series for model {model_name!r}; "
                f"it serves {', '.join(model_names) or 'no named model'}."
            )
        samples = [s for s in samples if s[1].get("model_name", model_name) == model_name]

    created = [v for n, _, v in samples if n.endswith("_created") and v > 0]
    samples = [s for s in samples if not s[0].endswith("_created")]
    engines = {lbl["engine"] for _, lbl, _ in samples if "engine" in lbl}

    # Histograms first: a family is a histogram when it has `_bucket` series with an `le` label.
    hist_names = {n[: -len("_bucket")] for n, lbl, _ in samples if n.endswith("_bucket") and "le" in lbl}
    hist_parts: dict[str, dict[str, list]] = defaultdict(lambda: {"buckets": [], "count": [], "sum": []})
    scalars: dict[str, list[tuple[Labels, float]]] = defaultdict(list)
    for name, labels, value in samples:
        base, suffix = next(
            (
                (name[: -len(s)], s)
                for s in _HIST_SUFFIXES
                if name.endswith(s) and name[: -len(s)] in hist_names
            ),
            (None, None),
        )
        if base is None:
            scalars[name].append((labels, value))
            continue
        key = _key(base, labels, drop=("le",))
        if suffix == "_bucket":
            if "le" not in labels:  # a bucket without a bound says nothing; skip it as Prometheus does
                continue
            hist_parts[key]["buckets"].append((_bucket_bound(base, labels["le"]), value))
        else:
            hist_parts[key][suffix[1:]].append(value)
    histograms = {
        key: summarize(p["buckets"], sum(p["count"]), sum(p["sum"])) for key, p in hist_parts.items()
    }

    def total(names: tuple[str, ...]) -> float | None:
        for n in names:
            if n in scalars:
                return _sum(v for _, v in scalars.pop(n))
        return None

    def by_label(name: str, label: str) -> dict[str, float]:
        out: dict[str, float] = defaultdict(float)
        for labels, value in scalars.pop(name, []):
            out[labels.get(label, "")] += value
        return dict(out)

    fields: dict[str, object] = {k: total(names) for k, names in {**COUNTERS, **_GAUGES}.items()}
    kv = next((scalars.pop(n) for n in _KV_USAGE if n in scalars), None)
    for old in _KV_USAGE + COUNTERS["prefix_cache_queries"] + COUNTERS["prefix_cache_hits"]:
        scalars.pop(old, None)  # the deprecated twin of a name we already read
    if kv:
        values = [v for _, v in kv]
        fields["kv_cache_usage"] = _sum(values) / len(values)
        fields["kv_cache_usage_max"] = max(values)
    finished = by_label(_FINISHED, "finished_reason")
    waiting_by_reason = by_label(_WAITING_BY_REASON, "reason")
    spec_sums = {
        n: v
        for n in (_SPEC["drafts"], _SPEC["draft_tokens"], _SPEC["accepted_tokens"])
        if (v := total((n,))) is not None
    }
    spec = _spec_decode(spec_sums, by_label(_SPEC["per_position"], "position"))
    cache_series = scalars.pop(_CACHE_CONFIG, None)

    hist_fields = {}
    for fld, names in HISTOGRAMS.items():
        found = [histograms.pop(n) for n in names if n in histograms]
        hist_fields[fld] = found[0] if found else None

    other: dict[str, float] = defaultdict(float)
    for name, series in scalars.items():
        for labels, value in series:
            other[_key(name, labels)] += value

    return MetricsSnapshot(
        taken_at=time.time() if taken_at is None else taken_at,
        model_names=model_names,
        model_filter=model_name,
        engine_count=len(engines) or 1,
        series_created_at=min(created) if created else None,
        requests_waiting_by_reason=waiting_by_reason,
        prefix_cache_hit_rate=ratio(fields["prefix_cache_hits"], fields["prefix_cache_queries"]),  # type: ignore[arg-type]
        requests_finished=math.fsum(finished.values()) if finished else None,
        finished_by_reason=finished,
        spec_decode=spec,
        cache_config=_cache_config(cache_series) if cache_series else None,
        other=dict(other),
        other_histograms=histograms,
        **hist_fields,
        **fields,  # type: ignore[arg-type]
    )
