"""`query`: ask the served model something and time the answer."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, Field

from inferctl.config import Target
from inferctl.server.client import VLLMClient


class QueryResult(BaseModel):
    """An answer with its timing. Token counts are the server's (usage), never chunk counts."""

    target: str
    model: str
    prompt: str
    text: str
    reasoning: str | None = Field(default=None, description="Reasoning text, when a reasoning parser is on.")
    finish_reason: str | None = None
    prompt_tokens: int | None = Field(default=None, description="usage.prompt_tokens (includes the chat template).")
    completion_tokens: int | None = Field(default=None, description="usage.completion_tokens.")
    ttft_ms: float | None = Field(default=None, description="Send to first content token.")
    tpot_ms: float | None = Field(default=None, description="Mean time per output token after the first.")
    e2e_ms: float | None = Field(default=None, description="Send to last content token.")
    output_tokens_per_s: float | None = Field(
        default=None, description="completion_tokens / e2e: what the user experienced."
    )
    decode_tokens_per_s: float | None = Field(default=None, description="1 / TPOT: the decode speed.")
    chunks: int = Field(description="Streamed chunks that carried content.")
    note: str | None = Field(default=None, description="Why the answer could not be timed, when it could not.")


async def ask(
    target: Target,
    prompt: str,
    *,
    model: str | None = None,
    max_tokens: int = 256,
    system: str | None = None,
    temperature: float | None = None,
    completion_api: bool = False,
    on_delta: Callable[[str], None] | None = None,
) -> QueryResult:
    """Stream one answer from the target; raises an EndpointError when the request fails."""
    extra = {"temperature": temperature} if temperature is not None else {}
    async with VLLMClient(target) as client:
        served = await client.resolve_model(model)
        if completion_api:
            result = await client.complete(
                prompt, model=served.id, max_tokens=max_tokens, extra=extra, on_delta=on_delta
            )
        else:
            messages = [{"role": "system", "content": system}] if system else []
            messages.append({"role": "user", "content": prompt})
            result = await client.chat(
                messages, model=served.id, max_tokens=max_tokens, extra=extra, on_delta=on_delta
            )
    note = None
    if result.status == "no_text":  # a well-formed answer of tokens without text: show it, untimed
        note = result.error
    else:
        result.raise_for_status(target.url + ("/v1/completions" if completion_api else "/v1/chat/completions"))

    def ms(seconds: float | None) -> float | None:
        return round(seconds * 1000, 2) if seconds is not None else None

    e2e = result.e2e
    return QueryResult(
        target=target.name,
        model=served.id,
        prompt=prompt,
        text=result.text,
        reasoning=result.reasoning or None,
        finish_reason=result.finish_reason,
        prompt_tokens=result.prompt_tokens,
        completion_tokens=result.completion_tokens,
        ttft_ms=ms(result.ttft),
        tpot_ms=ms(result.tpot),
        e2e_ms=ms(e2e),
        output_tokens_per_s=round(result.completion_tokens / e2e, 2) if result.completion_tokens and e2e else None,
        decode_tokens_per_s=round(1 / result.tpot, 2) if result.tpot else None,
        chunks=len(result.chunk_times),
        note=note,
    )
