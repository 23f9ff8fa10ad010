"""`inferctl simulate`: a sweep grid through the simulator, written as a run directory (source: simulated).

The run directory is the bench's own format (inferctl.bench.store, docs/run-format.md): meta.json with
``source: simulated``, requests.jsonl, cells.jsonl / cells.json / cells.csv. Reports, comparisons and cost
read it exactly like a measured run. meta.json's ``engine`` holds the serving configuration, the memory plan
and the performance parameters used, so a prediction can be reproduced and compared with its measurement.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from inferctl import __version__
from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import RunDir, RunMeta, new_run_id, runs_dir
from inferctl.errors import ConfigError
from inferctl.ops.bench import SweepSummary
from inferctl.plan.cells import GridCost, SimEngine, grid_cost, simulate_cell
from inferctl.plan.fit import require_fit
from inferctl.plan.perf import PerfParams
from inferctl.plan.provenance import SpeedSource, provenance
from inferctl.profiles.serving import ServingConfig

# A bound on one simulation, so no caller (an MCP client least of all) can ask for hours of CPU and gigabytes
# of request objects. The seed grid (156 cells) is ~230,000 requests and ~0.6 billion tokens, seconds of work.
MAX_REQUESTS = 1_000_000
MAX_TOKENS = 2_000_000_000

# How the grid's knobs are called where the request came from (the CLI's flags by default; MCP passes its
# tool's argument names), so the refusal says what to change in words the caller typed.
CLI_NAMES = {"concurrency": "--concurrency", "context": "--context", "output_tokens": "--output-tokens",
             "requests": "--requests"}


def check_cost(spec: SweepSpec, names: dict[str, str] | None = None) -> GridCost:
    """The grid's cost, or a ConfigError that states the limit and how to get under it."""
    cost = grid_cost(spec)
    if cost.requests <= MAX_REQUESTS and cost.tokens <= MAX_TOKENS:
        return cost
    n = {**CLI_NAMES, **(names or {})}
    knobs = [n["concurrency"], n["context"], n["output_tokens"]] + ([n["requests"]] if n.get("requests") else [])
    raise ConfigError(
        f"This grid is too large to simulate: {cost.cells} cells, {cost.requests:,} requests and "
        f"{cost.tokens:,} tokens, over the limit of {MAX_REQUESTS:,} requests and {MAX_TOKENS:,} tokens per "
        f"simulation (each cell simulates 4 x concurrency requests, at least 20, plus one warm-up wave of up to "
        f"256, each of context + output tokens). Lower {', '.join(knobs[:-1])} or {knobs[-1]}, or split the "
        "grid into several simulations.")


def simulate(
    cfg: ServingConfig,
    spec: SweepSpec,
    *,
    params: PerfParams | None = None,
    params_source: SpeedSource | None = None,
    root: str | Path | None = None,
    write_requests: bool = False,
    command: list[str] | None = None,
    profile: str | None = None,
    check: Callable[[], None] | None = None,
    names: dict[str, str] | None = None,
) -> SweepSummary:
    """Simulate every cell of ``spec`` for ``cfg`` and write a run directory; returns its summary.

    ``write_requests`` also writes requests.jsonl (one line per simulated request, without chunk times);
    off by default because a seed grid holds ~230,000 requests and reports read cells.json. Without a price
    in ``cfg`` the price catalog's (``profile``'s or the accelerator's) is recorded in the serving config.

    A grid over :func:`check_cost`'s bound is refused before anything runs (``names`` are the caller's
    words for the grid's knobs). ``check`` is called between cells and as each cell runs, and raises to
    stop: the run directory is then marked interrupted and the exception propagates.
    ``params_source`` says where ``params`` came from; the run's meta.json and the summary carry the provenance.
    """
    check_cost(spec, names)
    from inferctl.ops.plan import with_catalog_price

    t0 = time.perf_counter()
    cfg, price_source = with_catalog_price(cfg, profile)  # recorded with the run for `inferctl cost`
    engine = SimEngine(cfg, params)
    mem = engine.memory  # resolves and validates before anything is written
    require_fit(cfg, mem)  # a configuration that cannot load is refused, never simulated as zeros
    r = engine.resolved
    prov = provenance(r, params_given=params is not None, source=params_source)
    run_id = new_run_id(f"sim-{Path(r.model.name).name}-{r.accelerator.name}")
    store = RunDir.create(runs_dir(str(root) if root else None), run_id)
    meta = RunMeta(
        source="simulated",
        run_id=store.path.name,
        target={"name": "simulated", "url": None, "accelerator": r.accelerator.name, "count": cfg.count},
        model=r.model.hf_id or r.model.name,
        model_root=r.model.name,
        max_model_len=r.max_model_len,
        vllm_version=None,
        engine={
            "serving_config": cfg.model_dump(mode="json"),
            "price_source": price_source,
            "profile": profile,
            "perf_params": engine.params.model_dump(mode="json"),
            "provenance": prov.model_dump(mode="json"),
            "memory": mem.model_dump(mode="json", exclude={"kv": {"groups"}}),
            "max_num_seqs": r.max_num_seqs,
            "max_num_batched_tokens": r.max_num_batched_tokens,
            "replicas": r.replicas,
        },
        grid=spec.model_dump(mode="json"),
        inferctl_version=__version__,
        command=command or [],
        started_at=time.time(),
    )
    store.write_meta(meta)
    cells = []
    try:
        for cell in spec.cells():
            if check is not None:
                check()
            result, records, _ = simulate_cell(engine, spec, cell, check=check)
            if write_requests:
                for rec in records:
                    store.append_request(rec)
            cells.append(result)
        # One write at the end: the bench appends cells.jsonl for crash safety, a whole simulated grid takes
        # seconds; cells.json is what RunDir.cells() reads when there is no cells.jsonl.
        store.write_cells(cells)
        meta.status = "complete"
    except BaseException:
        meta.status = "interrupted"
        raise
    finally:
        meta.ended_at = time.time()
        meta.workload = {"simulated_seconds": round(time.perf_counter() - t0, 3)}
        store.write_meta(meta)
        store.close()
    summary = SweepSummary(run_id=store.path.name, path=str(store.path), status=meta.status, model=meta.model,
                           cells_total=len(cells), cells=cells, provenance=prov)  # fmt: skip
    for c in cells:
        if c.status == "complete":
            summary.cells_complete += 1
        else:
            setattr(summary, f"cells_{c.status}", getattr(summary, f"cells_{c.status}") + 1)
    return summary
