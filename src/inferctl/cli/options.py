"""Typer options from the shared parameter declarations (``inferctl.params``): flags, help and bounds."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from inferctl.params import Param


def option(p: Param, **extra: Any) -> Any:
    """``Annotated[type, typer.Option(...)]`` for ``p``: its flags and help, its bounds as ``min=``/``max=``."""
    bounds = {k: v for k, v in (("min", p.ge), ("max", p.le)) if v is not None}
    return Annotated[p.type, typer.Option(*p.cli_flags, help=p.help, **bounds, **extra)]


def argument(p: Param) -> Any:
    """``Annotated[type, typer.Argument(...)]`` for ``p`` (a positional; bounds as for an option)."""
    bounds = {k: v for k, v in (("min", p.ge), ("max", p.le)) if v is not None}
    return Annotated[p.type, typer.Argument(help=p.help, show_default=False, **bounds)]
