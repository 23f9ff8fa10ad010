"""The per-request record: what the load generator measured about one request.

A plain slotted dataclass because it is built in the hot path; ``to_json``/``from_json`` define
its line in requests.jsonl (docs/run-format.md). Times are seconds relative to the cell's start
(``t0``, a ``perf_counter`` reading), so records from different processes and resumed runs mean
the same thing; chunk times are stored as millisecond offsets from ``send`` to keep lines short.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

RecordStatus = Literal["ok", "http_error", "timeout", "connection_error", "stream_broken", "no_text", "infeasible"]


@dataclass(slots=True)
class RequestRecord:
    """One request of one cell attempt (times: seconds since the cell's t0)."""

    cell: str
    attempt: int
    index: int
    warmup: bool = False
    status: RecordStatus = "ok"
    http_status: int | None = None
    error: str = ""
    scheduled: float = 0.0
    send: float = 0.0
    first_token: float | None = None
    end: float | None = None
    done: float = 0.0  # when the client finished with the request (end, or the failure)
    chunks: list[float] = field(default_factory=list)
    prompt_tokens_target: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    worker: int = 0

    @property
    def ttft(self) -> float | None:
        return None if self.first_token is None else self.first_token - self.send

    @property
    def e2e(self) -> float | None:
        return None if self.end is None else self.end - self.send

    @property
    def tpot(self) -> float | None:
        n = self.completion_tokens
        if n is None or n < 2 or self.first_token is None or self.end is None:
            return None
        return (self.end - self.first_token) / (n - 1)

    def itls(self) -> list[float]:
        c = self.chunks
        return [b - a for a, b in zip(c, c[1:], strict=False)]

    def to_json(self) -> str:
        send = self.send
        d: dict[str, Any] = {
            "cell": self.cell, "attempt": self.attempt, "i": self.index, "warmup": self.warmup,
            "status": self.status, "scheduled": round(self.scheduled, 6), "send": round(send, 6),
            "first_token": None if self.first_token is None else round(self.first_token, 6),
            "end": None if self.end is None else round(self.end, 6), "done": round(self.done, 6),
            "prompt_tokens_target": self.prompt_tokens_target, "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens, "finish_reason": self.finish_reason,
            "chunks_ms": [round((t - send) * 1000.0, 3) for t in self.chunks],
        }
        if self.status != "ok":
            d["http_status"] = self.http_status
            d["error"] = self.error[:300]
        if self.worker:
            d["worker"] = self.worker
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str | dict[str, Any]) -> RequestRecord:
        d = json.loads(line) if isinstance(line, str) else line
        send = d.get("send", 0.0)
        return cls(
            cell=d["cell"], attempt=d.get("attempt", 0), index=d.get("i", 0), warmup=d.get("warmup", False),
            status=d.get("status", "ok"), http_status=d.get("http_status"), error=d.get("error", ""),
            scheduled=d.get("scheduled", send), send=send, first_token=d.get("first_token"), end=d.get("end"),
            done=d.get("done", d.get("end") or send),
            chunks=[send + ms / 1000.0 for ms in d.get("chunks_ms", [])],
            prompt_tokens_target=d.get("prompt_tokens_target"), prompt_tokens=d.get("prompt_tokens"),
            completion_tokens=d.get("completion_tokens"), finish_reason=d.get("finish_reason"),
            worker=d.get("worker", 0),
        )
