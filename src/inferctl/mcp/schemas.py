"""Output schemas as tools/list publishes them: the same validation in fewer bytes (issue 14.6).

pydantic's JSON schemas carry annotations that validate nothing: a ``title`` on every property (its name again,
capitalised) and ``default`` values (results always carry every field). ``compact`` drops both and writes an
optional field as ``{"type": ["string", "null"]}`` instead of ``{"anyOf": [{"type": "string"}, {"type": "null"}]}``.
Every instance valid under the original schema is valid under the compact one and the other way round; property
names are data, never dropped (a field called ``title`` or ``default`` stays).
"""

from __future__ import annotations

from typing import Any

ANNOTATIONS = ("title", "default")
_NAME_MAPS = ("properties", "patternProperties", "$defs", "definitions")
# keywords that only constrain one instance type, so they can sit beside a "null" type without changing its meaning
_TYPE_SCOPED = {"type", "items", "prefixItems", "additionalProperties", "properties", "required", "format",
                "minItems", "maxItems", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
                "maxLength", "pattern", "description"}


def compact_output(schema: dict[str, Any]) -> dict[str, Any]:
    """A tool's output schema compacted; the root keeps its title, the result type's name."""
    out = compact(schema)
    return {"title": schema["title"], **out} if "title" in schema else out


def compact(schema: Any) -> Any:
    """``schema`` without annotation keywords, optional fields as type lists."""
    if isinstance(schema, list):
        return [compact(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ANNOTATIONS:
            continue
        if key in _NAME_MAPS and isinstance(value, dict):
            out[key] = {name: compact(sub) for name, sub in value.items()}
        else:
            out[key] = compact(value)
    return _nullable(out)


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
