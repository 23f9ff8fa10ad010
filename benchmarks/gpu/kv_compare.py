"""The planner against vLLM's own memory log lines, per cell of a GPU validation run (issue 18, item 2).

    python benchmarks/gpu/kv_compare.py benchmarks/gpu/data/<run>/      # prints the table, writes compare.json

A run directory holds what ``kv_validation.sh`` brought back (``SHAPE-LEN.log`` and ``SHAPE.config.json``
per cell) and/or ``measured.toml`` (values transcribed from a report, each with its source). For each cell
the planner is run on the same checkpoint config with vLLM's defaults for the device, and compared with:
"Available KV cache memory", "GPU KV cache size", "Maximum concurrency" and, where vLLM refused the
length, its "estimated maximum model length". Goal: KV tokens and maximum length within 2%.
The suite (tests/unit/plan/test_gpu_validation.py) runs the same comparison on every committed run.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from pathlib import Path

from pydantic import BaseModel

from inferctl.plan.memory import plan_memory
from inferctl.profiles.serving import ServingConfig
from inferctl.server.logs import parse_startup_log

_EST = re.compile(r"estimated maximum model length is (\d+)")


class Cell(BaseModel):
    """One model at one max_model_len: what vLLM logged (or was reported) and what the planner says."""

    shape: str
    max_model_len: int
    source: str
    started: bool
    kv_memory_gib: float | None = None
    kv_tokens: int | None = None
    max_concurrency: float | None = None
    estimated_max_len: int | None = None
    requested_memory_gib: float | None = None
    activation_peak_gib: float | None = None
    graph_estimate_gib: float | None = None
    plan_kv_memory_gib: float | None = None
    plan_kv_tokens: int | None = None
    plan_max_concurrency: float | None = None
    plan_fits: bool | None = None
    plan_max_len: int | None = None

    def errors(self) -> dict[str, float]:
        """Relative errors (planner / vLLM - 1) of every quantity both sides have."""
        pairs = {"kv_memory": (self.plan_kv_memory_gib, self.kv_memory_gib),
                 "kv_tokens": (self.plan_kv_tokens, self.kv_tokens),
                 "max_concurrency": (self.plan_max_concurrency, self.max_concurrency),
                 "max_len": (self.plan_max_len, self.estimated_max_len)}
        return {k: round(p / v - 1, 4) for k, (p, v) in pairs.items() if p is not None and v}


def _model_ref(run: Path, shape: str) -> str:
    """The checkpoint's config.json when the run brought it back, else the catalog's model of that shape."""
    cfg = run / f"{shape}.config.json"
    if cfg.exists():
        d = run / ".checkpoints" / shape
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.json").write_text(cfg.read_text())
        return str(d)
    return f"gemma-4-{shape}"


def planned(cell: Cell, model: str, accelerator: str) -> Cell:
    mem = plan_memory(ServingConfig(model=model, accelerator=accelerator, max_model_len=cell.max_model_len))
    cell.plan_kv_memory_gib, cell.plan_fits = mem.kv_memory_gib, mem.fits
    cell.plan_kv_tokens = mem.kv.kv_cache_tokens
    cell.plan_max_concurrency = round(mem.kv.max_concurrency, 2)
    cell.plan_max_len = mem.max_model_len_that_fits if not cell.started else None
    return cell


def cells(run: Path, accelerator: str = "h100") -> list[Cell]:
    out: list[Cell] = []
    for log in sorted(run.glob("*.log")):
        shape, _, length = log.stem.rpartition("-")
        text = log.read_text(errors="replace")
        lay = parse_startup_log(text)
        est = _EST.search(text)
        c = Cell(shape=shape, max_model_len=int(length), source=log.name, started=lay.kv_cache_tokens is not None,
                 kv_memory_gib=lay.kv_cache_memory_gib, kv_tokens=lay.kv_cache_tokens,
                 max_concurrency=lay.max_concurrency, estimated_max_len=int(est.group(1)) if est else None,
                 requested_memory_gib=lay.requested_memory_gib, activation_peak_gib=lay.torch_peak_increase_gib,
                 graph_estimate_gib=lay.graph_memory_estimate_gib)
        out.append(planned(c, _model_ref(run, shape), accelerator))
    measured = run / "measured.toml"
    if measured.exists():
        data = tomllib.loads(measured.read_text())
        for row in data["cells"]:
            c = Cell(source=data["source"], **row)
            out.append(planned(c, _model_ref(run, c.shape), data.get("accelerator", accelerator)))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: kv_compare.py RUN_DIR", file=sys.stderr)
        return 2
    run = Path(argv[0])
    rows = cells(run)
    print(f"{'cell':<18} {'vLLM KV GiB':>11} {'plan':>7} {'err':>7}   {'vLLM max len':>12} {'plan':>7} {'err':>7}")
    for c in rows:
        e = c.errors()
        print(f"{c.shape + ' @' + str(c.max_model_len):<18} {c.kv_memory_gib or '—':>11} {c.plan_kv_memory_gib:>7} "
              f"{e.get('kv_memory', float('nan')):>+7.1%}   {c.estimated_max_len or '—':>12} "
              f"{c.plan_max_len or '—':>7} {e.get('max_len', float('nan')):>+7.1%}")
    (run / "compare.json").write_text(json.dumps([c.model_dump() | {"errors": c.errors()} for c in rows], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
