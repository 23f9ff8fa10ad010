"""Lines of a vLLM server log: strip the prefix, and pick out warnings and errors.

vLLM's prefix is ``[VLLM_LOGGING_PREFIX][(Process pid=N) ]LEVEL MM-DD HH:MM:SS [file.py:line] message``;
0.7 wrote ``file.py:line]`` without the opening bracket; logs collected by Docker or Cloud Logging may
put their own timestamp in front; a TTY adds ANSI colours. uvicorn writes ``INFO:     ...`` and Python
writes tracebacks and ``file.py:12: FutureWarning: ...`` without any prefix. Everything here is
pure and never raises on odd text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

__all__ = ["LogIssue", "LogLine", "extract_log_issues", "split_lines"]

Severity = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
_RANK = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_PROC = r"\((?P<proc>[A-Za-z][\w.-]*) pid=(?P<pid>\d+)\)\s+"
_VLLM = re.compile(
    rf"(?:{_PROC})?(?P<level>DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\s+"
    r"(?P<ts>\d{2}-\d{2} \d{2}:\d{2}:\d{2})(?:[.,]\d+)?\s+\[?(?P<src>[\w./<>-]+:\d+)\]\s?(?P<msg>.*)$"
)
# Cheap test before the full search: a vLLM prefix always has an "MM-DD HH:MM:SS" timestamp.
_HAS_TS = re.compile(r"\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_PROC_ONLY = re.compile(rf"^{_PROC}(?P<msg>.*)$")
_UVICORN = re.compile(r"^(?P<level>WARNING|ERROR|CRITICAL):\s+(?P<msg>.*)$")
_PY_WARNING = re.compile(r":\d+: (?P<kind>\w*Warning): (?P<msg>.*)$")
_TRACEBACK_GLUE = ("Traceback (most recent", "During handling of", "The above exception", "^")
_EXCEPTION = re.compile(
    r"^(?P<exc>[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure))(?::\s*(?P<msg>.*))?$"
)


@dataclass(frozen=True, slots=True)
class LogLine:
    """One log line with vLLM's prefix taken apart (fields are None when there was no prefix)."""

    number: int  # 1-based line number in the text
    message: str
    level: str | None = None
    timestamp: str | None = None
    process: str | None = None
    pid: int | None = None
    source: str | None = None


def split_lines(text: str) -> list[LogLine]:
    """Split log text into lines, colours removed and vLLM's prefix parsed."""
    out = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = (_ANSI.sub("", raw) if "\x1b" in raw else raw).rstrip()
        m = _VLLM.match(line) or (_VLLM.search(line) if _HAS_TS.search(line) else None)
        if m:
            level = "WARNING" if m["level"] == "WARN" else m["level"]
            pid = int(m["pid"]) if m["pid"] else None
            out.append(LogLine(number, m["msg"], level, m["ts"], m["proc"], pid, m["src"]))
        elif m := _PROC_ONLY.match(line):  # a child's raw stdout (traceback lines, prints)
            out.append(LogLine(number, m["msg"], process=m["proc"], pid=int(m["pid"])))
        else:
            out.append(LogLine(number, line))
    return out


class LogIssue(BaseModel):
    """A warning or error found in a vLLM log."""

    line: int = Field(description="1-based line number in the log text.")
    severity: Severity = Field(description="WARNING, ERROR or CRITICAL (or lower if asked for).")
    timestamp: str | None = Field(default=None, description="Time as logged, 'MM-DD HH:MM:SS' (no year).")
    process: str | None = Field(default=None, description="vLLM process name (APIServer, EngineCore...).")
    source: str | None = Field(default=None, description="file.py:line that logged it.")
    message: str = Field(description="The message, prefix removed. For a traceback: its final line.")
    kind: Literal["log", "uvicorn", "python_warning", "traceback"] = Field(
        description="Where it came from: vLLM's logger, uvicorn, a Python warning, or a traceback."
    )


def extract_log_issues(text: str, *, min_severity: Severity = "WARNING") -> list[LogIssue]:
    """Warnings and errors in a vLLM log, in order.

    Recognises vLLM logger lines at ``min_severity`` or above, uvicorn ``ERROR:`` lines, Python
    ``...Warning:`` lines and tracebacks (reported once, as ERROR, with the exception's final line).
    """
    floor = _RANK[min_severity]
    lines = split_lines(text)
    issues: list[LogIssue] = []
    in_traceback: LogLine | None = None
    for ln in lines:
        msg = ln.message
        if in_traceback is not None:
            if _EXCEPTION.match(msg):
                issues.append(
                    LogIssue(
                        line=in_traceback.number,
                        severity="ERROR",
                        timestamp=in_traceback.timestamp,
                        process=in_traceback.process,
                        source=in_traceback.source,
                        message=msg,
                        kind="traceback",
                    )
                )
                in_traceback = None
                continue
            if not msg or msg[0].isspace() or msg.startswith(_TRACEBACK_GLUE):
                continue
            in_traceback = None  # no final exception line; read this line normally
        if msg.startswith("Traceback (most recent call last)"):
            in_traceback = ln
            continue
        if ln.level is not None:
            if _RANK.get(ln.level, 0) >= floor:
                issues.append(
                    LogIssue(
                        line=ln.number,
                        severity=ln.level,  # type: ignore[arg-type]
                        timestamp=ln.timestamp,
                        process=ln.process,
                        source=ln.source,
                        message=msg,
                        kind="log",
                    )
                )
            continue
        if (m := _UVICORN.match(msg)) and _RANK[m["level"]] >= floor:
            issues.append(LogIssue(line=ln.number, severity=m["level"], message=m["msg"], kind="uvicorn"))
        elif (m := _PY_WARNING.search(msg)) and _RANK["WARNING"] >= floor:
            issues.append(
                LogIssue(
                    line=ln.number,
                    severity="WARNING",
                    process=ln.process,
                    message=f"{m['kind']}: {m['msg']}",
                    kind="python_warning",
                )
            )
    return issues
