"""`inferctl report RUN`: findings, report.md, a self-contained report.html and PNG charts for one run."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from inferctl.report.data import load_run
from inferctl.report.findings import DEFAULT_MAX_ERROR_RATE, Findings, compute


class ReportResult(BaseModel):
    """``inferctl report --json``."""

    run_id: str
    run_path: str
    source: str = Field(description="measured | imported | simulated")
    out_dir: str = Field(description="Where the files were written.")
    markdown: str = Field(description="Path of report.md.")
    html: str | None = Field(default=None, description="Path of report.html (self-contained, opens offline).")
    charts: list[str] = Field(default_factory=list, description="Paths of the PNG charts.")
    findings: Findings


def report(ref: str, *, root: str | Path | None = None, out: str | Path | None = None,
           slos: list[str] | None = None, max_error_rate: float = DEFAULT_MAX_ERROR_RATE,
           png: bool = True, html: bool = True) -> ReportResult:
    """Compute a run's findings and write its report files (into the run directory unless ``out``)."""
    from inferctl.report.figures import run_figures
    from inferctl.report.markdown import run_markdown

    run = load_run(ref, root)
    findings = compute(run, slos, max_error_rate)
    out_dir = Path(out).expanduser() if out else run.path
    assert out_dir is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    figs = [f for f in run_figures(run) if not f.empty]
    charts: list[Path] = []
    if png:
        from inferctl.report import png as png_mod

        charts = png_mod.render_all(figs, out_dir)
    md_path = out_dir / "report.md"
    md_path.write_text(run_markdown(run, findings, [p.name for p in charts]), encoding="utf-8")
    html_path = None
    if html:
        from inferctl.report.html import run_html

        html_path = out_dir / "report.html"
        html_path.write_text(run_html(run, findings, figs), encoding="utf-8")
    return ReportResult(run_id=run.run_id, run_path=str(run.path), source=run.meta.source, out_dir=str(out_dir),
                        markdown=str(md_path), html=str(html_path) if html_path else None,
                        charts=[str(p) for p in charts], findings=findings)
