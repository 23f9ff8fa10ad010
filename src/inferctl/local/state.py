"""The local engine's state file: which process, which port, which model, which log.

Written by ``inferctl local up`` once the process is spawned, removed by ``local down``. Readers
must tolerate a missing file (engine never started) and a corrupt one (a clear ConfigError, not a
traceback), and must check the pid is alive before trusting it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from inferctl.errors import LocalEngineError

DEFAULT_PORT = 8321
HOST = "127.0.0.1"


class EngineState(BaseModel):
    pid: int
    port: int
    host: str = HOST
    model_dir: str = Field(description="Directory of the served checkpoint.")
    served_model_name: str
    log_path: str
    started_at: float = Field(description="Unix time the process was spawned.")
    argv: list[str] = Field(default_factory=list, description="The exact engine command line.")
    process_start: str | None = Field(
        default=None,
        description="Kernel start time of the process (boot id + start ticks, see process_start()); "
        "None in state files written before it was recorded.",
    )

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def state_file() -> Path:
    from inferctl.config import state_dir

    return state_dir() / "local-engine.json"


def read_state() -> EngineState | None:
    """The recorded state, or None when no engine was started. Corrupt files raise."""
    path = state_file()
    if not path.exists():
        return None
    try:
        return EngineState.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError):
        raise LocalEngineError(
            f"The local engine state file {path} is corrupt; run `inferctl local down` to reset it."
        ) from None


def write_state(state: EngineState) -> None:
    path = state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(state.model_dump_json(indent=2), encoding="utf-8")
    os.replace(tmp, path)  # atomic: a reader never sees half a file


def clear_state() -> None:
    state_file().unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process. Zombies count as dead (and our own are reaped)."""
    if pid <= 0:  # os.kill(0, ...) would address our own process group
        return False
    try:
        # When the engine is our child (tests, `up` in the same process), a dead one stays a zombie
        # that os.kill still reaches until it is reaped.
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie that is not our child: dead, its parent just has not reaped it yet
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] not in (["Z"], ["X"])


def process_start(pid: int) -> str | None:
    """An identity for the process ``pid`` that a reused pid cannot have: ``<boot id>:<start ticks>``.

    The start time is field 22 of ``/proc/PID/stat`` (clock ticks after boot, fixed for the life of
    the process and never shared by two processes with the same pid); the boot id makes it unique
    across reboots. Exact integers, so unlike psutil's ``create_time`` (derived from the wall-clock
    boot time, which moves when the clock is adjusted) it compares with ``==``. None when there is no
    /proc (not Linux) or no such process.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command in parentheses may contain spaces
    return f"{boot}:{fields[19]}" if len(fields) > 19 else None


def local_url() -> str:
    """URL of the local engine: from the state file, or the default port when none is recorded."""
    state = read_state()
    if state is None:
        return f"http://{HOST}:{DEFAULT_PORT}"
    return state.url
