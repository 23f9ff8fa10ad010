"""`inferctl compare RUN_A RUN_B [...]`: matching cells side by side, deltas, winners, overlaid charts."""

from __future__ import annotations

import re
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl.bench.store import runs_dir
from inferctl.errors import ConfigError
from inferctl.report.compare import TIE_THRESHOLD, Comparison
from inferctl.report.data import load_run


class CompareResult(BaseModel):
    """``inferctl compare --json``: the comparison and the files written."""

    out_dir: str | None = Field(default=None, description="Where compare.md/.html and PNGs went (None: --no-files).")
    markdown: str | None = None
    html: str | None = None
    charts: list[str] = Field(default_factory=list)
    comparison: Comparison


def compare(refs: list[str], *, labels: list[str] | None = None, root: str | Path | None = None,
            out: str | Path | None = None, metrics: list[str] | None = None,
            tie_threshold: float = TIE_THRESHOLD, files: bool = True) -> CompareResult:
    """Compare runs (the first is the baseline) and write compare.md, compare.html and PNG overlays."""
    from inferctl.report.compare import compare as build

    if len(refs) < 2:
        raise ConfigError("compare needs at least two runs.")
    if labels and len(labels) > len(refs):
        raise ConfigError(f"{len(labels)} labels for {len(refs)} runs; pass at most one --label per run.")
    runs = [load_run(r, root) for r in refs]
    cmp = build(runs, labels, metrics, tie_threshold)
    result = CompareResult(comparison=cmp)
    if not files:
        return result  # the comparison itself says when nothing matched
    if not cmp.cells:
        raise ConfigError(f"Runs {', '.join(r.run_id for r in runs)} have no cells in common (the same context and "
                          f"the same concurrency or rate), so there is nothing to compare: "
                          f"{'; '.join(_cells_of(r) for r in runs)}.")
    from inferctl.report import png
    from inferctl.report.figures import compare_figures
    from inferctl.report.html import compare_html
    from inferctl.report.markdown import compare_markdown

    name = "-vs-".join(re.sub(r"[^A-Za-z0-9._-]+", "-", r.run_id) for r in runs)[:150]
    out_dir = Path(out).expanduser() if out else runs_dir(root) / "compare" / name
    out_dir.mkdir(parents=True, exist_ok=True)
    figs = [f for f in compare_figures(cmp) if not f.empty]
    charts = png.render_all(figs, out_dir)
    md = out_dir / "compare.md"
    md.write_text(compare_markdown(cmp, [p.name for p in charts]), encoding="utf-8")
    html = out_dir / "compare.html"
    html.write_text(compare_html(cmp, figs), encoding="utf-8")
    result.out_dir, result.markdown, result.html = str(out_dir), str(md), str(html)
    result.charts = [str(p) for p in charts]
    return result


def _cells_of(run) -> str:
    ids = [c.id for c in run.cells]
    shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
    return f"{run.run_id} has {shown or 'no cells'}"
