"""Rendering: figures hold the right series, PNGs have the expected axes, report/compare files are written."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.report.runs import cell, knee_run, run, write

from inferctl.report.figures import run_figures

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_run_figures_have_one_line_per_context_and_log_axes() -> None:
    figs = {f.name: f for f in run_figures(knee_run())}
    assert set(figs) == {"latency", "throughput", "heatmaps"}  # no server data: that figure is dropped
    ttft = figs["latency"].panels[0]
    assert ttft.title == "TTFT" and ttft.logx and ttft.logy
    assert [ln.name for ln in ttft.lines] == ["ctx 128 p50", "ctx 128 p95", "ctx 1024 p50", "ctx 1024 p95"]
    assert ttft.lines[0].x == [1, 2, 4, 8, 16, 32] and ttft.lines[0].y[3] == 200
    heat = figs["heatmaps"].heats[0]
    assert heat.y_labels == ["ctx 128", "ctx 1024"] and heat.z[1][-1] is None  # ctx 1024 has no c=32


def test_server_figure_appears_with_server_data() -> None:
    r = run([cell(128, 1, 2.0, server={"kv_cache_usage_peak": 0.2, "spec_decode_acceptance_rate": 0.7}),
             cell(128, 2, 3.0, server={"kv_cache_usage_peak": 0.4, "spec_decode_acceptance_rate": 0.6})])
    server = next(f for f in run_figures(r) if f.name == "server")
    assert [p.title for p in server.panels] == ["KV cache usage peak", "Spec-decode acceptance rate"]


def test_png_axes() -> None:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from inferctl.report.png import _plot_panel

    panel = next(f for f in run_figures(knee_run()) if f.name == "throughput").panels[0]
    fig, ax = plt.subplots()
    _plot_panel(ax, panel, "concurrency")
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert ax.get_title() == "Request throughput" and ax.get_ylabel() == "req/s"
    assert ax.get_xlabel() == "concurrency" and len(ax.get_lines()) == 2
    plt.close(fig)


def test_report_writes_markdown_html_and_pngs(tmp_path: Path) -> None:
    from inferctl.ops.report import report

    path = write(tmp_path, knee_run())
    res = report(path.name, root=tmp_path)
    assert res.out_dir == str(path)
    md = Path(res.markdown).read_text()
    assert "saturates at c=8" in md and "## Cells" in md and "![latency.png](latency.png)" in md
    for p in res.charts:
        data = Path(p).read_bytes()
        assert data.startswith(PNG_MAGIC) and len(data) > 10_000
    html = Path(res.html).read_text()
    # plotly.js is inside the file (megabytes of it), and no script is fetched from anywhere
    assert html.count("Plotly.newPlot") == 3 and len(html) > 3_000_000 and "<script src=" not in html


def test_compare_writes_files(tmp_path: Path) -> None:
    from inferctl.ops.compare import compare

    a, b = write(tmp_path, knee_run("A")), write(tmp_path, knee_run("B", scale=1.3))
    res = compare([a.name, b.name], labels=["a", "b"], root=tmp_path)
    assert Path(res.out_dir).parent == tmp_path / "compare"
    assert "# Comparison: a vs b" in Path(res.markdown).read_text()
    assert {Path(p).name for p in res.charts} == {"compare.png", "delta-1.png"}


@pytest.mark.parametrize("bad", ["../nope", "zzz"])
def test_report_of_unknown_run_is_an_error(tmp_path: Path, bad: str) -> None:
    from inferctl.errors import ConfigError
    from inferctl.ops.report import report

    with pytest.raises(ConfigError, match="No run"):
        report(bad, root=tmp_path)
