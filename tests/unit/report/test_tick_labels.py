"""Chart axes read as plain numbers with thousands separators: 26 req/s and 1,000 tok/s, never 2.6×10¹ or 1e3
(issue 14.3). The PNG check reads the tick text matplotlib draws; the HTML check reads the tick settings plotly.js
draws from (fixed tick text on log axes, d3's ",~r" on linear ones)."""

from __future__ import annotations

import re

import pytest
from tests.unit.report.runs import cell, knee_run, run

from inferctl.report.compare import compare
from inferctl.report.figures import compare_figures, log_ticks, run_figures, tick_label

# "1,000", "26", "0.05", "12.5", "50%", "-3"; the heatmaps' categories name grid settings as the cell ids and
# legends do ("ctx 1024", "c=8", "r=0.5/s")
PLAIN = re.compile(r"^([−-]?\d{1,3}(,\d{3})*(\.\d+)?%?|ctx \d+|c=\d+|r=[\d.]+(/s)?)?$")


@pytest.mark.parametrize("value, text", [
    (26, "26"), (800, "800"), (1600, "1,600"), (1_234_567, "1,234,567"), (0.05, "0.05"), (0.30000000000000004, "0.3"),
    (12.5, "12.5"), (2.6e1, "26"), (-2500, "-2,500"), (0, "0"),
])
def test_tick_label(value, text):
    assert tick_label(value) == text


def test_log_ticks_are_round_numbers_on_the_data():
    assert log_ticks([128, 1036]) == [200, 500, 1000]
    assert log_ticks([1, 8.1]) == [1, 2, 5]
    assert log_ticks([0.05, 20_000]) == [0.1, 1, 10, 100, 1000, 10_000]  # many decades: one tick each
    assert log_ticks([26, 31]) == [26, 31]  # no round number inside: the ends
    assert log_ticks([None, 0, -1]) == []


def _figures():
    r = knee_run()
    r = type(r)(meta=r.meta, cells=[*r.cells, cell(2048, 1, 0.5, server={"kv_cache_usage_peak": 0.5,
                                                                           "spec_decode_acceptance_rate": 0.7})])
    b = knee_run("20260102-000000-b", scale=13.0)  # output tok/s into the ten thousands
    return [*run_figures(r), *run_figures(b), *compare_figures(compare([r, b], labels=["a", "b"]))]


def test_png_tick_text_is_plain():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    from inferctl.report.png import draw

    seen = set()
    for spec in _figures():
        fig = draw(spec)
        fig.canvas.draw()
        for ax in fig.axes:  # panels and colour bars
            for axis in (ax.xaxis, ax.yaxis):
                texts = [t.get_text() for t in axis.get_ticklabels(which="both")]
                bad = [t for t in texts if not PLAIN.match(t)]
                assert not bad, (spec.name, ax.get_title(), bad)
                seen.update(texts)
        plt.close(fig)
    assert {"1,000", "10,000", "2", "5"} <= seen, sorted(seen)  # log axes are labelled, with separators


def test_html_axes_are_plain():
    from inferctl.report.html import _plotly_figure

    for spec in _figures():
        layout = _plotly_figure(spec).to_plotly_json()["layout"]
        for name, axis in layout.items():
            if not re.fullmatch(r"[xy]axis\d*", name) or "title" not in axis:
                continue
            if axis.get("type") == "log":
                assert axis.get("ticktext") and all(PLAIN.match(t) for t in axis["ticktext"]), (spec.name, name)
                assert len(axis["ticktext"]) == len(axis["tickvals"])
            elif name.startswith("y") and not spec.heats:
                assert axis.get("tickformat") == ",~r" and axis.get("exponentformat") == "none", (spec.name, name)
        for trace in _plotly_figure(spec).to_plotly_json()["data"]:
            if trace.get("type") == "heatmap":
                assert trace["colorbar"]["tickformat"] in (",~r", ".0%")
            else:
                assert ".4g" not in trace.get("hovertemplate", "")
    throughput = next(s for s in _figures() if s.name == "throughput")
    texts = [t for k, a in _plotly_figure(throughput).to_plotly_json()["layout"].items()
             if k.startswith("yaxis") for t in a.get("ticktext", [])]
    assert "1,000" in texts


def test_plain_numbers_when_the_log_axis_holds_one_value():
    spec = next(f for f in run_figures(run([cell(128, 1, 26.0)])) if f.name == "throughput")
    from inferctl.report.html import _plotly_figure

    layout = _plotly_figure(spec).to_plotly_json()["layout"]
    assert layout["yaxis"]["ticktext"] == ["26"]
