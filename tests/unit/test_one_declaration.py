"""One declaration per parameter (issue 10.4): a parameter the CLI and an MCP tool share has the same name,
default, bounds and help text on both faces. Both are introspected as users meet them: the click command Typer
builds, and the input schema the MCP server lists."""

from __future__ import annotations

import pytest
import typer
from tests.unit.mcp.conftest import client
from typer.testing import CliRunner

from inferctl import params as P
from inferctl.cli.app import app

pytestmark = pytest.mark.anyio

# (CLI command path, MCP tool, the parameters they share). Listed, so the test cannot pass by sharing nothing.
CONFIG = {"model", "accelerator", "count", "quant", "kv_dtype", "max_model_len", "speculative", "price_per_hour",
          "profile"}
PAIRS = [
    (("plan",), "plan_serving", CONFIG | {"context", "output_tokens"}),
    (("simulate",), "simulate_sweep", CONFIG | {"output_tokens"}),
    (("bench", "sweep"), "start_benchmark", {"model", "output_tokens", "requests_per_cell", "api", "slos", "resume"}),
]
# Same name, deliberately different meaning: `--target` is a name (a URL goes to --url) where the tool's target
# is a name or a URL; the CLI's --preset defaults to none (the flags give the grid), the tool's to quick;
# `plan --workload` is a TOML file, plan_serving's workload the same table as a JSON object.
NOT_SHARED = {"target", "preset", "workload"}


def _command(path: tuple[str, ...]):
    """The command Typer builds (Typer's own click-like classes: an option carries min/max itself)."""
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def _cli(param) -> dict:
    lo, hi = getattr(param, "min", None), getattr(param, "max", None)
    default = param.default
    if isinstance(default, tuple | list) and not default:
        default = None  # a repeatable flag's "none given"
    return {"default": default, "min": lo, "max": hi, "help": getattr(param, "help", None)}


def _mcp(schema: dict) -> dict:
    arms = [schema, *schema.get("anyOf", [])]
    pick = lambda key: next((a[key] for a in arms if key in a), None)  # noqa: E731
    return {"default": schema.get("default"), "min": pick("minimum"), "max": pick("maximum"),
            "help": schema.get("description")}


async def _schemas() -> dict[str, dict]:
    async with client(allow_write=True) as c:
        return {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}


@pytest.mark.parametrize(("path", "tool", "shared"), PAIRS, ids=[t for _, t, _ in PAIRS])
async def test_cli_option_and_mcp_argument_agree(path, tool, shared):
    cli = {p.name: p for p in _command(path).params}
    mcp = (await _schemas())[tool]
    assert set(cli) & set(mcp) - NOT_SHARED == shared
    for name in sorted(shared):
        assert _cli(cli[name]) == _mcp(mcp[name]), f"{' '.join(path)} {name} vs {tool}({name})"


def test_cli_bounds_come_from_the_declaration():
    count = next(p for p in _command(("plan",)).params if p.name == "count")
    assert (count.min, count.max, count.help) == (P.COUNT.ge, P.COUNT.le, P.COUNT.help)
    result = CliRunner().invoke(app, ["plan", "gemma-4-12b", "--count", str(P.COUNT.le + 1)])
    assert result.exit_code != 0 and "--count" in result.output


def test_an_older_flag_stays_an_alias():
    """requests_per_cell is the tool's name, and the CLI takes it too, next to `--requests` and `-n`."""
    requests = next(p for p in _command(("bench", "sweep")).params if p.name == "requests_per_cell")
    assert {"--requests-per-cell", "--requests", "-n"} <= set(requests.opts)


def test_a_soak_of_a_million_requests_is_a_valid_cell():
    """benchmarks/soak.py runs one cell of 1,000,000 requests: the shared bound must allow it on both faces."""
    from inferctl.params import REQUESTS_PER_CELL

    assert REQUESTS_PER_CELL.le is not None and REQUESTS_PER_CELL.le >= 1_000_000
