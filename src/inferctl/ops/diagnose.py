"""`logs analyze` and `remediate`: the served model explains its own logs.

The facts come first and without a model: ``extract_log_issues`` finds the warnings, errors and
tracebacks, and a small table of known vLLM / Cloud Run failures adds likely causes. Then the model
(the target's own, or ``--ask`` another one, e.g. the local engine when the deployment is down) is
asked for a summary. When the model cannot be reached the result still carries the facts and says
why there is no summary. The prompt is the same whatever the logs contain (the seed switched to a
generic prompt whenever the text contained "error", which real error logs always do).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError, InferctlError
from inferctl.server.log_lines import LogIssue, extract_log_issues

MAX_PROMPT_CHARS = 12_000
SYSTEM = ("You are a site reliability engineer who runs vLLM inference servers on GPUs and TPUs. Be concrete and "
          "brief. Do not invent log lines.")

# (pattern, likely cause and fix) — failures seen in the seed's transcripts and vLLM's own messages
KNOWN_CAUSES: list[tuple[str, str]] = [
    (r"CUDA out of memory|OutOfMemoryError|out of memory",
     "GPU memory exhausted: lower --gpu-memory-utilization, --max-model-len or --max-num-seqs, or quantize."),
    (r"No available memory for the cache blocks|larger than the maximum number of tokens that can be stored in KV",
     "KV cache too small for max-model-len: lower --max-model-len, use --kv-cache-dtype fp8, or a bigger GPU."),
    (r"You do not have quota for using GPUs|Quota exceeded|MemAllocPerProjectRegion",
     "GPU quota: request quota or pick a region with quota (`inferctl capacity`)."),
    (r"401 Client Error|Access to model .* is restricted|gated repo|Invalid user token|hf-token",
     "Hugging Face access: accept the model licence and store a valid token (`inferctl secrets set-hf-token`)."),
    (r"Permission denied on secret|secretmanager.*(denied|403)|SECRETS_ACCESS_CHECK_FAILED",
     "The runtime service account cannot read the secret: grant it roles/secretmanager.secretAccessor."),
    (r"unrecognized arguments|error: argument|no such option",
     "A vLLM flag the image does not know: check the flag against the image's vLLM version."),
    (r"Startup probe failed|PROGRESS_DEADLINE_EXCEEDED|Default STARTUP TCP probe failed",
     "The server did not listen in time: raise probe.failure_threshold / initial_delay_s (weights load slowly)."),
    (r"ZONE_RESOURCE_POOL_EXHAUSTED|no more capacity|stockout",
     "The zone has no capacity: try another zone (`inferctl capacity`) or a spot / queued request."),
    (r"Permission denied.*(/mnt/models|gcsfuse)|uid=1001",
     "The bucket mount is not readable by the vllm user: mount with uid=1001,gid=1001."),
]


class LogAnalysis(BaseModel):
    """What the logs say, with the model's explanation when it could be asked."""

    target: str | None = Field(default=None, description="Whose logs.")
    source: str = Field(description="Cloud Logging filter or log file.")
    lines_read: int = Field(description="Log lines read.")
    issues: list[LogIssue] = Field(description="Warnings, errors and tracebacks, most recent last (at most 50).")
    issue_counts: dict[str, int] = Field(description="Issues per severity.")
    known_causes: list[str] = Field(description="Likely causes matched from known failure messages.")
    summary: str | None = Field(default=None, description="The model's summary of critical issues and causes.")
    asked: str | None = Field(default=None, description="The target whose model wrote the summary.")
    model: str | None = Field(default=None, description="The served model that answered.")
    note: str | None = Field(default=None, description="Why there is no summary, when there is none.")


class Remediation(BaseModel):
    """A remediation plan for one error."""

    error: str = Field(description="The error text given.")
    known_causes: list[str] = Field(description="Likely causes matched from known failure messages.")
    plan: str | None = Field(default=None, description="The model's remediation plan.")
    asked: str | None = Field(default=None, description="The target whose model answered.")
    model: str | None = None
    note: str | None = Field(default=None, description="Why there is no plan, when there is none.")


def known_causes(text: str) -> list[str]:
    """Likely causes for failure messages found in ``text`` (pure)."""
    return [cause for pattern, cause in KNOWN_CAUSES if re.search(pattern, text, re.IGNORECASE)]


def build_analysis_prompt(issues: list[LogIssue], tail: list[str], causes: list[str], *,
                          max_chars: int = MAX_PROMPT_CHARS) -> str:
    """The user message for `logs analyze` (pure; bounded by ``max_chars``)."""
    counted = Counter(f"[{i.severity}] {i.message}" for i in issues)
    parts = ["Below are warnings and errors from a vLLM server's logs, then its last log lines.",
             "Summarise the critical issues, their most likely causes, and what to check first. "
             "If nothing is wrong, say so.", "", "Issues (count x message):"]
    parts += [f"{n} x {msg}" for msg, n in counted.most_common(40)] or ["(none found)"]
    if causes:
        parts += ["", "Known causes matched:", *causes]
    head = "\n".join(parts)[: max_chars // 2]  # leave at least half the budget for the newest lines
    budget = max_chars - len(head) - 40
    kept: list[str] = []
    for line in reversed(tail):  # newest lines matter most; keep as many as fit
        if budget - len(line) - 1 < 0:
            break
        kept.append(line)
        budget -= len(line) + 1
    return head + "\n\nLast log lines:\n" + "\n".join(reversed(kept))


async def _ask(ask_target: str | None,
               make_prompt: Callable[[int], str]) -> tuple[str | None, str | None, str | None, str | None]:
    """(answer, target name, model, note) — never raises for an unreachable model.

    The prompt is sized to the served model's context (a small local model has 2k tokens): about
    2.5 characters per token of log text, halved once more if the server still finds it too long.
    """
    import anyio

    from inferctl.errors import RequestRejected
    from inferctl.ops.query import ask
    from inferctl.ops.targets import resolve_target
    from inferctl.server.client import VLLMClient

    try:
        target = await anyio.to_thread.run_sync(lambda: resolve_target(ask_target))
        async with VLLMClient(target) as client:
            served = await client.resolve_model()
        limit = served.max_model_len or 8192
        max_tokens = min(512, max(64, limit // 4))
        budget = int(min(MAX_PROMPT_CHARS, max(800, (limit - max_tokens - 256) * 2.5)))
        for attempt in range(2):
            try:
                result = await ask(target, make_prompt(budget), model=served.id, system=SYSTEM,
                                   max_tokens=max_tokens, temperature=0.2)
                break
            except RequestRejected:
                if attempt == 1:
                    raise
                budget //= 2
    except InferctlError as exc:
        return None, ask_target, None, f"The model could not be asked: {exc}"
    answer = result.text.strip() or None
    return answer, target.name, result.model, None if answer else "The model returned an empty answer."


async def analyze_logs(target: str | None = None, *, since: str = "1h", limit: int = 500,
                       log_path: Path | None = None, ask_target: str | None = None,
                       project: str | None = None) -> LogAnalysis:
    """Fetch the target's logs, extract issues, and ask the served model to explain them."""
    from inferctl.ops.logs import fetch_logs

    logs = await fetch_logs(target, since=since, limit=limit, log_path=log_path, project=project)
    lines = [r.text for r in logs.records]
    text = "\n".join(lines)
    issues = extract_log_issues(text)
    seen = {i.line for i in issues}
    severe = {"ERROR", "CRITICAL", "ALERT", "EMERGENCY"}
    for n, r in enumerate(logs.records, start=1):  # Cloud Logging's own severity catches unprefixed lines
        if r.severity in severe and n not in seen:
            issues.append(LogIssue(line=n, severity="CRITICAL" if r.severity != "ERROR" else "ERROR",
                                   message=r.text, kind="log"))
    issues.sort(key=lambda i: i.line)
    causes = known_causes(text)
    result = LogAnalysis(target=logs.target, source=logs.location, lines_read=len(lines), issues=issues[-50:],
                         issue_counts=dict(Counter(i.severity for i in issues)), known_causes=causes)
    if not lines:
        result.note = "No log lines in that window; nothing to analyse."
        return result
    result.summary, result.asked, result.model, result.note = await _ask(
        ask_target or logs.target, lambda budget: build_analysis_prompt(issues, lines, causes, max_chars=budget))
    return result


async def remediate(error_text: str, *, target: str | None = None) -> Remediation:
    """A short remediation plan for ``error_text`` from the served model, plus matched known causes."""
    error_text = error_text.strip()
    if not error_text:
        raise ConfigError("Give the error text to remediate.")
    causes = known_causes(error_text)
    def prompt(budget: int) -> str:
        text = ("Suggest a remediation plan of at most 3 steps for this error from a vLLM deployment. Say what to "
                "check to confirm the cause.")
        if causes:
            text += "\n\nKnown causes that match:\n" + "\n".join(causes)
        return text + "\n\nError:\n" + error_text[-max(200, budget - len(text)):]

    plan, asked, model, note = await _ask(target, prompt)
    return Remediation(error=error_text, known_causes=causes, plan=plan, asked=asked, model=model, note=note)
