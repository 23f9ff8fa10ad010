"""Start-up of the CLI: `inferctl --help`, spawn to exit, against a two-command Typer app's `--help`.

    python benchmarks/cli_startup.py [--runs 21]

People run `inferctl --help` (and every command) constantly, so its start-up is the CLI's first impression. The two
alternate so host load hits both alike; wall and CPU (user + system) medians and their difference are the claim
(docs/performance.md, "CLI start-up"): on a busy host the wall time swings, the CPU time much less. It also lists
which heavy libraries the help path imported (there should be none).
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MINIMAL = '''
import typer

app = typer.Typer(rich_markup_mode="rich", add_completion=False)


@app.command()
def ping() -> None:
    """Ping."""


@app.command()
def pong() -> None:
    """Pong."""


app()
'''

HEAVY = ("pydantic", "pydantic_settings", "httpx", "aiohttp", "msgspec", "anyio", "asyncio", "numpy", "matplotlib",
         "plotly", "google", "mcp", "inferctl.config")


def once(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run; CPU time barely moves with host load."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def heavy_imports() -> list[str]:
    code = ("import sys, inferctl.cli.app; print(' '.join(sorted({m for m in sys.modules for h in "
            + repr(HEAVY) + " if m == h or m.startswith(h + '.')})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return sorted({next(h for h in HEAVY if m == h or m.startswith(h + ".")) for m in out})


def main(runs: int) -> None:
    inferctl = shutil.which("inferctl") or str(Path(sys.executable).with_name("inferctl"))
    with tempfile.TemporaryDirectory() as tmp:
        minimal = Path(tmp) / "minimal.py"
        minimal.write_text(MINIMAL, encoding="utf-8")
        once([inferctl, "--help"])  # warm the file cache and byte-code of both
        once([sys.executable, str(minimal), "--help"])
        ours, base = [], []
        for _ in range(runs):
            ours.append(once([inferctl, "--help"]))
            base.append(once([sys.executable, str(minimal), "--help"]))
    for label, i in (("wall", 0), ("cpu", 1)):
        a, b = statistics.median(x[i] for x in ours), statistics.median(x[i] for x in base)
        print(f"{label:4}  inferctl --help       median {a:.3f} s  min {min(x[i] for x in ours):.3f} s")
        print(f"{label:4}  minimal Typer --help  median {b:.3f} s  min {min(x[i] for x in base):.3f} s")
        print(f"{label:4}  inferctl's own share  {a - b:+.3f} s")
    print(f"heavy imports on the help path: {', '.join(heavy_imports()) or 'none'}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    main(parser.parse_args().runs)
