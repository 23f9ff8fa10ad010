"""Did the prefix cache serve prompts the workload meant to be unique?

Every request's prompt starts with a head of random words unique to it (bench/workload.py), so
the only tokens two requests of a cell share are the chat template's, the anchor word and
``--shared-prefix``. vLLM's prefix cache can serve at most those: its hit rate over a cell
(``prefix_cache_hits / prefix_cache_queries``, from /metrics) should not exceed
``(template + anchor + shared prefix) / prefill``. When it is far above that, TTFT was measured
on cached prompts. Seen on a GPU: a tokenizer without the alphabet's words turned every word into
``<unk>``, every prompt into the same tokens, and the hit rate into 0.89-0.95 while nothing warned.
Other causes: an earlier run with the same ``--seed`` against the same server (the same prompts
are still cached), or preemptions (a preempted request re-reads its own cached blocks).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

# How far above the workload's own sharing a hit rate may be before it is flagged (absolute).
# Block granularity only lowers the measured rate, so a real excess is the only way past it.
MARGIN = 0.15


class PrefixCacheCheck(BaseModel):
    """The server's prefix-cache hit rate over a cell next to the most the workload intends."""

    intended_max: float = Field(description="Highest hit rate the workload allows: shared tokens / prefill.")
    measured: float = Field(description="prefix_cache_hits / prefix_cache_queries over the cell.")
    flagged: bool = Field(description="True when measured > intended_max + margin: TTFT saw cached prompts.")
    text: str = ""


def check(measured: float | None, *, prefill: int, shared_tokens: int,
          preemptions: float | None = None) -> PrefixCacheCheck | None:
    """The check for one cell, or None when the server does not expose prefix-cache counters."""
    if measured is None or prefill <= 0:
        return None
    intended = min(1.0, shared_tokens / prefill)
    flagged = measured > intended + MARGIN
    text = ""
    if flagged:
        text = (f"the server's prefix cache served {measured:.0%} of prompt tokens, but this workload shares at "
                f"most {intended:.0%} (template, anchor and --shared-prefix), so TTFT was measured on cached "
                "prompts: the server's tokenizer may map the prompt words to one token, or an earlier run with "
                "the same --seed left these prompts in the cache (use another --seed)")
        if preemptions:
            text += f"; {preemptions:.0f} preemptions also re-read their own cached blocks"
    return PrefixCacheCheck(intended_max=round(intended, 4), measured=round(measured, 4), flagged=flagged,
                            text=text)
