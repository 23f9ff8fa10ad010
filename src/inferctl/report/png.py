"""PNG charts with matplotlib (Agg: no display needed). Imported lazily: matplotlib costs ~0.5 s to load."""

from __future__ import annotations

import math
from pathlib import Path

from inferctl.report.figures import Figure, Heat, Panel, log_ticks, tick_label
from inferctl.report.findings import num

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22"]


def _plot_panel(ax, p: Panel, xlabel: str) -> None:
    for ln in p.lines:
        pts = [(x, y) for x, y in zip(ln.x, ln.y, strict=True)
               if y is not None and not (p.logy and y <= 0) and not (p.logx and x <= 0)]
        if not pts:
            continue
        xs, ys = zip(*pts, strict=True)
        ax.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.6, linestyle="--" if ln.dash else "-",
                color=PALETTE[ln.color % len(PALETTE)], label=ln.name)
    if p.logx:
        ax.set_xscale("log", base=2)
    if p.logy and ax.has_data():
        ax.set_yscale("log")
    if ax.has_data():
        xs_all = [x for line in ax.get_lines() for x in line.get_xdata()]
        ys_all = [y for line in ax.get_lines() for y in line.get_ydata()]
        # the grid's own loads on x (as the HTML does); round 1-2-5 values on a log y; plain digits everywhere
        _plain_axis(ax.xaxis, sorted(set(xs_all)) if p.logx else None)
        _plain_axis(ax.yaxis, log_ticks(ys_all) if p.logy else None)
    ax.set_title(p.title, fontsize=10)
    ax.set_xlabel(xlabel, fontsize=8)
    ax.set_ylabel(p.ylabel, fontsize=8)
    ax.grid(True, which="both", alpha=0.3)
    ax.tick_params(labelsize=7)
    if ax.has_data():
        ax.legend(fontsize=7)


def _plain():
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _: tick_label(v))


def _plain_axis(axis, ticks: list[float] | None) -> None:
    """Plain-number labels (no ``2.6x10^1``): fixed ``ticks`` on a log axis with unlabelled minor ticks, or the
    axis's own ticks on a linear one."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    if ticks:
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_minor_formatter(NullFormatter())
    axis.set_major_formatter(_plain())


def _plot_heat(fig, ax, h: Heat) -> None:
    import numpy as np
    from matplotlib.ticker import FuncFormatter

    z = np.array([[np.nan if v is None else v for v in row] for row in h.z], dtype=float)
    cmap = "RdYlGn_r" if h.lower_is_better else "RdYlGn" if h.percent else "viridis"
    if h.percent and np.isfinite(z).any() and (z < 0).any():  # a delta: centre the colours on zero
        lim = float(np.nanmax(np.abs(z))) or 1.0
        im = ax.imshow(z, cmap="RdYlGn_r" if h.lower_is_better else "RdYlGn", vmin=-lim, vmax=lim, aspect="auto")
    elif h.percent:  # a share (success rate): 0..100% always, so a full row does not look alarming
        im = ax.imshow(z, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    else:
        im = ax.imshow(z, cmap=cmap, aspect="auto")
    ax.set_xticks(range(len(h.x_labels)), h.x_labels, fontsize=7)
    ax.set_yticks(range(len(h.y_labels)), h.y_labels, fontsize=7)
    ax.set_title(h.title, fontsize=9)
    for i in range(z.shape[0]):
        for j in range(z.shape[1]):
            v = z[i, j]
            text = "—" if math.isnan(v) else (f"{v * 100:.0f}%" if h.percent else num(float(v)))
            ax.text(j, i, text, ha="center", va="center", fontsize=7, color="black",
                    bbox={"facecolor": "white", "alpha": 0.6, "pad": 1, "edgecolor": "none"})
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    bar.ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v * 100:.0f}%") if h.percent else _plain())


def render(fig_spec: Figure, path: Path, dpi: int = 110) -> Path:
    """Draw one figure to ``path`` (PNG)."""
    import matplotlib.pyplot as plt

    fig = draw(fig_spec)
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return path


def draw(fig_spec: Figure):
    """The matplotlib figure for ``fig_spec`` (the caller saves and closes it)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    items = fig_spec.panels or fig_spec.heats
    n = len(items)
    cols = 2 if n > 1 else 1
    rows_ = math.ceil(n / cols)
    fig, axes = plt.subplots(rows_, cols, figsize=(6.2 * cols, 4.2 * rows_), squeeze=False)
    flat = [ax for row in axes for ax in row]
    for ax, item in zip(flat, items, strict=False):
        if isinstance(item, Panel):
            _plot_panel(ax, item, fig_spec.xlabel)
        else:
            _plot_heat(fig, ax, item)
    for ax in flat[n:]:
        ax.set_visible(False)
    fig.suptitle(fig_spec.title, fontsize=11)
    fig.tight_layout()
    return fig


def render_all(figs: list[Figure], out_dir: Path, prefix: str = "") -> list[Path]:
    """Every figure as ``<out_dir>/<prefix><name>.png``."""
    return [render(f, out_dir / f"{prefix}{f.name}.png") for f in figs]
