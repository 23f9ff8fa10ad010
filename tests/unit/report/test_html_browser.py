"""report.html in headless Chromium, offline: every chart drawn as SVG, no console errors, a screenshot taken.

Skipped (with the reason) when Chromium is not installed; `make test` installs Debian's `chromium` when it can.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from tests.unit.report.runs import cell, knee_run, write

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium not installed (apt-get install chromium; "
                                                          "`make test` tries to)")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--enable-logging=stderr", "--v=0",
         # no name resolves: anything the page tried to fetch from a CDN would fail and show
         "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=15000"]


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=180, check=False)


def _console(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_report_html_renders_offline_with_every_chart(tmp_path: Path) -> None:
    from inferctl.ops.report import report

    r = knee_run()
    path = write(tmp_path, type(r)(meta=r.meta, cells=[*r.cells, cell(
        2048, 1, 0.5, server={"kv_cache_usage_peak": 0.5, "spec_decode_acceptance_rate": 0.7})]))
    res = report(path.name, root=tmp_path, png=False)
    url = Path(res.html).as_uri()
    dom = _chromium(["--dump-dom", url], tmp_path / "profile-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    charts = re.findall(r'<div class="chart" id="chart-([a-z-]+)">', html)
    assert charts == ["latency", "throughput", "heatmaps", "server"]
    for name in charts:  # plotly replaced each placeholder with an SVG drawing, with its traces in it
        block = html.split(f'id="chart-{name}"', 1)[1].split('<div class="chart"', 1)[0]
        assert 'class="main-svg"' in block, name
        assert ("scatterlayer" in block and 'class="trace scatter' in block) or "heatmaplayer" in block \
            or 'class="hm"' in block or "<image" in block, name
    assert _console(dom.stderr) == [], _console(dom.stderr)

    shot = tmp_path / "report.png"
    out = _chromium(["--window-size=1280,2400", f"--screenshot={shot}", url], tmp_path / "profile-shot")
    assert out.returncode == 0 and shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 50_000
    assert _console(out.stderr) == []


def test_a_broken_page_is_caught(tmp_path: Path) -> None:
    """The console check can fail: a page that throws shows up."""
    bad = tmp_path / "bad.html"
    bad.write_text("<html><body><script>throw new Error('boom')</script></body></html>")
    out = _chromium(["--dump-dom", bad.as_uri()], tmp_path / "profile")
    assert any("boom" in line for line in _console(out.stderr))
