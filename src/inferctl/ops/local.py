"""Use cases for the managed local vLLM engine: up, down, status, logs.

These are synchronous on purpose: they manage a process (spawn, signal, poll a log file) and the
CLI calls them directly; an async face runs them in a worker thread.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError, LocalEngineError
from inferctl.local import engine
from inferctl.local.state import DEFAULT_PORT, EngineState, clear_state, read_state

TINY_MAX_MODEL_LEN = 2048
# Flags inferctl sets itself and records in the state file; a second copy in the pass-through
# arguments would silently win inside vLLM and make the record lie.
_OWNED_FLAGS = ("--model", "--port", "--host", "--served-model-name")


class LocalStatus(BaseModel):
    """The managed local engine as seen now."""

    status: Literal["running", "starting", "stopped", "dead"] = Field(
        description="running: serving (/health 200); starting: alive, not serving yet; "
        "stopped: none recorded; dead: recorded but its process is gone (stale state)."
    )
    url: str | None = Field(default=None, description="Base URL (without /v1).")
    pid: int | None = None
    port: int | None = None
    model: str | None = Field(default=None, description="Served model name (use it as `model` in requests).")
    model_dir: str | None = Field(default=None, description="Directory of the served checkpoint.")
    uptime_s: float | None = Field(default=None, description="Seconds since the process was spawned.")
    started_at: float | None = Field(default=None, description="Unix time the process was spawned.")
    log_path: str | None = None
    argv: list[str] = Field(default_factory=list, description="The engine's exact command line.")


class LocalUpResult(LocalStatus):
    already_running: bool = Field(
        default=False, description="True when an engine was already up and nothing was started."
    )
    startup_s: float | None = Field(default=None, description="Seconds from spawn to /health 200.")


class LocalDownResult(BaseModel):
    stopped: bool = Field(description="True when a recorded engine was stopped.")
    pid: int | None = None
    port: int | None = None
    message: str


class LocalLogs(BaseModel):
    log_path: str | None = Field(description="The log file read (None when no engine ever started).")
    lines: list[str]


def _status_from(name: str, state: EngineState | None) -> LocalStatus:
    if state is None:
        return LocalStatus(status=name)  # type: ignore[arg-type]
    return LocalStatus(
        status=name,  # type: ignore[arg-type]
        url=state.url,
        pid=state.pid,
        port=state.port,
        model=state.served_model_name,
        model_dir=state.model_dir,
        uptime_s=round(max(0.0, time.time() - state.started_at), 1),
        started_at=state.started_at,
        log_path=state.log_path,
        argv=state.argv,
    )


def status() -> LocalStatus:
    """Whether the local engine runs, and where (pid, port, model, uptime, log)."""
    name, state = engine.status()
    return _status_from(name, state)


def _has_flag(args: Sequence[str], flag: str) -> bool:
    return any(a == flag or a.startswith(flag + "=") for a in args)


def up(
    model_dir: Path | str | None = None,
    port: int | None = None,
    extra_args: Sequence[str] = (),
    wait: bool = True,
    on_progress: Callable[[str], None] | None = None,
    *,
    served_model_name: str | None = None,
    max_model_len: int | None = None,
    timeout: float = engine.DEFAULT_READY_TIMEOUT,
) -> LocalUpResult:
    """Start the local engine (idempotent) and, by default, wait until it serves.

    Without ``model_dir`` the tiny Gemma 4 checkpoint is built (once, cached) and served as
    ``tiny-gemma4`` with ``--max-model-len 2048``. ``extra_args`` go to vLLM verbatim. When an
    engine is already running it is returned as is (``already_running``); asking for a different
    model or port while one runs is an error. A dead engine's stale state is replaced.
    """
    name, current = engine.status()
    if current is not None and name in ("running", "starting"):
        wanted_dir = Path(model_dir).expanduser().resolve() if model_dir is not None else None
        if (port is not None and port != current.port) or (
            wanted_dir is not None and str(wanted_dir) != current.model_dir
        ):
            raise LocalEngineError(
                f"A local engine is already running ({current.served_model_name} on port {current.port}); "
                f"stop it with `inferctl local down` before starting another."
            )
        if name == "starting" and wait:
            engine.wait_ready(current, timeout=timeout, on_progress=on_progress)
            name = "running"
        return LocalUpResult(**_status_from(name, current).model_dump(), already_running=True)
    if current is not None:  # dead: the stale record must not block a new start
        clear_state()

    args = list(extra_args)
    for flag in _OWNED_FLAGS:
        if _has_flag(args, flag):
            raise ConfigError(
                f"Do not pass {flag} to vLLM directly; use inferctl's own option "
                f"(inferctl records it to find the engine again)."
            )
    if model_dir is None:
        from inferctl.local.tinymodel import SERVED_MODEL_NAME, ensure_tiny_model

        model_dir = ensure_tiny_model()
        served_model_name = served_model_name or SERVED_MODEL_NAME
        if max_model_len is None and not _has_flag(args, "--max-model-len"):
            max_model_len = TINY_MAX_MODEL_LEN  # the tiny model claims 128k; keep profiling small
    else:
        served_model_name = served_model_name or Path(model_dir).expanduser().resolve().name
    if max_model_len is not None:
        args += ["--max-model-len", str(max_model_len)]

    state = engine.start(
        model_dir,
        served_model_name=served_model_name,
        port=port if port is not None else DEFAULT_PORT,
        extra_args=args,
    )
    if not wait:
        return LocalUpResult(**_status_from("starting", state).model_dump())
    t0 = time.monotonic()
    try:
        engine.wait_ready(state, timeout=timeout, on_progress=on_progress)
    except LocalEngineError:
        if not engine.is_running(state):
            clear_state()  # it died: the error carries the log tail; `local logs` still finds the file
        raise
    # (On Ctrl-C the engine keeps starting in the background; its state stays recorded so
    # `local status` / `local down` find it.)
    return LocalUpResult(**_status_from("running", state).model_dump(), startup_s=round(time.monotonic() - t0, 1))


def down(timeout: float = engine.DEFAULT_STOP_TIMEOUT) -> LocalDownResult:
    """Stop the local engine (SIGTERM, then SIGKILL after ``timeout``) and forget it.

    Only a process that is provably the one inferctl started (same pid, start time and command) is
    signalled; otherwise the record is stale and is removed without touching the process.
    """
    state, signalled = engine.stop(timeout=timeout)
    if state is None:
        return LocalDownResult(stopped=False, message="No local engine is recorded; nothing to stop.")
    if signalled:
        return LocalDownResult(
            stopped=True, pid=state.pid, port=state.port, message=f"Stopped the local engine (pid {state.pid})."
        )
    if state.process_start is None:
        message = (
            f"The engine record (pid {state.pid}) was written by an older inferctl without the process start "
            f"time, so pid {state.pid} cannot be proven to be that engine and was not signalled; the record is "
            f"cleared. If an engine still serves on port {state.port}, stop it by hand."
        )
    else:
        message = f"The local engine (pid {state.pid}) is already gone; cleared its stale record."
    return LocalDownResult(stopped=False, pid=state.pid, port=state.port, message=message)


def _latest_log() -> Path | None:
    directory = engine.log_dir()
    if not directory.is_dir():
        return None
    logs = sorted(directory.glob("engine-*.log"), key=lambda p: p.stat().st_mtime)
    return logs[-1] if logs else None


def log_path() -> Path | None:
    """The current engine's log, else the most recent one (so a failed start can still be read)."""
    try:
        state = read_state()
    except LocalEngineError:
        state = None
    if state is not None:
        return Path(state.log_path)
    return _latest_log()


def logs(lines: int = 50) -> LocalLogs:
    """The last ``lines`` lines of the local engine's log."""
    path = log_path()
    if path is None:
        return LocalLogs(log_path=None, lines=[])
    return LocalLogs(log_path=str(path), lines=engine.log_tail(path, lines))
