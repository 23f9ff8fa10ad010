"""The size of tools/list (issue 14.6): measured on the wire format with every tool listed (--allow-write), bounded
so it cannot grow back unnoticed; output schemas are published compact (no titles or defaults, optional fields as
type lists) with the same validation."""

from __future__ import annotations

import jsonschema
import pytest
from tests.unit.mcp.conftest import client

from inferctl.mcp.schemas import compact, compact_output

pytestmark = pytest.mark.anyio

# bytes; 154 KB before compaction (issue 14.6), 122 KB after; +9 KB plan_serving's fleet (issue 12), +8 KB
# provenance (issue 11.5), +7 KB describe_deployment's list of deployments (issue 15)
BOUND = 148_000
GOAL = 60_000  # the issue's target: needs shallower output models, not only compact schemas


async def wire_size() -> tuple[int, dict[str, int]]:
    async with client(allow_write=True) as c:
        res = await c.list_tools()
    from mcp.types import ListToolsResult

    body = ListToolsResult(tools=res.tools).model_dump_json(by_alias=True, exclude_none=True)
    per_tool = {t.name: len(t.model_dump_json(by_alias=True, exclude_none=True)) for t in res.tools}
    return len(body.encode()), per_tool


async def test_tool_list_stays_within_its_bound():
    size, per_tool = await wire_size()
    assert len(per_tool) == 25
    assert size <= BOUND, f"tools/list is {size:,} bytes (bound {BOUND:,}); largest: " + ", ".join(
        f"{n} {s:,}" for n, s in sorted(per_tool.items(), key=lambda x: -x[1])[:5])


@pytest.mark.xfail(strict=True, reason="issue 14.6 remainder: get_model_info, describe_deployment, get_metrics and "
                   "plan_serving publish deep output models (13, 13, 12 and 11 KB); under 60 KB needs shallower "
                   "output models")
async def test_tool_list_under_the_issues_goal():
    size, _ = await wire_size()
    assert size <= GOAL


async def test_published_output_schemas_carry_no_annotations_but_keep_the_result_type():
    async with client(allow_write=True) as c:
        res = await c.list_tools()
    for tool in res.tools:
        text = tool.model_dump_json(by_alias=True, exclude_none=True)
        assert tool.output_schema and tool.output_schema.get("title"), tool.name  # the result type's name
        assert '"default":' not in text.split('"outputSchema"', 1)[1], tool.name


SCHEMA = {
    "title": "Result",
    "type": "object",
    "properties": {
        "title": {"title": "Title", "type": "string"},  # a field named like the keyword stays
        "default": {"title": "Default", "default": 3, "type": "integer"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Note",
                 "description": "Why."},
        "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}], "title": "Tags"},
        "phase": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}], "title": "Phase"},
        "child": {"anyOf": [{"$ref": "#/$defs/Child"}, {"type": "null"}]},
    },
    "required": ["title", "default"],
    "$defs": {"Child": {"title": "Child", "type": "object", "properties": {"n": {"title": "N", "type": "integer"}},
                        "required": ["n"]}},
}
VALID = [{"title": "x", "default": 1}, {"title": "x", "default": 1, "note": None, "tags": None, "phase": None,
                                         "child": None},
         {"title": "x", "default": 1, "note": "n", "tags": ["a"], "phase": "a", "child": {"n": 2}}]
INVALID = [{"title": "x"}, {"title": 1, "default": 1}, {"title": "x", "default": 1, "note": 3},
           {"title": "x", "default": 1, "tags": [1]}, {"title": "x", "default": 1, "phase": "c"},
           {"title": "x", "default": 1, "child": {"n": "two"}}, {"title": "x", "default": 1, "tags": "a"}]


def test_compact_schema_validates_exactly_like_the_original():
    small = compact_output(SCHEMA)
    assert small["properties"]["note"] == {"type": ["string", "null"], "description": "Why."}
    assert small["properties"]["tags"]["type"] == ["array", "null"]
    assert "anyOf" in small["properties"]["phase"] and "anyOf" in small["properties"]["child"]  # kept as they were
    assert set(small["properties"]) == set(SCHEMA["properties"]) and small["title"] == "Result"
    assert "title" not in small["$defs"]["Child"] and "title" not in compact(SCHEMA)
    for instance in VALID:
        jsonschema.validate(instance, SCHEMA)
        jsonschema.validate(instance, small)
    for instance in INVALID:
        for schema in (SCHEMA, small):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(instance, schema)
