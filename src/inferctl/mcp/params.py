"""MCP argument types from the shared parameter declarations (``inferctl.params``): description and bounds."""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import Field

from inferctl.params import Param


def arg(p: Param) -> Any:
    """``Annotated[type, Field(...)]`` for ``p``: choices as a Literal, bounds as ge/le, string limits kept."""
    optional = get_origin(p.type) in (Union, types.UnionType) and type(None) in get_args(p.type)
    t: Any = p.type
    if p.choices:
        t = Literal[p.choices]  # type: ignore[valid-type]
        t = t | None if optional else t
    elif p.item_max_length is not None:
        t = list[Annotated[str, Field(max_length=p.item_max_length)]]
        t = t | None if optional else t
    limits = {"ge": p.ge, "le": p.le, "min_length": p.min_length, "max_length": p.max_length, "pattern": p.pattern}
    kw = {k: v for k, v in limits.items() if v is not None}
    return Annotated[t, Field(description=p.help, **kw)]
