"""Process management of the local engine, without vLLM: state, liveness, ports, stopping, logs.

Stand-in processes are real processes (python sleeping); only vLLM itself is absent.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.errors import ConfigError, LocalEngineError
from inferctl.local import engine
from inferctl.local.state import EngineState, pid_alive, process_start, read_state, state_file, write_state
from inferctl.ops import local as ops


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _state(proc: subprocess.Popen | int, port: int = 18321, log_path: str = "/nonexistent.log",
           **fields) -> EngineState:
    """A record of ``proc`` as `local up` writes it: its real start time and the command it was given."""
    pid = proc if isinstance(proc, int) else proc.pid
    fields.setdefault("process_start", process_start(pid))
    if isinstance(proc, subprocess.Popen):
        fields.setdefault("argv", list(proc.args))
    return EngineState(pid=pid, port=port, model_dir="/models/x", served_model_name="x",
                       log_path=log_path, started_at=time.time() - 5, **fields)


def _spawn_fake_engine(script: str = "import time; time.sleep(120)") -> subprocess.Popen:
    # The trailing argument puts "vllm" in the command line, as the real engine's has.
    return subprocess.Popen([sys.executable, "-c", script, engine.ENTRYPOINT], start_new_session=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- state -----------------------------------------------------------------------------------------


def test_no_state_is_stopped():
    assert ops.status().status == "stopped"


def test_corrupt_state_file_is_one_clear_error():
    state_file().parent.mkdir(parents=True)
    state_file().write_text("{not json")
    with pytest.raises(LocalEngineError, match="corrupt"):
        ops.status()
    result = CliRunner().invoke(app, ["local", "status"])
    assert result.exit_code != 0
    assert "corrupt" in result.output and "Traceback" not in result.output


def test_down_resets_a_corrupt_state_file():
    state_file().parent.mkdir(parents=True)
    state_file().write_text('{"pid": "x"}')
    assert ops.down().stopped is False
    assert read_state() is None


def test_dead_pid_is_reported_as_dead_stale_state():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    write_state(_state(proc.pid))
    result = ops.status()
    assert result.status == "dead"
    assert result.pid == proc.pid and result.port == 18321 and result.uptime_s >= 5


def test_a_reused_pid_that_is_not_vllm_is_dead():
    write_state(_state(os.getpid(), argv=["python", "-m", engine.ENTRYPOINT]))  # alive, but it is pytest
    assert ops.status().status == "dead"


# --- never signal what we did not start -------------------------------------------------------------


def _stranger() -> subprocess.Popen:
    """Someone else's process that reused the engine's pid: leads its own session, "vllm" in its argv."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "vllm", engine.ENTRYPOINT],
                            start_new_session=True)
    deadline = time.monotonic() + 10
    while engine._proc_cmdline(proc.pid) != proc.args and time.monotonic() < deadline:
        time.sleep(0.05)  # until the exec is visible in /proc
    return proc


def _assert_untouched_and_forgotten(proc: subprocess.Popen, result) -> None:
    try:
        assert result.stopped is False
        time.sleep(0.3)  # a SIGTERM would have landed by now
        assert proc.poll() is None, "down signalled a process it did not start"
        assert read_state() is None
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="start times come from /proc")
def test_down_leaves_a_reused_pid_with_another_start_time_alive():
    proc = _stranger()
    real = process_start(proc.pid)
    boot, ticks = real.rsplit(":", 1)
    write_state(_state(proc.pid, process_start=f"{boot}:{int(ticks) - 1}", argv=list(proc.args)))
    assert ops.status().status == "dead"
    result = ops.down(timeout=2)
    assert "already gone" in result.message
    _assert_untouched_and_forgotten(proc, result)


@pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="start times come from /proc")
def test_down_leaves_a_process_with_another_command_alive():
    proc = _stranger()
    write_state(_state(proc.pid, argv=[sys.executable, "-m", engine.ENTRYPOINT, "--port", "18321"]))
    assert ops.status().status == "dead"
    _assert_untouched_and_forgotten(proc, ops.down(timeout=2))


def test_down_never_signals_for_an_old_state_file_without_a_start_time():
    proc = _stranger()
    old = _state(proc.pid, argv=list(proc.args)).model_dump(exclude={"process_start"})
    state_file().parent.mkdir(parents=True, exist_ok=True)
    state_file().write_text(json.dumps(old))  # as inferctl wrote it before start times were recorded
    assert read_state().process_start is None  # still readable
    assert ops.status().status == "dead"
    result = CliRunner().invoke(app, ["local", "down"])
    assert result.exit_code == 0
    said = " ".join(result.output.split())
    assert "not signalled" in said and f"pid {proc.pid}" in said
    _assert_untouched_and_forgotten(proc, ops.LocalDownResult(stopped=False, message=""))


def test_spawn_records_the_start_time_and_exact_command_and_down_stops_it(tmp_path):
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text("{}")
    # A stand-in `vllm` package first on PYTHONPATH: the real spawn path runs, the "engine" just sleeps.
    fake = tmp_path / "site" / "vllm" / "entrypoints" / "openai"
    fake.mkdir(parents=True)
    for package in (fake, fake.parent, fake.parent.parent):  # regular packages: found before the real vllm
        (package / "__init__.py").write_text("")
    (fake / "api_server.py").write_text("import time\ntime.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    state = engine.spawn(model, served_model_name="m", port=_free_port(), env=env)
    try:
        assert state.argv[:3] == [sys.executable, "-m", engine.ENTRYPOINT]
        if os.path.exists("/proc/self/stat"):
            boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            assert state.process_start == process_start(state.pid)
            assert state.process_start is not None and state.process_start.startswith(boot + ":")
        assert engine.is_running(state)
        write_state(state)
        assert ops.down(timeout=5).stopped
        assert not pid_alive(state.pid)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(state.pid, signal.SIGKILL)


def test_an_unreaped_child_counts_as_dead():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    time.sleep(1.0)  # exited, not waited for: a zombie
    assert not pid_alive(proc.pid)


def test_status_json_shape_when_stopped():
    result = CliRunner().invoke(app, ["local", "status", "--json"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["status"] == "stopped" and data["pid"] is None
    assert set(data) >= {"status", "url", "pid", "port", "model", "model_dir", "uptime_s", "log_path", "argv"}


# --- starting ---------------------------------------------------------------------------------------


def test_port_in_use_is_a_clear_error():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(LocalEngineError, match=f"Port {port} .* already in use"):
            engine.check_port_free(port)
        with pytest.raises(LocalEngineError, match="already in use"):
            ops.up(port=port)  # before anything is spawned
    assert read_state() is None


def test_missing_model_directory_is_a_clear_error(tmp_path):
    with pytest.raises(LocalEngineError, match="does not exist"):
        ops.up(model_dir=tmp_path / "nope", port=_free_port())
    (tmp_path / "empty").mkdir()
    with pytest.raises(LocalEngineError, match="no config.json"):
        ops.up(model_dir=tmp_path / "empty", port=_free_port())


@pytest.mark.parametrize("flag", ["--port", "--host=0.0.0.0", "--served-model-name", "--model"])
def test_flags_inferctl_owns_cannot_be_passed_through(flag):
    with pytest.raises(ConfigError, match="use inferctl's own option"):
        ops.up(extra_args=[flag, "1"])


def test_argv_is_a_list_using_this_interpreter():
    argv = engine.build_argv("/m", served_model_name="n", port=9, extra_args=["--enforce-eager"])
    assert argv[:3] == [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]
    assert argv[argv.index("--host") + 1] == "127.0.0.1"
    assert argv[-1] == "--enforce-eager"


def test_engine_env_defaults_and_overrides():
    env = engine.engine_env(base={})
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1" and env["PYTHONUNBUFFERED"] == "1"
    assert engine.engine_env(base={"VLLM_CPU_KVCACHE_SPACE": "4"})["VLLM_CPU_KVCACHE_SPACE"] == "4"
    # The variable would override the flag inside vLLM, so it is not set next to it.
    assert "VLLM_CPU_KVCACHE_SPACE" not in engine.engine_env(["--kv-cache-memory-bytes", "1e9"], base={})


def test_engine_that_dies_during_startup_raises_with_log_tail(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("".join(f"line {i}\n" for i in range(40)) + "ValueError: unsupported model\n")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    with pytest.raises(LocalEngineError) as info:
        engine.wait_ready(_state(proc, log_path=str(log)), timeout=5)
    message = str(info.value)
    assert "exited during startup" in message and "ValueError: unsupported model" in message
    assert "line 21" in message and "line 20" not in message  # the last 20 lines


def test_wait_ready_reports_progress_and_times_out_while_alive(tmp_path):
    log = tmp_path / "engine.log"
    log.write_text("Loading weights\n\nWarming up model\n")
    proc = _spawn_fake_engine()
    seen: list[str] = []
    try:
        with pytest.raises(LocalEngineError, match="did not answer /health"):
            engine.wait_ready(_state(proc, port=_free_port(), log_path=str(log)), timeout=1,
                              on_progress=seen.append, poll_interval=0.2)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert seen and seen[-1] == "Warming up model"


# --- stopping ---------------------------------------------------------------------------------------


def test_terminate_stops_the_whole_process_group():
    # The "engine" forks a child, as vLLM forks its EngineCore; both must go.
    script = (
        "import subprocess, sys, time\n"
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "time.sleep(120)\n"
    )
    proc = _spawn_fake_engine(script)
    time.sleep(1.0)
    state = _state(proc)
    assert engine.is_running(state)
    engine.terminate(state, timeout=10)
    assert not engine._group_alive(proc.pid, proc.pid)
    assert not pid_alive(proc.pid)


def test_terminate_escalates_to_sigkill():
    script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(120)\n"
    proc = _spawn_fake_engine(script)
    time.sleep(1.0)
    t0 = time.monotonic()
    engine.terminate(_state(proc), timeout=1)
    assert 1 <= time.monotonic() - t0 < 10  # waited out the SIGTERM grace period, then killed
    assert not pid_alive(proc.pid)


def test_down_stops_a_recorded_engine_and_clears_state():
    proc = _spawn_fake_engine()
    write_state(_state(proc))
    assert ops.status().status == "starting"  # alive, but nothing answers /health
    result = ops.down(timeout=10)
    assert result.stopped and result.pid == proc.pid
    assert read_state() is None and proc.poll() is not None
    assert ops.down().stopped is False  # idempotent


# --- logs -------------------------------------------------------------------------------------------


def test_log_tail_reads_the_end_and_keeps_the_last_progress_update(tmp_path):
    log = tmp_path / "x.log"
    body = "".join(f"{i:05d} " + "x" * 100 + "\n" for i in range(2000))
    log.write_text(body + "Loading: 10%\rLoading: 50%\rLoading: 100%\n")
    tail = engine.log_tail(log, 3)
    assert tail[0].startswith("01998") and tail[-1] == "Loading: 100%"
    assert engine.log_tail(tmp_path / "missing.log") == []


def test_logs_fall_back_to_the_latest_log_after_a_failed_start():
    logs_dir = engine.log_dir()
    logs_dir.mkdir(parents=True)
    (logs_dir / "engine-1.log").write_text("old\n")
    time.sleep(0.01)
    (logs_dir / "engine-2.log").write_text("a\nb\nboom\n")
    os.utime(logs_dir / "engine-1.log", (1, 1))
    result = ops.logs(lines=2)
    assert result.log_path.endswith("engine-2.log") and result.lines == ["b", "boom"]
    cli = CliRunner().invoke(app, ["local", "logs", "-n", "1"])
    assert cli.exit_code == 0 and cli.output == "boom\n"


def test_logs_without_any_engine_is_a_clear_error():
    result = CliRunner().invoke(app, ["local", "logs"])
    assert result.exit_code != 0 and "No local engine log yet" in result.output
