"""The tool surface: few tools, every one annotated truthfully, writes hidden unless --allow-write."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from tests.unit.mcp.conftest import client

from inferctl.mcp.server import all_tools

pytestmark = pytest.mark.anyio
SNAPSHOT = Path(__file__).with_name("tool_schemas.json")


async def listed(allow_write: bool):
    async with client(allow_write=allow_write) as c:
        return (await c.list_tools()).tools


async def test_read_only_by_default_write_tools_hidden():
    read_only = {t.name for t in await listed(False)}
    everything = {t.name for t in await listed(True)}
    writes = {s.name for s in all_tools() if s.access != "read"}
    assert writes and not writes & read_only
    assert everything == read_only | writes
    assert {"deploy", "destroy_deployment", "scale_deployment", "set_hf_token", "start_benchmark",
            "manage_local_engine"} <= writes


async def test_every_tool_sets_every_annotation_truthfully():
    specs = {s.name: s for s in all_tools()}
    for tool in await listed(True):
        a = tool.annotations
        assert a is not None, tool.name
        hints = (a.read_only_hint, a.destructive_hint, a.idempotent_hint, a.open_world_hint)
        assert None not in hints, f"{tool.name} leaves a hint unset: {a}"
        spec = specs[tool.name]
        if spec.access != "read":
            assert a.read_only_hint is False, tool.name
        assert a.destructive_hint is (spec.access == "destructive"), tool.name
        if a.read_only_hint:
            assert spec.access == "read", tool.name
        assert a.title, tool.name


async def test_few_snake_case_tools_with_documented_parameters():
    tools = await listed(True)
    assert len(tools) <= 25
    for tool in tools:
        assert re.fullmatch(r"[a-z]+(_[a-z]+)*", tool.name), tool.name
        assert tool.description and len(tool.description) > 60, tool.name
        assert tool.output_schema is not None, f"{tool.name} has no structured output"
        for name, prop in tool.input_schema.get("properties", {}).items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"


async def test_tool_names_and_schemas_match_the_snapshot():
    """A changed tool surface is a deliberate act: regenerate with INFERCTL_UPDATE_SNAPSHOTS=1.

    Outputs are pinned by title and top-level fields (a field added to a result, such as a prediction's
    ``provenance``, changes what agents read); the full output schemas would make every docstring edit a diff.
    """
    tools = await listed(True)
    current = {t.name: {"annotations": t.annotations.model_dump(mode="json", by_alias=True, exclude_none=True),
                        "input_schema": t.input_schema, "output_schema_title": (t.output_schema or {}).get("title"),
                        "output_fields": sorted((t.output_schema or {}).get("properties", {}))}
               for t in sorted(tools, key=lambda t: t.name)}
    if os.environ.get("INFERCTL_UPDATE_SNAPSHOTS") == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert current == json.loads(SNAPSHOT.read_text(encoding="utf-8"))


async def test_write_tool_refuses_on_a_read_only_server_even_when_called_directly():
    """Defence in depth: the tool body checks the policy too (annotations are only hints)."""
    from mcp.server.mcpserver.exceptions import ToolError

    from inferctl.mcp.policy import Policy

    with pytest.raises(ToolError, match="read-only.*--allow-write"):
        Policy(allow_write=False).require("write", "deploy")


async def test_instructions_say_the_mode():
    async with client(allow_write=False) as c:
        assert "read-only" in (c.instructions or "")
