"""Tables that never cut the identifiers people type next (run id, profile, target, model, cell).

``keep_whole(table, keys)`` marks the key columns (named by header) as unbreakable and lets every other column wrap
or fold. When the key columns cannot all be whole beside the others at the console's width, the rows are printed
as records instead: the first key on its own line, the other columns as ``header value`` pairs on the next (wrapping
between pairs), and every other key column on a line of its own.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group, RenderableType
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Column, Table
from rich.text import Text

FOLD_MIN = 6  # narrowest a non-key column is folded to before the table gives way to records


def _text(cell: RenderableType) -> Text:
    """A cell as the table would print it: a string goes through the console's own markup setting."""
    from inferctl.cli.common import console

    if isinstance(cell, Text):
        return cell
    return console().render_str(cell) if isinstance(cell, str) else Text(str(cell))


def _header(col: Column) -> str:
    return str(col.header).replace("\n", " ")


def keep_whole(table: Table, keys: Iterable[str], width: int | None = None) -> RenderableType:
    """The table with its key columns whole, or the same rows as records when they cannot be whole at ``width``."""
    from inferctl.cli.common import console

    con = console()
    width = width or con.width
    wanted = set(keys)
    key_cols = [c for c in table.columns if _header(c) in wanted]
    wide = con.options.update_width(10_000)
    for col in table.columns:
        col.overflow = "fold"
        if col in key_cols:
            col.no_wrap = True
            col.min_width = max([Measurement.get(con, wide, cell).maximum for cell in col.cells]
                                + [Measurement.get(con, wide, col.header).minimum, 1])
    others = [c for c in table.columns if c not in key_cols]
    saved = [c.max_width for c in others]
    for col in others:
        col.max_width = FOLD_MIN
    needed = Measurement.get(con, wide, table).minimum
    for col, max_width in zip(others, saved, strict=True):
        col.max_width = max_width
    if needed <= width or not table.row_count:
        return table
    return _records(table, key_cols)


def _records(table: Table, key_cols: list[Column]) -> RenderableType:
    first = key_cols[0] if key_cols else table.columns[0]
    cells = {id(c): list(c.cells) for c in table.columns}
    plain = [c for c in table.columns if c is not first and c not in key_cols]
    keyed = [c for c in key_cols if c is not first]
    out: list[RenderableType] = []
    if table.title:
        out.append(Text.assemble(_text(table.title), style="bold"))
    for i in range(table.row_count):
        out.append(Text.assemble(_text(cells[id(first)][i]), style="bold"))
        if plain:
            pairs = [Text.assemble((_header(c) + " ", "dim"), _text(cells[id(c)][i])) for c in plain]
            out.append(Padding(Text("  ").join(pairs), (0, 0, 0, 2)))
        for c in keyed:
            out.append(Padding(Text.assemble((_header(c) + " ", "dim"), _text(cells[id(c)][i])), (0, 0, 0, 2)))
    if table.caption:
        out.append(Text.assemble(_text(table.caption), style="dim"))
    return Group(*out)
