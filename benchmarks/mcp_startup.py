"""Startup of `inferctl mcp`: spawn to the first tools/list answer, against a minimal one-tool MCPServer.

    python benchmarks/mcp_startup.py [--runs 5]

The two alternate so host load hits both alike; the ratio is the claim (docs/mcp.md, "Startup").
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

MINIMAL = '''
from mcp.server import MCPServer
server = MCPServer("minimal")

@server.tool()
def ping() -> str:
    """Ping."""
    return "pong"

server.run()
'''


async def once(command: str, args: list[str]) -> float:
    t0 = time.perf_counter()
    async with Client(StdioServerParameters(command=command, args=args)) as client:
        await client.list_tools()
    return time.perf_counter() - t0


async def main(runs: int) -> None:
    inferctl = shutil.which("inferctl") or str(Path(sys.executable).with_name("inferctl"))
    with tempfile.TemporaryDirectory() as tmp:
        minimal = Path(tmp) / "minimal.py"
        minimal.write_text(MINIMAL, encoding="utf-8")
        ours, base = [], []
        for _ in range(runs):
            ours.append(await once(inferctl, ["mcp"]))
            base.append(await once(sys.executable, [str(minimal)]))
    a, b = statistics.median(ours), statistics.median(base)
    print(f"inferctl mcp        median {a:.2f} s  runs {sorted(round(x, 2) for x in ours)}")
    print(f"minimal MCPServer   median {b:.2f} s  runs {sorted(round(x, 2) for x in base)}")
    print(f"ratio {a / b:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    anyio.run(main, parser.parse_args().runs)
