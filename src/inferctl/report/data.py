"""What every report, comparison and cost works on: a run's metadata and cells, and named metrics.

``load_run`` opens a run directory through ``bench.store`` (the one reader), refuses a format version
it does not know, and returns a ``Run``. ``METRICS`` names the per-cell numbers reports plot and
compare, each with its unit and whether higher is better, so charts, tables and deltas agree.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inferctl.bench.store import FORMAT_VERSION, CellResult, RunDir, RunMeta, runs_dir
from inferctl.errors import ConfigError


@dataclass(frozen=True)
class Run:
    """A run as reports see it (pure data: tests build these without a directory)."""

    meta: RunMeta
    cells: list[CellResult]
    path: Path | None = None

    @property
    def run_id(self) -> str:
        return self.meta.run_id

    @property
    def open_loop(self) -> bool:
        return any(c.rate is not None for c in self.cells)


def load_run(ref: str, root: str | Path | None = None) -> Run:
    """A run by id, id prefix, path or ``latest``; unknown runs and format versions are one-sentence errors."""
    store = RunDir.open(ref, runs_dir(root))
    meta = _meta(store)
    return Run(meta=meta, cells=store.cells(), path=store.path)


def _meta(store: RunDir) -> RunMeta:
    import json

    try:
        raw = json.loads((store.path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{store.path}/meta.json is missing or invalid: {exc}.") from None
    version = raw.get("format_version") if isinstance(raw, dict) else None
    if version != FORMAT_VERSION:
        raise ConfigError(f"Run {store.path.name} has format_version {version!r}; this inferctl reads version "
                          f"{FORMAT_VERSION} only (upgrade inferctl).")
    return store.read_meta()


# -- cells ------------------------------------------------------------------------------------


def load_of(c: CellResult) -> float:
    """The cell's position on the load axis: concurrency (closed loop) or rate (open loop)."""
    if c.rate is not None:
        return float(c.rate)
    return float(c.concurrency or 0)


def load_label(c: CellResult) -> str:
    return f"r={c.rate:g}/s" if c.rate is not None else f"c={c.concurrency}"


def cell_key(c: CellResult) -> tuple[int, str, float]:
    """What makes two cells of different runs comparable: context, load kind, load."""
    return (c.context, "rate" if c.rate is not None else "concurrency", load_of(c))


def sent(c: CellResult) -> int:
    return c.metrics.ok + c.metrics.errors


def success_rate(c: CellResult) -> float | None:
    """ok / sent; None when nothing was sent (infeasible or skipped cells)."""
    n = sent(c)
    return c.metrics.ok / n if n else None


def measured(c: CellResult) -> bool:
    """A cell whose latency and throughput mean something: it completed and something succeeded."""
    return c.status in ("complete", "aborted") and c.metrics.ok > 0


def rows(cells: list[CellResult]) -> dict[int, list[CellResult]]:
    """Cells grouped by context, each row sorted by load."""
    out: dict[int, list[CellResult]] = {}
    for c in cells:
        out.setdefault(c.context, []).append(c)
    return {ctx: sorted(cs, key=load_of) for ctx, cs in sorted(out.items())}


# -- named metrics ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    higher_is_better: bool
    get: Callable[[CellResult], float | None]


def _dist(name: str, stat: str) -> Callable[[CellResult], float | None]:
    return lambda c: getattr(getattr(c.metrics, name), stat) if measured(c) else None


def _m(attr: str) -> Callable[[CellResult], float | None]:
    return lambda c: getattr(c.metrics, attr) if measured(c) else None


def _s(key: str) -> Callable[[CellResult], float | None]:
    def get(c: CellResult) -> float | None:
        v = c.server.get(key) if c.server.get("available") else None
        return float(v) if v is not None else None

    return get


METRICS: dict[str, Metric] = {m.key: m for m in [
    Metric("request_throughput", "Request throughput", "req/s", True, _m("request_throughput")),
    Metric("output_throughput", "Output token throughput", "tok/s", True, _m("output_throughput")),
    Metric("total_token_throughput", "Total token throughput", "tok/s", True, _m("total_token_throughput")),
    Metric("goodput", "Goodput", "req/s", True, _m("goodput")),
    Metric("ttft_p50", "TTFT p50", "ms", False, _dist("ttft", "p50")),
    Metric("ttft_p95", "TTFT p95", "ms", False, _dist("ttft", "p95")),
    Metric("tpot_p50", "TPOT p50", "ms", False, _dist("tpot", "p50")),
    Metric("tpot_p95", "TPOT p95", "ms", False, _dist("tpot", "p95")),
    Metric("itl_p50", "ITL p50", "ms", False, _dist("itl", "p50")),
    Metric("e2e_p50", "E2E latency p50", "ms", False, _dist("e2e", "p50")),
    Metric("e2e_p95", "E2E latency p95", "ms", False, _dist("e2e", "p95")),
    Metric("success_rate", "Success rate", "", True, success_rate),
    Metric("kv_cache_usage_peak", "KV cache usage peak", "", False, _s("kv_cache_usage_peak")),
    Metric("preemptions", "Preemptions", "", False, _s("preemptions")),
    Metric("requests_waiting_peak", "Server queue depth peak", "requests", False, _s("requests_waiting_peak")),
    Metric("spec_decode_acceptance_rate", "Spec-decode acceptance rate", "", True,
           _s("spec_decode_acceptance_rate")),
    Metric("spec_decode_mean_acceptance_length", "Spec-decode mean acceptance length", "tokens", True,
           _s("spec_decode_mean_acceptance_length")),
]}


def metric(key: str) -> Metric:
    try:
        return METRICS[key]
    except KeyError:
        raise ConfigError(f"Unknown metric '{key}'; metrics: {', '.join(METRICS)}.") from None


def hardware_label(meta: RunMeta) -> str:
    """What the run ran on, as well as the run knows: an explicit label, else the target and host."""
    hw = meta.engine.get("hardware") if isinstance(meta.engine, dict) else None
    if hw:
        return str(hw)
    name = meta.target.get("name")
    if name in ("local", "url") or not name:
        host = meta.host or {}
        cpus = host.get("cpus")
        url = meta.target.get("url") or ""
        where = "local engine" if ("127.0.0.1" in url or "localhost" in url or name == "local") else url
        return f"{where} on {host.get('hostname', '?')} ({cpus} CPUs)" if cpus else where or "unknown"
    return str(name)
