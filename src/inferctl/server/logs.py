"""A vLLM server log (text) -> where the memory went at startup, the latest engine stats, and issues.

Pure functions over text. vLLM has reworded its startup lines often; every form we know is matched
(``reference/vllm.md`` §3.3-3.4 lists them), whatever the line prefix: ``(EngineCore pid=N) INFO
11-22 01:28:06 [file.py:123] ``, ``INFO 06-02 11:03:18 [file.py:637] ``, the 0.7 form without
brackets, none at all, ANSI colours. Lines we do not know (uvicorn access logs, tracebacks) are
skipped. A log holding several startups (restarts appended to one file) is cut at each new startup
and only the last one is reported.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from pydantic import BaseModel, Field

from inferctl.server.log_lines import LogIssue, LogLine, extract_log_issues, split_lines

__all__ = [
    "EngineLogStats",
    "HybridKVLayout",
    "LogIssue",
    "MemoryLayout",
    "SpecDecodeLogStats",
    "TpuMemoryStats",
    "extract_log_issues",
    "parse_startup_log",
]

_PLATFORM_DEVICE = {"cuda": "GPU", "rocm": "GPU", "cpu": "CPU", "tpu": "TPU", "xpu": "XPU", "hpu": "HPU"}

_NUM = r"(\d+(?:\.\d+)?)"
_P = {
    # Lines that open a startup (logged before any weight is loaded).
    "platform": r"Automatically detected platform (\w+)",
    "api_version": r"vLLM API server version (\S+)",
    "banner_version": r"█\s+version\s+(\d[\w.+-]*)",  # the ASCII-art banner of 0.2x
    "engine_config": r"Initializing an? (?:V1 )?LLM engine \(v([^)]+)\) with config: (.*)",
    "non_default": r"non-default args: (\{.*\})",
    "namespace": r"\bargs: Namespace\((.*)\)",
    "tpu_info": r"TPU info: node_name=",
    # Everything else.
    "architecture": r"Resolved architecture: (\S+)",
    "max_model_len": r"Using max model len (\d+)",
    "chunked": r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)",
    "block_forced": r"(?:Forcing kv cache|Setting attention) block size to (\d+)",
    "kv_dtype_line": r"Using (\w+) data type to store kv cache",
    "load_start": r"Starting to load model (\S+?)(?:\.\.\.)?$",
    "model_loading": rf"Model loading took {_NUM} ?Gi?B(?: memory)? and {_NUM} s",
    "weights_gb": rf"Loading model weights took {_NUM} ?Gi?B",
    "weights_s": rf"Loading weights took {_NUM} s",
    "kv_memory": rf"Available KV cache memory: {_NUM} ?GiB",
    "kv_size": r"(\w+)(?: \+ host)? KV cache size: ([\d,]+) tokens",
    "concurrency": rf"Maximum concurrency for ([\d,]+) tokens per request: {_NUM}x",
    "blocks": r"# (\w+) blocks: (\d+)",
    "blocks_info": r"num_gpu_blocks is: (\d+)",
    "graph": rf"Graph capturing finished in {_NUM} secs?, took (-?{_NUM}) GiB",
    "graph_estimate": rf"Estimated CUDA graph memory: {_NUM} GiB",
    # vLLM's memory profile (gpu_worker.determine_available_memory; the first two at DEBUG level):
    # the requested budget, the non-KV total and its parts, and the CUDA-graph estimate as a utilization.
    "requested": rf"Initial free memory:? {_NUM} ?GiB; Requested memory: {_NUM} \(util\), {_NUM} ?GiB",
    "profile": rf"Memory profiling takes {_NUM} seconds\.\s*Total non KV cache memory: {_NUM} ?GiB; "
    rf"torch peak memory increase: {_NUM} ?GiB; (?:non-torch forward increase memory: {_NUM} ?GiB; )?"
    rf"(?:total consumed \(from mem_get_info\): {_NUM} ?GiB; )?weights memory: {_NUM} ?GiB",
    "graph_util": r"--gpu-memory-utilization=([\d.]+) is equivalent to --gpu-memory-utilization=([\d.]+) without "
    r"CUDA graph memory profiling",
    "compile_total": rf"torch\.compile takes {_NUM} s in total",
    "compile_graph": rf"Compiling a graph for .*? takes {_NUM} s",
    "dynamo": rf"Dynamo bytecode transform time: {_NUM} s",
    "warmup": rf"Initial profiling/warmup run took {_NUM} s",
    "init_engine": rf"init engine \(profile, create kv cache, warmup model\) took {_NUM} (?:s|secs|seconds)\b"
    rf"(?: \(compilation: {_NUM} s)?",
    "server_url": r"Starting vLLM (?:API )?server on (\S+)",
    "tpu_memory": r"Memory statistics \| (.*)",
    "hybrid": r"Hybrid KV cache layout: num_kv_cache_groups=(\d+), num_kv_cache_tensors=(\d+), "
    r"kv_cache_config\.num_blocks=(\d+), duplicate_shared_layers=(\w+)",
    "padding": rf"Add (\d+) padding layers, may waste at most {_NUM}% KV cache memory",
    "stats": r"Avg prompt throughput: ",
    "spec": r"SpecDecoding metrics: ",
}
_RE = {k: re.compile(v) for k, v in _P.items()}
# A literal every line of that kind contains: one pass over a long log finds the few candidate lines
# (a day of serving is mostly access-log and stats lines), then only their own patterns run.
_ANCHOR = {
    "platform": "Automatically detected platform", "api_version": "vLLM API server version",
    "banner_version": "  version ",
    "engine_config": "LLM engine (v", "non_default": "non-default args: ", "namespace": "args: Namespace(",
    "tpu_info": "TPU info: node_name=", "architecture": "Resolved architecture: ",
    "max_model_len": "Using max model len ", "chunked": "Chunked prefill is enabled",
    "block_forced": "block size to ", "kv_dtype_line": "data type to store kv cache",
    "load_start": "Starting to load model ", "model_loading": "Model loading took ",
    "weights_gb": "Loading model weights took ", "weights_s": "Loading weights took ",
    "kv_memory": "Available KV cache memory: ", "kv_size": " KV cache size: ",
    "concurrency": "Maximum concurrency for ", "blocks": " blocks: ", "blocks_info": "num_gpu_blocks is: ",
    "graph": "Graph capturing finished in ", "graph_estimate": "Estimated CUDA graph memory: ",
    "requested": "Requested memory: ", "profile": "Memory profiling takes ",
    "graph_util": " without CUDA graph memory profiling",
    "compile_total": "torch.compile takes ", "compile_graph": "Compiling a graph for ",
    "dynamo": "Dynamo bytecode transform time: ", "warmup": "Initial profiling/warmup run took ",
    "init_engine": "init engine (profile", "server_url": "Starting vLLM ",
    "tpu_memory": "Memory statistics | ",
    "hybrid": "Hybrid KV cache layout: ", "padding": " padding layers, ", "stats": "Avg prompt throughput: ",
    "spec": "SpecDecoding metrics: ",
}  # fmt: skip
_KEYS_BY_ANCHOR: dict[str, list[str]] = {}
for _key, _anchor in _ANCHOR.items():
    _KEYS_BY_ANCHOR.setdefault(_anchor, []).append(_key)
_ANCHORS = re.compile("|".join(re.escape(a) for a in sorted(_KEYS_BY_ANCHOR, key=len, reverse=True)))
_OPENERS = (
    "platform",
    "api_version",
    "banner_version",
    "engine_config",
    "non_default",
    "namespace",
    "tpu_info",
)
_LATE = ("model_loading", "weights_gb", "weights_s", "kv_memory", "kv_size", "blocks", "concurrency", "graph")
_LATE += ("compile_total", "warmup", "init_engine", "server_url", "stats", "tpu_memory", "hybrid")

_STATS = {
    "prompt_throughput": rf"Avg prompt throughput: {_NUM} tokens/s",
    "generation_throughput": rf"Avg generation throughput: {_NUM} tokens/s",
    "running": r"Running: (\d+) reqs",
    "waiting": r"(?:Waiting|Pending): (\d+) reqs",
    "deferred": r"Deferred: (\d+) reqs",
    "preemptions": r"Preemptions: (\d+)",
    "kv_cache_usage": rf"KV cache usage: {_NUM}%",
    "prefix_cache_hit_rate": rf"(?<!External )Prefix cache hit rate: {_NUM}%",
    "external_prefix_cache_hit_rate": rf"External prefix cache hit rate: {_NUM}%",
    "mm_cache_hit_rate": rf"MM cache hit rate: {_NUM}%",
}
_SPEC = {
    "mean_acceptance_length": rf"Mean acceptance length: {_NUM}",
    "accepted_throughput": rf"Accepted throughput: {_NUM} tokens/s",
    "drafted_throughput": rf"Drafted throughput: {_NUM} tokens/s",
    "accepted_tokens": r"Accepted: (\d+) tokens",
    "drafted_tokens": r"Drafted: (\d+) tokens",
    "acceptance_rate": rf"Draft acceptance rate: {_NUM}%",
}
_PERCENT_FIELDS = {"kv_cache_usage", "prefix_cache_hit_rate", "external_prefix_cache_hit_rate"}
_PERCENT_FIELDS |= {"mm_cache_hit_rate", "acceptance_rate"}


class TpuMemoryStats(BaseModel):
    """The TPU worker's HBM budget (tpu-inference ``Memory statistics`` line), GiB per device."""

    total_hbm_limit_gb: float | None = Field(default=None, description="HBM capacity, GiB.")
    total_hbm_limit_cap_gb: float | None = Field(
        default=None, description="HBM vLLM may use (capacity x --gpu-memory-utilization), GiB."
    )
    total_hbm_used_gb: float | None = Field(default=None, description="HBM in use before the KV cache, GiB.")
    total_hbm_avail_gb: float | None = Field(default=None, description="HBM left for the KV cache, GiB.")


class HybridKVLayout(BaseModel):
    """The TPU backend's KV-cache grouping (``Hybrid KV cache layout`` line)."""

    num_kv_cache_groups: int = Field(description="Layer groups sharing a KV layout (sliding / full...).")
    num_kv_cache_tensors: int = Field(description="KV-cache tensors allocated.")
    num_blocks: int = Field(description="KV-cache blocks (kv_cache_config.num_blocks).")
    duplicate_shared_layers: bool = Field(description="Shared-KV layers got their own copies.")


class SpecDecodeLogStats(BaseModel):
    """The ``SpecDecoding metrics:`` line (over the last stats interval)."""

    mean_acceptance_length: float | None = Field(default=None, description="Tokens per step incl. bonus.")
    accepted_throughput: float | None = Field(default=None, description="Accepted draft tokens/s.")
    drafted_throughput: float | None = Field(default=None, description="Drafted tokens/s.")
    accepted_tokens: int | None = Field(default=None, description="Accepted draft tokens in the interval.")
    drafted_tokens: int | None = Field(default=None, description="Draft tokens in the interval.")
    acceptance_rate: float | None = Field(default=None, description="Accepted / drafted (0..1).")
    per_position_acceptance: list[float] = Field(
        default_factory=list, description="Per draft position (0..1)."
    )


class EngineLogStats(BaseModel):
    """One periodic stats line (``Engine 000: Avg prompt throughput: ...``), fractions not percents."""

    engine: int | None = Field(default=None, description="Engine index (None in old logs without it).")
    timestamp: str | None = Field(default=None, description="Line time as logged, 'MM-DD HH:MM:SS'.")
    prompt_throughput: float | None = Field(
        default=None, description="Prompt tokens/s over the last interval."
    )
    generation_throughput: float | None = Field(
        default=None, description="Output tokens/s over the interval."
    )
    running: int | None = Field(default=None, description="Requests running.")
    waiting: int | None = Field(default=None, description="Requests waiting (V0: pending).")
    deferred: int | None = Field(default=None, description="Waiting requests deferred by constraints.")
    preemptions: int | None = Field(default=None, description="Preemptions in the interval.")
    kv_cache_usage: float | None = Field(default=None, description="KV-cache usage fraction (0..1).")
    prefix_cache_hit_rate: float | None = Field(default=None, description="Prefix-cache hit rate (0..1).")
    external_prefix_cache_hit_rate: float | None = Field(default=None, description="KV-connector hit rate.")
    mm_cache_hit_rate: float | None = Field(default=None, description="Multi-modal cache hit rate (0..1).")
    spec_decode: SpecDecodeLogStats | None = Field(
        default=None, description="The SpecDecoding line logged right after this one, if any."
    )


class MemoryLayout(BaseModel):
    """What one vLLM startup logged about the model, memory, KV cache and start-up times.

    Memory is per device (the first worker that reports it). Every field is None when its line is
    absent; ``found_fields`` lists the ones that were found.
    """

    found_any: bool = Field(
        description="At least one startup line was recognised (a periodic stats line alone does not count)."
    )
    found_fields: list[str] = Field(default_factory=list, description="Names of the fields found.")
    startups_seen: int = Field(default=0, description="Startups in the text; only the last is reported.")
    device_type: str | None = Field(default=None, description="GPU, CPU, TPU, XPU, HPU... as vLLM names it.")
    vllm_version: str | None = Field(default=None, description="vLLM version, if logged.")
    model: str | None = Field(default=None, description="Model path or Hugging Face id being loaded.")
    served_model_name: str | None = Field(default=None, description="--served-model-name, if set.")
    architecture: str | None = Field(default=None, description="Resolved model architecture class.")
    dtype: str | None = Field(default=None, description="Model weights dtype (e.g. bfloat16).")
    max_model_len: int | None = Field(default=None, description="Context length the engine was built for.")
    max_num_batched_tokens: int | None = Field(default=None, description="Chunked-prefill token budget.")
    kv_cache_dtype: str | None = Field(default=None, description="KV-cache dtype ('auto' = model dtype).")
    block_size: int | None = Field(default=None, description="Tokens per KV-cache block.")
    model_load_memory_gib: float | None = Field(
        default=None, description="Device memory taken by the model weights, GiB (0.7 logs say 'GB': GiB)."
    )
    model_load_seconds: float | None = Field(
        default=None, description="Total model load time ('Model loading took ... seconds')."
    )
    weights_load_seconds: float | None = Field(
        default=None, description="Time reading weights ('Loading weights took'); part of model_load_seconds."
    )
    kv_cache_memory_gib: float | None = Field(default=None, description="Memory given to the KV cache, GiB.")
    kv_cache_tokens: int | None = Field(default=None, description="KV-cache capacity in tokens as logged.")
    num_gpu_blocks: int | None = Field(default=None, description="KV-cache blocks ('# GPU blocks', 0.7-0.9).")
    max_concurrency: float | None = Field(
        default=None, description="Requests of max_concurrency_tokens_per_request that fit at once."
    )
    max_concurrency_tokens_per_request: int | None = Field(
        default=None, description="The request length max_concurrency is stated for (= max model len)."
    )
    graph_capture_seconds: float | None = Field(default=None, description="CUDA graph capture time.")
    graph_capture_memory_gib: float | None = Field(default=None, description="Memory CUDA graphs took, GiB.")
    graph_memory_estimate_gib: float | None = Field(default=None, description="Profiled CUDA graph estimate.")
    initial_free_memory_gib: float | None = Field(
        default=None, description="Free device memory before vLLM loaded anything (DEBUG line), GiB.")
    gpu_memory_utilization: float | None = Field(default=None, description="--gpu-memory-utilization in force.")
    requested_memory_gib: float | None = Field(
        default=None, description="The budget vLLM may use: total memory x utilization (DEBUG line), GiB.")
    non_kv_cache_memory_gib: float | None = Field(
        default=None, description="Weights + activation peak + non-torch memory ('Memory profiling takes', DEBUG).")
    torch_peak_increase_gib: float | None = Field(
        default=None, description="Activation peak of the profiling run (forward at max_num_batched_tokens, "
                                  "then the sampler at max_num_seqs), GiB.")
    non_torch_increase_gib: float | None = Field(default=None, description="Non-torch memory growth (NCCL...), GiB.")
    profiled_weights_memory_gib: float | None = Field(default=None, description="Weights as the profiler saw them.")
    torch_compile_seconds: float | None = Field(
        default=None,
        description="torch.compile total: the 'takes X s in total' line, else the init-engine line's "
        "compilation time, else Dynamo transform + graph compiles.",
    )
    dynamo_transform_seconds: float | None = Field(
        default=None, description="Dynamo bytecode transform time."
    )
    graph_compile_seconds: float | None = Field(default=None, description="Sum of 'Compiling a graph' times.")
    warmup_seconds: float | None = Field(default=None, description="Initial profiling/warm-up run time.")
    engine_init_seconds: float | None = Field(
        default=None, description="Profile + KV-cache creation + warm-up ('init engine ... took')."
    )
    server_url: str | None = Field(default=None, description="Where the API server listens.")
    tpu_memory: TpuMemoryStats | None = Field(default=None, description="TPU HBM budget, if logged.")
    hybrid_kv_layout: HybridKVLayout | None = Field(default=None, description="TPU KV grouping, if logged.")
    padding_layers: int | None = Field(default=None, description="Padding KV layers added (warning).")
    padding_max_waste_percent: float | None = Field(
        default=None, description="KV memory the padding layers may waste, percent."
    )
    latest_stats: EngineLogStats | None = Field(default=None, description="The last periodic stats line.")


def _config_value(text: str, key: str) -> str | None:
    """``key`` from a dict repr, a Namespace repr or vLLM's ``k=v, k=v`` engine-config line."""
    m = re.search(rf"(?:^|[\s,{{(])'?{key}'?\s*[:=]\s*(?:'([^']*)'|\[?'?([^,'\])}}]+))", text)
    if not m:
        return None
    value = m.group(1) if m.group(1) is not None else m.group(2)
    return None if value in ("None", "") else value.strip()


def _dict_repr(text: str) -> dict[str, Any]:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):  # reprs of enums/objects are not literals; fall back to regex
        return {}
    return value if isinstance(value, dict) else {}


Hits = dict[str, re.Match[str]]


def _hits(lines: list[LogLine]) -> list[tuple[LogLine, Hits]]:
    """The recognised lines, each with the patterns it matched."""
    out = []
    for line in lines:
        anchors = _ANCHORS.findall(line.message)
        if not anchors:
            continue
        keys = {k for a in anchors for k in _KEYS_BY_ANCHOR[a]}
        hits = {k: m for k in keys if (m := _RE[k].search(line.message))}
        if hits:
            out.append((line, hits))
    return out


def _segment(lines: list[tuple[LogLine, Hits]]) -> tuple[list[tuple[LogLine, Hits]], int]:
    """The lines of the last startup, and how many startups there were."""
    start, startups, late = 0, 0, False
    for i, (_, hits) in enumerate(lines):
        if any(k in hits for k in _OPENERS):
            if late or startups == 0:
                start, startups, late = i, startups + 1, False
        elif any(k in hits for k in _LATE):
            startups = max(startups, 1)
            late = True
    return lines[start:], startups


def _stats(line: LogLine) -> EngineLogStats:
    values: dict[str, Any] = {}
    for name, pattern in _STATS.items():
        if m := re.search(pattern, line.message):
            num = float(m.group(1))
            values[name] = round(num / 100, 6) if name in _PERCENT_FIELDS else num
    engine = re.search(r"Engine (\d+):", line.message)
    return EngineLogStats(engine=int(engine.group(1)) if engine else None, timestamp=line.timestamp, **values)


def _spec_stats(message: str) -> SpecDecodeLogStats:
    values: dict[str, Any] = {}
    for name, pattern in _SPEC.items():
        if m := re.search(pattern, message):
            num = float(m.group(1))
            values[name] = round(num / 100, 6) if name in _PERCENT_FIELDS else num
    per_pos = re.search(r"Per-position acceptance rate: (\d[\d., ]*\d)", message)
    if per_pos:
        values["per_position_acceptance"] = [float(x) for x in per_pos.group(1).split(",")]
    return SpecDecodeLogStats(**values)


def parse_startup_log(text: str) -> MemoryLayout:
    """Parse vLLM log text into the last startup's :class:`MemoryLayout`.

    Never raises on odd input: a text with no startup lines gives ``found_any=False``.
    """
    lines, startups = _segment(_hits(split_lines(text)))
    out: dict[str, Any] = {}
    compile_proc: tuple[str | None, int | None] | None = None
    compile_graphs: list[float] = []
    stats_line: LogLine | None = None
    spec_message: str | None = None

    def first(field: str, value: Any) -> None:
        if value is not None and out.get(field) is None:
            out[field] = value

    for line, hits in lines:
        if m := hits.get("platform"):
            first("_platform", _PLATFORM_DEVICE.get(m.group(1).lower(), m.group(1).upper()))
        if m := hits.get("banner_version"):
            first("vllm_version", m.group(1))
        if m := hits.get("api_version"):
            first("vllm_version", m.group(1))
        if m := hits.get("engine_config"):
            first("vllm_version", m.group(1))
            cfg = m.group(2)
            first("model", _config_value(cfg, "model"))
            first("served_model_name", _config_value(cfg, "served_model_name"))
            first("dtype", (_config_value(cfg, "dtype") or "").removeprefix("torch.") or None)
            first("kv_cache_dtype", _config_value(cfg, "kv_cache_dtype"))
            first("max_model_len", _config_value(cfg, "max_seq_len"))
            device = _config_value(cfg, "device_config")
            first("_config_device", _PLATFORM_DEVICE.get((device or "").lower()))
        for key in ("non_default", "namespace"):
            if m := hits.get(key):
                args, raw = _dict_repr(m.group(1)), m.group(1)

                def arg(name: str, args: dict[str, Any] = args, raw: str = raw) -> Any:
                    value = args.get(name) if args else _config_value(raw, name)
                    return value[0] if isinstance(value, list) and value else value

                first("model", arg("model") or arg("model_tag"))
                first("served_model_name", arg("served_model_name"))
                first("kv_cache_dtype", arg("kv_cache_dtype"))
                first("_args_block_size", arg("block_size"))
                first("dtype", arg("dtype") if arg("dtype") != "auto" else None)
                first("max_num_batched_tokens", arg("max_num_batched_tokens"))
        if "tpu_info" in hits or "tpu_memory" in hits or "hybrid" in hits:
            first("_tpu", "TPU")
        if m := hits.get("architecture"):
            first("architecture", m.group(1))
        if m := hits.get("max_model_len"):
            first("max_model_len", m.group(1))
        if m := hits.get("chunked"):
            first("max_num_batched_tokens", m.group(1))
        if m := hits.get("block_forced"):
            out["block_size"] = m.group(1)  # the backend's override wins over the argument
        if m := hits.get("kv_dtype_line"):
            first("_kv_dtype_line", m.group(1))
        if m := hits.get("load_start"):
            first("model", m.group(1))
        if m := hits.get("model_loading"):
            first("model_load_memory_gib", m.group(1))
            first("model_load_seconds", m.group(2))
        if m := hits.get("weights_gb"):
            first("model_load_memory_gib", m.group(1))
        if m := hits.get("weights_s"):
            first("weights_load_seconds", m.group(1))
        if m := hits.get("kv_memory"):
            first("kv_cache_memory_gib", m.group(1))
        if m := hits.get("kv_size"):
            first("_kv_device", m.group(1).upper())
            first("kv_cache_tokens", m.group(2).replace(",", ""))
        if m := hits.get("concurrency"):
            first("max_concurrency_tokens_per_request", m.group(1).replace(",", ""))
            first("max_concurrency", m.group(2))
        if m := hits.get("blocks"):
            first("_blocks_device", m.group(1).upper())
            first("num_gpu_blocks", m.group(2))
        if m := hits.get("blocks_info"):
            first("num_gpu_blocks", m.group(1))
        if m := hits.get("graph"):
            first("graph_capture_seconds", m.group(1))
            first("graph_capture_memory_gib", m.group(2))
        if m := hits.get("graph_estimate"):
            first("graph_memory_estimate_gib", m.group(1))
        if m := hits.get("requested"):
            first("initial_free_memory_gib", m.group(1))
            first("gpu_memory_utilization", m.group(2))
            first("requested_memory_gib", m.group(3))
        if m := hits.get("profile"):
            first("non_kv_cache_memory_gib", m.group(2))
            first("torch_peak_increase_gib", m.group(3))
            first("non_torch_increase_gib", m.group(4))
            first("profiled_weights_memory_gib", m.group(6))
        if m := hits.get("graph_util"):
            first("_graph_util", (float(m.group(1)), float(m.group(2))))
        if m := hits.get("compile_total"):
            first("_compile_total", m.group(1))
        if m := hits.get("dynamo"):
            first("dynamo_transform_seconds", m.group(1))
        if m := hits.get("compile_graph"):
            # Every TP worker compiles the same graphs; count one worker's so the sum is wall time.
            compile_proc = compile_proc or (line.process, line.pid)
            if (line.process, line.pid) == compile_proc:
                compile_graphs.append(float(m.group(1)))
        if m := hits.get("warmup"):
            first("warmup_seconds", m.group(1))
        if m := hits.get("init_engine"):
            first("engine_init_seconds", m.group(1))
            first("_compile_init", m.group(2))
        if m := hits.get("server_url"):
            first("server_url", m.group(1))
        if m := hits.get("tpu_memory"):
            kv = dict(re.findall(rf"(\w+)={_NUM}\s*GiB", m.group(1)))
            first("tpu_memory", TpuMemoryStats(**{k: float(v) for k, v in kv.items()}) if kv else None)
        if m := hits.get("hybrid"):
            first("hybrid_kv_layout", HybridKVLayout(
                num_kv_cache_groups=int(m.group(1)), num_kv_cache_tensors=int(m.group(2)),
                num_blocks=int(m.group(3)), duplicate_shared_layers=m.group(4) == "True",
            ))  # fmt: skip
        if m := hits.get("padding"):
            first("padding_layers", m.group(1))
            first("padding_max_waste_percent", m.group(2))
        if "stats" in hits:
            stats_line, spec_message = line, None
        if "spec" in hits and stats_line is not None:
            spec_message = line.message  # logged right after its stats line

    if compile_graphs:
        out["graph_compile_seconds"] = sum(compile_graphs)
    dynamo_plus_graphs = (
        float(out.get("dynamo_transform_seconds") or 0) + sum(compile_graphs)
        if "dynamo_transform_seconds" in out or compile_graphs
        else None
    )
    first("torch_compile_seconds", out.pop("_compile_total", None) or out.pop("_compile_init", None))
    first("torch_compile_seconds", dynamo_plus_graphs)
    if (gu := out.get("_graph_util")) and out.get("requested_memory_gib") is not None and gu[0] > 0:
        # The estimate as a share of total memory: (util - equivalent util) x (requested / util).
        first("graph_memory_estimate_gib", round((gu[0] - gu[1]) * float(out["requested_memory_gib"]) / gu[0], 3))
    first("block_size", out.get("_args_block_size"))
    first("kv_cache_dtype", out.get("_kv_dtype_line"))
    for source in ("_kv_device", "_tpu", "_platform", "_config_device", "_blocks_device"):
        first("device_type", out.get(source))
    startup_found = any(not k.startswith("_") and v is not None for k, v in out.items())
    stats = _stats(stats_line) if stats_line is not None else None
    if stats is not None and spec_message is not None:
        stats.spec_decode = _spec_stats(spec_message)
    stats_device = re.search(r"(\w+) KV cache usage", stats_line.message) if stats_line is not None else None
    first("device_type", stats_device.group(1).upper() if stats_device else None)
    out = {k: v for k, v in out.items() if not k.startswith("_") and v is not None}
    out["latest_stats"] = stats
    found = [k for k in MemoryLayout.model_fields if out.get(k) is not None]
    return MemoryLayout(found_any=startup_found, found_fields=found, startups_seen=startups, **out)
