"""Text from a server, a log, a file or the user is data, never Rich markup.

The fake vLLM server serves model ids that are Rich markup (`[/]x` used to crash `status` and
`models` with MarkupError; `[bold]evil` was rendered bold); every command that shows them must print
them verbatim. Output is captured through a terminal-like Rich console (colours on), so a style
that markup turned on would show up as an escape code.
"""

from __future__ import annotations

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM
from typer.testing import CliRunner

from inferctl.cli.app import app

HOSTILE = ["[/]x", "[bold]evil", "[link=http://198.51.100.1]click[/link]", ":thumbs_up: [red]"]
BOLD = "\x1b[1m"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("FORCE_COLOR", "1")  # Rich emits styles even into CliRunner's buffer
    monkeypatch.setenv("COLUMNS", "400")  # one line per row, so ids are not wrapped
    for var in ("INFERCTL_TARGET", "INFERCTL_DEBUG", "NO_COLOR"):
        monkeypatch.delenv(var, raising=False)


def _invoke(*args: str):
    result = CliRunner().invoke(app, list(args))
    return result, result.output + (result.stderr or "")


@pytest.fixture(scope="module")
def hostile_server():
    with FakeVLLM(FakeConfig(model=HOSTILE[0], served=HOSTILE)) as fake:
        yield fake


@pytest.mark.parametrize("command", [["status"], ["models"], ["health"], ["health", "--model", "[bold]evil"]])
def test_markup_in_model_ids_is_printed_verbatim(hostile_server, command):
    result, out = _invoke(*command, "--url", hostile_server.url)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "MarkupError" not in out and "Traceback" not in out
    shown = HOSTILE if command[0] != "health" else [command[-1] if len(command) > 1 else HOSTILE[0]]
    for model_id in shown:
        assert model_id in out, (model_id, out)
    assert f"{BOLD}evil" not in out  # not styled bold either
    assert "👍" not in out  # nor an emoji code replaced


def test_a_server_error_quoting_markup_is_printed_verbatim_by_fail(hostile_server):
    # The server's 404 says: The model `[red]nope[/]` does not exist.  fail() prints that sentence.
    result, out = _invoke("query", "hi", "--url", hostile_server.url, "--model", "[red]nope[/]")
    assert result.exit_code != 0
    err = result.stderr
    assert "[red]nope[/]" in err and "Traceback" not in out, err
    assert "error:" in err


def test_a_sweep_against_a_hostile_model_id_renders(hostile_server, tmp_path):
    result, out = _invoke("bench", "sweep", "--url", hostile_server.url, "--model", "[/]x", "-c", "1",
                          "--context", "32", "--output-tokens", "4", "--requests", "2", "--warmup", "0")
    assert result.exit_code == 0, out
    assert "model [/]x" in out
    result, out = _invoke("runs", "show", "latest")
    assert result.exit_code == 0, out
    assert "model [/]x" in out


def test_text_from_a_log_file_is_printed_verbatim(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("INFO 11-22 02:27:45 [gpu_model_runner.py:1] Starting to load model /models/[/]x...\n"
                   "INFO 11-22 02:27:46 [default_loader.py:2] Loading weights took 1.50 seconds\n")
    result, out = _invoke("memory", "--log", str(log))
    assert result.exit_code == 0, out
    assert "/models/[/]x" in out and "Traceback" not in out
