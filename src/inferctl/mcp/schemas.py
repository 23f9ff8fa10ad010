"""Tool schemas as tools/list publishes them: fewer bytes (issue 14.6). Input schemas only lose property titles
(``compact_input``); output schemas are made shallow, then compact.

pydantic's JSON schemas carry annotations that validate nothing: a ``title`` on every property (its name again,
capitalised) and ``default`` values (results always carry every field). ``compact`` drops both and writes an
optional field as ``{"type": ["string", "null"]}`` instead of ``{"anyOf": [{"type": "string"}, {"type": "null"}]}``.
Every instance valid under the original schema is valid under the compact one and the other way round; property
names are data, never dropped (a field called ``title`` or ``default`` stays).

``shallow`` first describes a result only ``DEPTH`` models deep: with 0, the result's own fields are spelled out
(names, types, descriptions) and a model they hold is published as ``{"type": "object"}`` with that model's
docstring. The answer still carries every nested field (structured content is the whole pydantic model); only the
list an agent reads before every call gets shorter (issue 14.6: 139 KB -> 59 KB with --allow-write). Every answer
valid before is valid after; nested objects are no longer checked field by field, which a result built by its
pydantic model never needs. Enums stay spelled out.
"""

from __future__ import annotations

from typing import Any

ANNOTATIONS = ("title", "default")
_NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions")
# keywords that only constrain one instance type, so they can sit beside a "null" type without changing its meaning
_TYPE_SCOPED = {"type", "items", "prefixItems", "additionalProperties", "properties", "required", "format",
                "minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                "maxLength", "pattern", "description"}


DEPTH = 0  # models below the result spelled out in a published output schema (1: 104 KB, 0: 59 KB)


def compact_output(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's output schema compacted and made shallow; the root keeps its title, the result type's name."""
    out = compact(shallow(schema))
    return {"title": schema["title"], **out} if "title" in schema else out


def shallow(schema: dict[str, Any], depth: int = DEPTH) -> dict[str, Any]:
    """``schema`` with each ``$ref`` more than ``depth`` models below the root replaced by ``{"type": "object"}``
    (and the model's description), and the ``$defs`` no longer referenced dropped."""
    defs = schema.get("$defs", {})
    kept: dict[str, Any] = {}

    def walk(node: Any, level: int) -> Any:
        if isinstance(node, list):
            return [walk(x, level) for x in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/") and ref[8:] in defs:
            name = ref[8:]
            if level >= depth and defs[name].get("type") == "object":  # an enum stays spelled out
                rest = {k: v for k, v in node.items() if k != "$ref"}
                described = {"description": defs[name]["description"]} if "description" in defs[name] else {}
                return {"type": "object", **described, **rest}
            if name not in kept:
                kept[name] = None  # a recursive model refers to itself: walk it once
                kept[name] = walk(defs[name], level + 1)
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "$defs":
                continue
            if key in ("properties", "patternProperties") and isinstance(value, dict):
                out[key] = {name: walk(sub, level) for name, sub in value.items()}  # names are data
            else:
                out[key] = walk(value, level)
        return out

    root = walk(schema, 0)
    if kept:
        root["$defs"] = kept
    return root


def compact_input(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's input schema with its property titles dropped (the name again); every ``default`` stays (it says
    what an omitted argument means) and optional arguments keep their ``anyOf`` (some function-calling clients read
    no type lists). Validation is the same."""
    out = compact(schema, drop=("title",), nullable=False)
    return {"title": schema["title"], **out} if "title" in schema else out


def compact(schema: Any, drop: tuple[str, ...] = ANNOTATIONS, nullable: bool = True) -> Any:
    """``schema`` without annotation keywords (``drop``), optional fields as type lists (``nullable``)."""
    if isinstance(schema, list):
        return [compact(x, drop, nullable) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in drop:
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: compact(sub, drop, nullable) for name, sub in value.items()}
        else:
            out[key] = compact(value, drop, nullable)
    return _nullable(out) if nullable else out


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    options = node.get("anyOf")
    if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
        return node
    other = options[0] if options[1] == {"type": "null"} else options[1]
    if not (isinstance(other.get("type"), str) and set(other) <= _TYPE_SCOPED):
        return node  # a $ref or an enum: the anyOf stays
    rest = {k: v for k, v in node.items() if k != "anyOf"}
    if set(rest) & set(other) - {"description"}:
        return node
    return {**other, **rest, "type": [other["type"], "null"]}
