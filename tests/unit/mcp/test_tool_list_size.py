"""The size of tools/list (issue 14.6): measured on the wire format with every tool listed (--allow-write), bounded
so it cannot grow back unnoticed; output schemas are published compact (no titles or defaults, optional fields as
type lists) with the same validation, and shallow (a nested model as an object with its description)."""

from __future__ import annotations

import jsonschema
import pytest
from tests.unit.mcp.conftest import client

from inferctl.mcp.schemas import compact, compact_input, compact_output, shallow

pytestmark = pytest.mark.anyio

# bytes; 154 KB before compaction (issue 14.6), 122 KB after; +9 KB plan_serving's fleet (issue 12), +8 KB
# provenance (issue 11.5), +7 KB describe_deployment's list of deployments (issue 15); 147 KB -> under 60 KB with
# shallow output schemas (nested models published as objects) and input schemas without property titles
BOUND = 60_000
GOAL = 60_000  # the issue's target


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
    small = {"title": SCHEMA["title"], **compact(SCHEMA)}  # compact alone; compact_output also makes it shallow
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


NESTED = {
    "title": "Outer",
    "type": "object",
    "properties": {
        "child": {"$ref": "#/$defs/Child", "description": "The child."},
        "maybe": {"anyOf": [{"$ref": "#/$defs/Child"}, {"type": "null"}]},
        "kids": {"type": "array", "items": {"$ref": "#/$defs/Child"}},
        "phase": {"$ref": "#/$defs/Phase"},
        "$defs": {"type": "integer"},  # a field named like the keyword is data
    },
    "required": ["child", "phase"],
    "$defs": {
        "Child": {"title": "Child", "description": "A child.", "type": "object",
                  "properties": {"n": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#/$defs/Child"},
                                                                              {"type": "null"}]}},
                  "required": ["n"]},
        "Phase": {"title": "Phase", "enum": ["a", "b"], "type": "string"},
    },
}
NESTED_VALID = [{"child": {"n": 1}, "phase": "a"},
                {"child": {"n": 1, "next": {"n": 2}}, "maybe": None, "kids": [{"n": 3}], "phase": "b", "$defs": 4}]
NESTED_INVALID_BOTH = [{"child": {"n": 1}}, {"child": 3, "phase": "a"}, {"child": {"n": 1}, "phase": "c"},
                       {"child": {"n": 1}, "phase": "a", "kids": [5]}, {"child": {"n": 1}, "phase": "a", "$defs": "x"}]


def test_shallow_schema_accepts_every_answer_the_full_one_does():
    small = compact_output(NESTED)
    assert small["properties"]["child"] == {"type": "object", "description": "The child."}
    assert small["properties"]["maybe"] == {"type": ["object", "null"], "description": "A child."}
    assert small["properties"]["kids"]["items"] == {"type": "object", "description": "A child."}
    assert small["$defs"] == {"Phase": {"enum": ["a", "b"], "type": "string"}}  # enums stay; Child is gone
    assert small["properties"]["$defs"] == {"type": "integer"}
    assert shallow(NESTED, depth=1)["$defs"]["Child"]["properties"]["next"]["anyOf"][0]["type"] == "object"
    for instance in NESTED_VALID:
        jsonschema.validate(instance, NESTED)
        jsonschema.validate(instance, small)
    for instance in NESTED_INVALID_BOTH:
        for schema in (NESTED, small):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(instance, schema)
    jsonschema.validate({"child": {"n": "deep levels are not checked"}, "phase": "a"}, small)


def test_compact_input_schema_drops_titles_only():
    small = compact_input(SCHEMA)
    assert small["title"] == "Result" and "title" not in small["properties"]["note"]
    assert small["properties"]["default"]["default"] == 3  # what an omitted argument means stays
    assert "anyOf" in small["properties"]["note"]  # no type lists in inputs: some function-calling clients lack them
    assert set(small["properties"]) == set(SCHEMA["properties"])  # a field named "title" stays
    for instance in VALID:
        jsonschema.validate(instance, small)
    for instance in INVALID:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(instance, small)
