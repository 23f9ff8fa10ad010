"""Reading JSON a server sent without trusting its shape.

A server we did not write may send anything: a number where an object belongs, a string where a
count belongs, JSON nested ten thousand deep. These helpers decode and read such replies so that every
surprise is a ``ShapeError`` (a ``ValueError``) whose text says where and what was wrong, e.g.
``choices[0] is a number (5), not an object``; the caller adds which endpoint sent it.
"""

from __future__ import annotations

import json
from typing import Any


class ShapeError(ValueError):
    """A reply that is JSON but not the documented shape (or JSON nested too deeply to read)."""


def loads(data: str | bytes) -> Any:
    """``json.loads`` that reports absurd nesting as a ``ShapeError`` instead of a ``RecursionError``."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ShapeError("the JSON is nested too deeply to read") from None


def kind(value: Any) -> str:
    """The JSON name of a value's type, with an article: 'a number', 'an object'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def describe(value: Any) -> str:
    """'a number (5)': the kind, and the value itself when it is a short scalar."""
    if isinstance(value, bool | int | float | str):
        text = repr(value)
        return f"{kind(value)} ({text[:40]}{'…' if len(text) > 40 else ''})"
    return kind(value)


def _wrong(value: Any, where: str, wanted: str) -> ShapeError:
    return ShapeError(f"{where} is {describe(value)}, not {wanted}")


def obj(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _wrong(value, where, "an object")
    return value


def lst(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _wrong(value, where, "a list")
    return value


def opt_str(value: Any, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise _wrong(value, where, "a string")
    return value


def opt_int(value: Any, where: str) -> int | None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise _wrong(value, where, "an integer")
    return value


def ints(value: Any, where: str) -> list[int]:
    """A list of integers (token ids)."""
    items = lst(value, where)
    for i, v in enumerate(items):
        opt_int(v, f"{where}[{i}]")
        if v is None:
            raise _wrong(v, f"{where}[{i}]", "an integer")
    return items
