"""Tools that look at a serving endpoint: targets, status, health, model/engine, metrics, query, logs.

Each tool: parse arguments -> one ``inferctl.ops`` call -> the ops' pydantic model + a short summary.
"""

from typing import Annotated, Literal

from mcp.server.mcpserver import Context
from mcp.types import CallToolResult
from pydantic import BaseModel, Field

from inferctl import params as P
from inferctl.mcp.adapt import fmt, guard, in_thread, resolve, result, speak_tool
from inferctl.mcp.params import arg
from inferctl.mcp.policy import Policy, ToolSpec
from inferctl.ops.diagnose import LogAnalysis, Remediation
from inferctl.ops.health import HealthReport
from inferctl.ops.local import LocalDownResult, LocalStatus, LocalUpResult
from inferctl.ops.logs import LogsResult
from inferctl.ops.memory import MemoryReport
from inferctl.ops.metrics import MetricsReport
from inferctl.ops.models import ModelsReport
from inferctl.ops.query import QueryResult
from inferctl.ops.status import StatusReport

TargetArg = Annotated[
    str | None,
    Field(max_length=300, description="Where: a target name from list_targets ('local', a configured "
          "target, or a deployment profile), or an http(s) URL of any vLLM server. Default: the configured default "
          "target, else 'local'."),
]
ModelArg = arg(P.SERVED_MODEL)
NamedTargetArg = Annotated[
    str | None,
    Field(max_length=300, description="A target name from list_targets ('local', a configured target, or a "
          "deployment profile); URLs have no logs. Default: the configured default target, else 'local'."),
]
SinceArg = Annotated[str, Field(max_length=16, pattern=r"^\d+[smhd]$", description="How far back: 30m, 1h, 2d.")]


# -- targets ---------------------------------------------------------------------------------------


class TargetInfo(BaseModel):
    name: str
    kind: Literal["local", "configured", "profile"]
    url: str | None = Field(default=None, description="Base URL (profiles: resolved when used).")
    detail: str | None = Field(default=None, description="Auth kind, or platform/accelerator/model for a profile.")


class TargetList(BaseModel):
    """Everything a ``target`` argument can name, and the local engine's state."""

    targets: list[TargetInfo]
    local_engine: LocalStatus
    server_mode: str = Field(description="read-only or read-write: whether write tools are available.")


@guard()
async def list_targets(ctx: Context) -> Annotated[CallToolResult, TargetList]:
    """List where inferctl can act: the local engine, configured endpoints and cloud deployment profiles.

    Use first, to learn valid values for every other tool's `target` argument and whether the local engine
    runs. Next: get_status(target) for a dashboard, or describe_deployment(profile) for a cloud profile.
    """

    def collect() -> TargetList:
        from inferctl.ops import local
        from inferctl.ops.profiles import list_profile_summaries
        from inferctl.ops.targets import list_targets as configured

        rows = [TargetInfo(name=t.name, kind="local" if t.local else "configured", url=t.display_url,
                           detail=None if t.local else f"auth: {t.auth}") for t in configured()]
        rows += [TargetInfo(name=p.name, kind="profile", detail=f"{p.platform} {p.location or ''}, "
                            f"{p.accelerator}, {p.model}") for p in list_profile_summaries()]
        return TargetList(targets=rows, local_engine=local.status(), server_mode=ctx.mcp_server.policy.mode)

    out = await in_thread(collect)
    lines = [f"**{len(out.targets)} targets** (server is {out.server_mode}); local engine: "
             f"**{out.local_engine.status}**" + (f" at {out.local_engine.url}" if out.local_engine.url else "")]
    lines += [f"- `{t.name}` ({t.kind}) {t.url or ''} {t.detail or ''}".rstrip() for t in out.targets[:30]]
    return result(out, "\n".join(lines))


# -- status, health, model, metrics ------------------------------------------------------------------


@guard()
async def get_status(target: TargetArg = None) -> Annotated[CallToolResult, StatusReport]:
    """Dashboard of one endpoint: reachable, healthy, vLLM version, served models and current load.

    Load covers running/waiting requests, KV-cache usage, prefix-cache hit rate, token rates over ~1 s and
    speculative-decoding acceptance. Endpoint failures are reported in `problem`, not raised. Next:
    verify_health for a real completion, get_metrics for every counter, analyze_logs when unhealthy.
    """
    from inferctl.ops.status import get_status as op

    t = await resolve(target)
    r = await op(t)
    load = r.load
    lines = [f"**{r.target}** {r.url}: " + ("healthy" if r.healthy else "reachable, NOT healthy" if r.reachable
                                              else "UNREACHABLE") + (f", vLLM {r.version}" if r.version else "")]
    if r.models:
        lines.append("models: " + ", ".join(f"`{m.id}` (max_model_len {fmt(m.max_model_len)})" for m in r.models))
    if load:
        lines.append(f"running {fmt(load.requests_running, digits=0)}, waiting {fmt(load.requests_waiting, digits=0)}, "
                     f"KV cache {fmt((load.kv_cache_usage or 0) * 100, '%')}, generation "
                     f"{fmt(load.generation_tokens_per_s, ' tok/s')}")
    if r.problem:
        lines.append(f"problem: {r.problem}")
    return result(r, "\n".join(lines))


@guard()
async def verify_health(
    target: TargetArg = None,
    model: ModelArg = None,
) -> Annotated[CallToolResult, HealthReport]:
    """Check the model really answers: GET /health, then a short real chat completion, both timed.

    Use when asked "is it healthy / working". `healthy` is true only when both succeed; `problem` says why
    not. Next: get_status for load, analyze_logs for causes.
    """
    from inferctl.ops.health import check_health

    r = await check_health(await resolve(target), model=model)
    verdict = "HEALTHY" if r.healthy else f"UNHEALTHY: {r.problem}"
    return result(r, f"**{r.target}** {verdict}\n/health {fmt(r.health_endpoint_ms, ' ms')}, completion "
                     f"{fmt(r.completion_ms, ' ms')} (TTFT {fmt(r.ttft_ms, ' ms')}), model `{r.model or '-'}`")


class ModelInfo(BaseModel):
    """Served models, the engine's configuration, and its memory layout."""

    models: ModelsReport
    memory: MemoryReport | None = Field(default=None, description="Memory/KV layout (None when it failed).")
    memory_problem: str | None = None


@guard()
async def get_model_info(target: TargetArg = None) -> Annotated[CallToolResult, ModelInfo]:
    """What is served and how: models, max_model_len, vLLM version, KV-cache config, speculative decoding,
    the engine command line (local engine), and the memory layout (weights GiB, KV-cache GiB and tokens,
    max concurrency) from the engine's startup log when inferctl can read it.

    Use for "what are the model details", "what is the memory layout". Remote endpoints do not serve their
    log, so memory there shows only the KV capacity from /metrics.
    """
    from inferctl.errors import InferctlError
    from inferctl.ops.memory import memory_layout
    from inferctl.ops.models import list_models

    t = await resolve(target)
    models = await list_models(t)
    info = ModelInfo(models=models)
    try:
        info.memory = await memory_layout(t)
    except InferctlError as exc:  # the model list is still worth returning
        info.memory_problem = speak_tool(str(exc), set())
    if info.memory and info.memory.note:  # written for the CLI: drop its flag-only hints
        info.memory.note = speak_tool(info.memory.note, set())
    cc = models.cache_config
    lines = [f"**{models.target}** vLLM {models.version or '?'}: " + ", ".join(f"`{m.id}` ({m.root or '?'}, "
             f"max_model_len {fmt(m.max_model_len)})" for m in models.models),
             f"speculative decoding: {'on' if models.speculative_decoding else 'off'}"]
    if cc:
        lines.append(f"KV cache: {fmt(cc.kv_cache_size_tokens)} tokens, block {fmt(cc.block_size)}, dtype "
                     f"{cc.cache_dtype or '-'}, prefix caching {cc.enable_prefix_caching}")
    lay = info.memory.layout if info.memory else None
    if lay and lay.found_any:
        lines.append(f"memory: weights {fmt(lay.model_load_memory_gib, ' GiB', 2)}, KV cache "
                     f"{fmt(lay.kv_cache_memory_gib, ' GiB', 2)} = {fmt(lay.kv_cache_tokens)} tokens, max concurrency "
                     f"{fmt(lay.max_concurrency, 'x', 2)}")
    elif info.memory and info.memory.note:
        lines.append(f"memory: {info.memory.note}")
    return result(info, "\n".join(lines))


@guard()
async def get_metrics(target: TargetArg = None) -> Annotated[CallToolResult, MetricsReport]:
    """One parsed scrape of the engine's Prometheus /metrics: requests running/waiting, KV-cache usage,
    prefix-cache hits, token counters, preemptions, finish reasons, server-side latency histograms and
    speculative-decoding acceptance. Definitions: resource inferctl://docs/metrics.

    Counters are since server start; call get_status for rates over the last second.
    """
    from inferctl.ops.metrics import get_metrics as op

    r = await op(await resolve(target))
    s = r.snapshot
    spec = s.spec_decode
    text = (f"**{r.target}** running {fmt(s.requests_running, digits=0)}, waiting {fmt(s.requests_waiting, digits=0)}, "
            f"KV cache {fmt((s.kv_cache_usage or 0) * 100, '%')}, prefix hit rate "
            f"{fmt((s.prefix_cache_hit_rate or 0) * 100, '%')}, prompt tokens {fmt(s.prompt_tokens, digits=0)}, "
            f"generated {fmt(s.generation_tokens, digits=0)}, preemptions {fmt(s.preemptions, digits=0)}")
    if spec:
        text += f"\nspec decode acceptance {fmt(spec.acceptance_rate, '', 3)}, mean length " \
                f"{fmt(spec.mean_acceptance_length, '', 2)}"
    return result(r, text)


@guard()
async def query_model(
    prompt: Annotated[str, Field(min_length=1, max_length=20_000, description="The user message to send.")],
    target: TargetArg = None,
    model: ModelArg = None,
    max_tokens: Annotated[int, Field(ge=1, le=4096, description="Most tokens to generate.")] = 256,
    system: Annotated[str | None, Field(max_length=20_000, description="Optional system message.")] = None,
    temperature: Annotated[float | None, Field(ge=0, le=2, description="Sampling temperature.")] = None,
) -> Annotated[CallToolResult, QueryResult]:
    """Ask the served model something and time the answer: TTFT, TPOT, end-to-end, tokens/s, token counts
    from the server's usage. Use for "query the model with stats". One request: it does not load the server.
    """
    from inferctl.ops.query import ask

    r = await ask(await resolve(target), prompt, model=model, max_tokens=max_tokens, system=system,
                  temperature=temperature)
    return result(r, f"`{r.model}`: TTFT {fmt(r.ttft_ms, ' ms')}, TPOT {fmt(r.tpot_ms, ' ms', 2)}, e2e "
                     f"{fmt(r.e2e_ms, ' ms')}, {fmt(r.output_tokens_per_s, ' tok/s')}, {fmt(r.prompt_tokens)} in / "
                     f"{fmt(r.completion_tokens)} out, finish {r.finish_reason}\n\n{r.text[:2000]}")


# -- logs --------------------------------------------------------------------------------------------


@guard()
async def fetch_logs(
    target: NamedTargetArg = None,
    since: SinceArg = "1h",
    severity: Annotated[Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] | None,
                        Field(description="Lowest severity to include.")] = None,
    limit: Annotated[int, Field(ge=1, le=500, description="Most recent lines to return.")] = 100,
) -> Annotated[CallToolResult, LogsResult]:
    """Recent log lines of a target: Cloud Logging for a deployment profile, the log file for 'local'.

    Plain URL targets expose no logs. For an explanation rather than raw lines, call analyze_logs.
    """
    from inferctl.ops.logs import fetch_logs as op

    r = await op(target, since=since, severity=severity, limit=limit)
    tail = "\n".join(f"{x.timestamp or ''} {x.severity} {x.text[:300]}" for x in r.records[-15:])
    return result(r, f"**{len(r.records)} lines** from {r.source} ({r.location}); last ones:\n```\n{tail}\n```")


@guard(timeout=55.0)
async def analyze_logs(
    target: NamedTargetArg = None,
    since: SinceArg = "1h",
    limit: Annotated[int, Field(ge=1, le=2000, description="Log lines to read.")] = 500,
    ask_target: Annotated[str | None, Field(max_length=300, description="Whose model writes the summary "
                                            "(default: the same target; use 'local' when it is down).")] = None,
) -> Annotated[CallToolResult, LogAnalysis]:
    """Find warnings, errors and tracebacks in a target's logs, match known vLLM/Cloud Run failures, and ask
    a served model to summarise causes and what to check. The facts come back even when no model answers.
    Use for incident triage; next: suggest_remediation with the worst error.
    """
    from inferctl.ops.diagnose import analyze_logs as op

    r = await op(target, since=since, limit=limit, ask_target=ask_target)
    lines = [f"**{r.lines_read} lines** read from {r.source}; issues: "
             + (", ".join(f"{k} {v}" for k, v in r.issue_counts.items()) or "none")]
    lines += [f"- likely: {c}" for c in r.known_causes]
    lines.append(r.summary or f"(no summary: {r.note})")
    return result(r, "\n".join(lines))


@guard(timeout=55.0)
async def suggest_remediation(
    error: Annotated[str, Field(min_length=1, max_length=20_000, description="The error text or log excerpt.")],
    target: NamedTargetArg = None,
) -> Annotated[CallToolResult, Remediation]:
    """A remediation plan (at most 3 steps) for one error from a vLLM deployment: known causes matched from a
    table of real failures (OOM, KV too small, GPU quota, gated HF repo, probes...) plus the served model's
    plan. `target` is whose model writes the plan.
    """
    from inferctl.ops.diagnose import remediate

    r = await remediate(error, target=target)
    causes = "".join(f"\n- likely: {c}" for c in r.known_causes)
    return result(r, f"**Remediation**{causes}\n{r.plan or f'(no plan: {r.note})'}")


# -- local engine ----------------------------------------------------------------------------------


class LocalEngineResult(BaseModel):
    action: Literal["up", "down"]
    up: LocalUpResult | None = None
    down: LocalDownResult | None = None


@guard()
async def manage_local_engine(
    ctx: Context,
    action: Annotated[Literal["up", "down"], Field(description="up: start the tiny local vLLM engine (returns "
                                                   "while it loads; poll list_targets or get_status). down: stop it.")],
) -> Annotated[CallToolResult, LocalEngineResult]:
    """Start or stop the managed local vLLM engine (the CPU build serving a tiny Gemma 4), the demo target.

    `up` is idempotent and returns at once with status 'starting'; the engine serves after ~1-3 minutes on a
    CPU. Poll list_targets (local_engine.status) until 'running'. Its state is in list_targets; its log in
    fetch_logs(target='local').
    """
    policy: Policy = ctx.mcp_server.policy
    policy.require("write", "manage_local_engine")
    from inferctl.ops import local

    if action == "up":
        r = await in_thread(lambda: local.up(wait=False))
        out = LocalEngineResult(action="up", up=r)
        text = f"local engine **{r.status}**" + (" (already running)" if r.already_running else "") + \
               f" at {r.url}, model `{r.model}`; poll list_targets until running."
    else:
        d = await in_thread(local.down)
        out = LocalEngineResult(action="down", down=d)
        text = d.message
    return result(out, text)


def tools() -> list[ToolSpec]:
    return [
        ToolSpec(list_targets, "read", True, False, "List targets"),
        ToolSpec(get_status, "read", True, True, "Endpoint status"),
        ToolSpec(verify_health, "read", True, True, "Verify model health"),
        ToolSpec(get_model_info, "read", True, True, "Model, engine config and memory layout"),
        ToolSpec(get_metrics, "read", True, True, "Engine metrics"),
        ToolSpec(query_model, "read", False, True, "Query the model with timing"),
        ToolSpec(fetch_logs, "read", True, True, "Fetch logs"),
        ToolSpec(analyze_logs, "read", False, True, "Analyze logs"),
        ToolSpec(suggest_remediation, "read", False, True, "Suggest a remediation"),
        ToolSpec(manage_local_engine, "write", True, False, "Start/stop the local engine"),
    ]
