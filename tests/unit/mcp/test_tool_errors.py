"""Agents fail politely: an unknown argument is refused by name, and tool errors speak the tool's own argument
names, never the CLI's flags."""

from __future__ import annotations

import re

import pytest
from tests.unit.mcp.conftest import client, text

from inferctl.mcp.adapt import speak_tool

pytestmark = pytest.mark.anyio
FLAG = re.compile(r"(?<![\w-])--[a-z]")


async def test_a_misspelled_argument_is_refused_naming_it_and_the_accepted_ones(isolated):
    async with client() as c:
        r = await c.call_tool("plan_serving", {"model": "gemma-4-12b", "acclerator": "h100"})
        assert r.is_error
        msg = text(r)
        assert "'acclerator'" in msg and "accelerator" in msg.split("are:")[1] and "quant" in msg
        ok = await c.call_tool("plan_serving", {"model": "gemma-4-12b", "accelerator": "h100"})
        assert not ok.is_error, text(ok)
        # a tool with a Context parameter: the context is not an argument anyone may pass
        listed = await c.call_tool("list_targets", {"ctx": 1})
        assert listed.is_error and "'ctx'" in text(listed) and "none" in text(listed)
        two = await c.call_tool("list_runs", {"limt": 5, "verbose": True})
        assert two.is_error and "'limt', 'verbose'" in text(two) and "limit" in text(two)


async def test_write_tools_refuse_unknown_arguments_before_acting(isolated):
    async with client(allow_write=True) as c:
        r = await c.call_tool("destroy_deployment", {"profile": "cloudrun-l4-12b-qat", "dryrun": False})
        assert r.is_error and "'dryrun'" in text(r) and "dry_run" in text(r)


BAD_CALLS = [
    ("plan_serving", {"model": "gemma-4-12b", "accelerator": "l4", "count": 64}, "count"),
    ("plan_serving", {"model": "gemma-4-12b", "speculative": "bogus"}, "speculative"),
    ("plan_serving", {"model": "gemma-4-12b", "max_model_len": 1_999_999}, "max_model_len"),
    ("fetch_logs", {"target": "local"}, "local engine has not been started"),
    ("fetch_logs", {"target": "no-such-target"}, "Unknown target"),
    ("analyze_logs", {"target": "local"}, "local engine has not been started"),
]


@pytest.mark.parametrize(("tool", "args", "expect"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in
                                                                      enumerate(BAD_CALLS)])
async def test_tool_errors_name_the_tools_arguments_not_cli_flags(isolated, tool, args, expect):
    async with client() as c:
        r = await c.call_tool(tool, args)
    assert r.is_error
    msg = text(r)
    assert expect in msg
    assert not FLAG.search(msg), msg


def test_speak_tool_maps_flags_and_drops_cli_only_hints():
    params = {"count", "price_per_hour", "min_instances", "max_instances", "slos", "hardware"}
    assert speak_tool("--tp 64 exceeds the 8 devices.", params) == "count 64 exceeds the 8 devices."
    assert speak_tool("pass --hardware or --price-per-hour.", params) == "pass hardware or price_per_hour."
    assert speak_tool("--min/--max instances", params) == "min_instances/max_instances instances"
    assert speak_tool("Bad --slo 'x'.", params) == "Bad slos 'x'."
    assert speak_tool("Not deployed; deploy it first (CLI: `inferctl deploy x --apply`).", params) == \
        "Not deployed; deploy it first."
    assert speak_tool("keep --unknown-flag as is", params) == "keep --unknown-flag as is"


async def test_notes_written_for_the_cli_lose_their_flags_over_mcp(isolated):
    from tests.fakes.fake_vllm import FakeConfig, FakeVLLM

    with FakeVLLM(FakeConfig(model="gemma-4-12b")) as fake:
        async with client() as c:
            info = await c.call_tool("get_model_info", {"target": fake.url})
    assert not info.is_error, text(info)
    note = info.structured_content["memory"]["note"]
    assert "startup log" in note and not FLAG.search(note) and "CLI:" not in note
    assert not FLAG.search(info.content[0].text)
