"""Bad URLs and numbers are refused at parse time with the allowed range (issue 17, item 6).

Nothing here may reach a server or write a run directory: every case fails before either.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from inferctl.bench.spec import MAX_LIST_VALUES, parse_float_list, parse_int_list, spec_from_flags
from inferctl.cli.app import app
from inferctl.errors import ConfigError

# Port 9 (discard) on loopback: never contacted, because every command below fails while parsing.
URL = "http://127.0.0.1:9"


pytestmark = pytest.mark.usefixtures("isolated")  # tests/unit/conftest.py


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def assert_one_line_error(result, *patterns: str) -> None:
    assert result.exit_code not in (0, None), result.output
    assert "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1, err
    for p in patterns:
        assert p in err, err


def assert_usage_error(result, option: str, bound: str) -> None:
    """Click's own refusal: exit 2, naming the option and the bound."""
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert f"Invalid value for '{option}'" in text and bound in text, text


def no_runs(tmp_path) -> bool:
    runs = tmp_path / "runs"
    return not runs.exists() or not any(runs.iterdir())


# -- URLs -------------------------------------------------------------------------------------------------

BAD_URLS = {
    "http://[::1": "Invalid IPv6 URL",
    "http://127.0.0.1:99999": "Port out of range",
    "http://127.0.0.1:abc": "Port could not be cast",
    "http://:8000": "no host",
    "http://127.0.0.1:0": "port 0",
}


@pytest.mark.parametrize("url", sorted(BAD_URLS))
@pytest.mark.parametrize("command", [["models"], ["status"], ["query", "hi"], ["bench", "sweep", "--preset", "quick"]])
def test_bad_url_is_one_sentence(url, command, tmp_path):
    result = invoke(*command, "--url", url)
    assert_one_line_error(result, "Invalid target", BAD_URLS[url])
    assert no_runs(tmp_path)


def test_bad_url_does_not_echo_credentials():
    result = invoke("models", "--url", "http://user:s3cret@[::1")
    assert_one_line_error(result, "Invalid IPv6 URL")
    assert "s3cret" not in result.output


# -- ranges ----------------------------------------------------------------------------------------------


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in its own process, so an endless loop fails the test instead of hanging it."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-c", "from inferctl.cli.app import main; main()", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("command", [["simulate", "gemma-4-12b"], ["bench", "sweep", "--url", URL]])
def test_range_from_zero_is_refused_not_an_endless_loop(command, tmp_path):
    proc = _cli(*command, "-c", "0..4", "--context", "128", timeout=60)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "error: Bad --concurrency '0..4': a doubling range starts at 1 or more (got 0)."]
    assert no_runs(tmp_path)


@pytest.mark.parametrize(("text", "message"), [
    ("0..4", "starts at 1 or more (got 0)"),
    ("-4..4", "starts at 1 or more (got -4)"),
    ("8..2", "ends below its start"),
    ("1,0,4", "at least 1 (got 0)"),
    ("1,-2", "at least 1 (got -2)"),
    ("1..a", "comma list like 1,2,4"),
    ("1.." + "9" * 300, "at most 10,000,000 (got a 300-digit number)"),
    ("1..20000000", "at most 10,000,000 (got 20000000)"),
    ("1,20000000", "at most 10,000,000"),
    (",".join(["1"] * (MAX_LIST_VALUES + 1)), f"more than the {MAX_LIST_VALUES}"),
])
def test_int_list_refusals(text, message):
    with pytest.raises(ConfigError, match="Bad --concurrency") as info:
        parse_int_list(text, "--concurrency")
    assert message in str(info.value)
    assert len(str(info.value)) < 300  # a 400-digit range is not echoed whole


def test_int_list_ranges_still_double():
    assert parse_int_list("1..64", "-c") == [1, 2, 4, 8, 16, 32, 64]
    assert parse_int_list("3..64", "-c") == [3, 6, 12, 24, 48]
    assert parse_int_list("5..5", "-c") == [5]
    assert parse_int_list("1..2048", "-c") == [2**i for i in range(12)]
    assert parse_int_list("1,2,4", "-c") == [1, 2, 4]


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "1,-0.5", "1e7"])
def test_float_list_refusals(text):
    with pytest.raises(ConfigError, match="more than 0 and at most"):
        parse_float_list(text, "--rate")


def test_absurd_range_is_one_sentence_on_the_cli(tmp_path):
    result = invoke("simulate", "gemma-4-12b", "-c", "1.." + "9" * 300, "--context", "128")
    assert_one_line_error(result, "Bad --concurrency", "at most 10,000,000")
    assert no_runs(tmp_path)
    result = invoke("simulate", "gemma-4-12b", "-c", ",".join(["1"] * 2000), "--context", "128")
    assert_one_line_error(result, "Bad --concurrency", f"2000 values is more than the {MAX_LIST_VALUES}")
    assert no_runs(tmp_path)


# -- negative counts and times -----------------------------------------------------------------------------

NEGATIVE = [
    ("--requests", "-5", "greater than or equal to 1"),
    ("--requests", "0", "greater than or equal to 1"),
    ("--warmup", "-1", "greater than or equal to 0"),
    ("--timeout", "-3", "greater than or equal to 0"),
    ("--duration", "-2", "greater than or equal to 0"),
    ("--output-tokens", "0", "greater than or equal to 1"),
    ("--max-concurrency", "0", "greater than or equal to 1"),
    ("--shared-prefix", "-1", "greater than or equal to 0"),
    ("--error-threshold", "2", "less than or equal to 1"),
]


@pytest.mark.parametrize(("option", "value", "bound"), NEGATIVE)
def test_bench_sweep_refuses_out_of_range_numbers(option, value, bound, tmp_path):
    result = invoke("bench", "sweep", "--url", URL, "--preset", "quick", option, value)
    assert_usage_error(result, option, bound)
    assert no_runs(tmp_path)


@pytest.mark.parametrize(("option", "value", "bound"), [n for n in NEGATIVE if n[0] not in ("--error-threshold",)])
def test_bench_run_refuses_out_of_range_numbers(option, value, bound, tmp_path):
    result = invoke("bench", "run", "--url", URL, option, value)
    assert_usage_error(result, option, bound)
    assert no_runs(tmp_path)


@pytest.mark.parametrize(("option", "value", "bound"), [n for n in NEGATIVE if n[0] in
                                                        ("--requests", "--warmup", "--output-tokens")])
def test_simulate_refuses_out_of_range_numbers(option, value, bound, tmp_path):
    result = invoke("simulate", "gemma-4-12b", "-c", "1", "--context", "128", option, value)
    assert_usage_error(result, option, bound)
    assert no_runs(tmp_path)


def test_zero_timeout_is_one_sentence(tmp_path):
    result = invoke("bench", "sweep", "--url", URL, "--preset", "quick", "--timeout", "0")
    assert_one_line_error(result, "--timeout must be more than 0 seconds")
    assert no_runs(tmp_path)


@pytest.mark.parametrize(("flags", "message"), [
    ({"requests": -5}, "--requests must be at least 1"),
    ({"warmup": -1}, "--warmup must be 0 or more"),
    ({"duration": -2.0}, "--duration must be 0 or more"),
    ({"timeout": 0.0}, "--timeout must be more than 0"),
    ({"max_concurrency": 0}, "--max-concurrency must be at least 1"),
    ({"shared_prefix": -1}, "--shared-prefix must be 0 or more"),
])
def test_spec_from_flags_refuses_what_the_mcp_face_could_send(flags, message):
    """The MCP tools build sweeps through spec_from_flags too; its own checks hold without Typer's."""
    with pytest.raises(ConfigError, match=message):
        spec_from_flags(preset="quick", **flags)


@pytest.mark.parametrize("port", ["0", "70000"])
def test_sim_serve_port_is_bounded(port):
    proc = _cli("sim", "serve", "gemma-4-12b", "--port", port, timeout=60)  # a regression would serve forever
    assert proc.returncode == 2, proc.stderr
    assert "Invalid value for '--port'" in proc.stderr and "Traceback" not in proc.stderr
