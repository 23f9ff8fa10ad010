"""`inferctl --help` stays light (issue 14.7): listing the commands imports no heavy library. The time itself is a
benchmark (benchmarks/cli_startup.py, docs/performance.md), not a test; what the help path imports is checked here."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("pydantic", "pydantic_settings", "httpx", "aiohttp", "msgspec", "anyio", "asyncio", "numpy", "matplotlib",
         "plotly", "google", "mcp", "inferctl.config", "inferctl.ops", "inferctl.bench", "inferctl.server")


def test_help_path_imports_nothing_heavy():
    code = ("import sys, inferctl.cli.app\n"
            f"print(sorted({{h for m in sys.modules for h in {HEAVY!r} if m == h or m.startswith(h + '.')}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_help_lists_every_panel():
    out = subprocess.run([sys.executable, "-c", "from inferctl.cli.app import main; main()", "--help"],
                         capture_output=True, text=True, env=None, check=False)
    assert out.returncode == 0, out.stderr
    for panel in ("Local engine", "Observe any endpoint", "Benchmark and report", "Google Cloud", "Agents"):
        assert panel in out.stdout
