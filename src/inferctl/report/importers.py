"""Other tools' results as cells: vllm bench serve JSON, GuideLLM JSON, the seed's CSVs.

Pure: ``parse(name, text)`` returns the detected format, cells and what it could tell about the run;
``ops.imports`` writes them as a run directory with ``source: imported``. Units are converted to ours
(ms latencies; E2E from the seed's seconds). Where a tool's names differ from ours the mapping follows
docs/metrics.md and bench-anchors §0: vLLM's TPOT = ours; GuideLLM's ``inter_token_latency_ms`` = our
TPOT (its ``time_per_output_token_ms`` includes TTFT and is not imported as TPOT).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from inferctl.bench.stats import CellMetrics, Dist
from inferctl.bench.store import CellResult
from inferctl.errors import ConfigError

if TYPE_CHECKING:
    from inferctl.catalog.corpus import Entry


@dataclass
class Parsed:
    format: str
    cells: list[CellResult]
    model: str | None = None
    started_at: float | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _f(x: Any) -> float | None:
    if x is None or x == "":
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def _cell(context: int, concurrency: int | None, rate: float | None, output_tokens: int, m: CellMetrics,
          status: str = "complete", reason: str = "") -> CellResult:
    cid = f"ctx{context}-r{rate:g}" if rate is not None else f"ctx{context}-c{concurrency}"
    return CellResult(id=cid, context=context, concurrency=concurrency, rate=rate, output_tokens=output_tokens,
                      status=status, reason=reason, metrics=m)  # type: ignore[arg-type]


def _rows(cells: list[CellResult]) -> list[CellResult]:
    ctxs = sorted({c.context for c in cells})
    for c in cells:
        c.row = ctxs.index(c.context)
    return sorted(cells, key=lambda c: (c.context, c.rate if c.rate is not None else (c.concurrency or 0)))


# -- vllm bench serve -------------------------------------------------------------------------------


def _vllm_dist(d: dict[str, Any], name: str, raw_s: list[float] | None, count: int) -> Dist:
    if raw_s:
        return Dist.of(raw_s)
    mean = _f(d.get(f"mean_{name}_ms"))
    if mean is None and _f(d.get(f"median_{name}_ms")) is None:
        return Dist()
    pick = {p: _f(d.get(f"p{p}_{name}_ms")) for p in ("50", "90", "95", "99")}
    return Dist(count=count, mean=mean, p50=_f(d.get(f"median_{name}_ms")) or pick["50"], p90=pick["90"],
                p95=pick["95"], p99=pick["99"])


def _vllm_one(d: dict[str, Any], warnings: list[str]) -> CellResult:
    done = int(d.get("completed") or 0)
    failed = int(d.get("failed") or max(0, int(d.get("num_prompts") or done) - done))
    total_in, total_out = int(d.get("total_input_tokens") or 0), int(d.get("total_output_tokens") or 0)
    meta = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
    ctx_raw = d.get("random_input_len") or meta.get("random_input_len") or meta.get("input_len")
    context = int(ctx_raw) if ctx_raw else (round(total_in / done) if done else 0)
    if not ctx_raw:
        warnings.append(f"context taken as the mean prompt length ({context} tokens): the file does not say.")
    out_tokens = round(total_out / done) if done else int(d.get("random_output_len") or 0)
    rate = _f(d.get("request_rate"))
    conc = d.get("max_concurrency")
    if rate is not None and math.isinf(rate):
        rate = None
    if rate is None and conc is None:  # everything sent at t=0: the burst size is the concurrency
        conc = int(d.get("num_prompts") or done + failed)
    ttfts = [t for t in d.get("ttfts") or [] if t]
    itls = [g for x in d.get("itls") or [] for g in (x or [])]
    e2es = [t + sum(x or []) for t, x in zip(d.get("ttfts") or [], d.get("itls") or [], strict=False) if t]
    m = CellMetrics(
        requests=done + failed, ok=done, errors=failed, http_error=failed,
        error_rate=round(failed / (done + failed), 4) if done + failed else 0.0,
        window_s=_f(d.get("duration")) or 0.0, request_throughput=_f(d.get("request_throughput")) or 0.0,
        output_throughput=_f(d.get("output_throughput")) or 0.0,
        total_token_throughput=_f(d.get("total_token_throughput")) or 0.0,
        goodput=_f(d.get("request_goodput")), prompt_tokens_total=total_in, completion_tokens_total=total_out,
        prompt_tokens_mean=round(total_in / done, 2) if done else None,
        completion_tokens_mean=round(total_out / done, 2) if done else None,
        ttft=_vllm_dist(d, "ttft", ttfts, done), tpot=_vllm_dist(d, "tpot", None, done),
        itl=_vllm_dist(d, "itl", itls, len(itls) or done), e2e=_vllm_dist(d, "e2el", e2es, done),
        first_errors=[str(e)[:300] for e in (d.get("errors") or []) if e][:5])
    return _cell(context, int(conc) if conc is not None and rate is None else None, rate, out_tokens, m)


def parse_vllm(objs: list[dict[str, Any]]) -> Parsed:
    """vllm bench serve --save-result JSON (one result, a list, or --append-result lines)."""
    p = Parsed(format="vllm-bench-serve", cells=[])
    for d in objs:
        c = _vllm_one(d, p.warnings)
        if c.rate is not None and d.get("max_concurrency"):
            c.concurrency = int(d["max_concurrency"])
        p.cells.append(c)
        p.model = p.model or d.get("model_id")
        p.facts.setdefault("backend", d.get("backend"))
    p.started_at = None
    p.warnings = sorted(set(p.warnings))
    p.cells = _rows(p.cells)
    return p


# -- GuideLLM -------------------------------------------------------------------------------------------


def _gstat(metrics: dict[str, Any], name: str, scale: float = 1.0) -> Dist:
    node = metrics.get(name) or {}
    s = node.get("successful", node) if isinstance(node, dict) else {}
    if not isinstance(s, dict) or s.get("mean") is None:
        return Dist()
    pct = s.get("percentiles") or {}
    g = lambda k: (_f(pct.get(k)) * scale) if _f(pct.get(k)) is not None else None  # noqa: E731
    return Dist(count=int(s.get("count") or 0), mean=_f(s.get("mean")) * scale,
                p50=(_f(s.get("median")) * scale) if _f(s.get("median")) is not None else g("p50"),
                p90=g("p90"), p95=g("p95"), p99=g("p99"),
                min=(_f(s.get("min")) or 0) * scale, max=(_f(s.get("max")) or 0) * scale)


def _strategy(b: dict[str, Any]) -> dict[str, Any]:
    for path in (("scheduler", "strategy"), ("config", "strategy"), ("args", "strategy"), ("strategy",)):
        node: Any = b
        for k in path:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict):
            return node
    return {}


def parse_guidellm(doc: dict[str, Any], context_hint: int | None = None) -> Parsed:
    """GuideLLM's benchmarks JSON (``--output-path x.json``): one cell per benchmark (strategy)."""
    p = Parsed(format="guidellm", cells=[])
    for b in doc.get("benchmarks") or []:
        mt = b.get("metrics") or {}
        st = _strategy(b)
        kind = st.get("type_") or st.get("type") or ""
        rate = _f(st.get("rate"))
        conc = st.get("streams") or st.get("max_concurrency")
        if kind == "synchronous":
            conc, rate = 1, None
        elif kind in ("concurrent", "throughput"):
            rate = None
        elif rate is None and conc is None:
            conc = round(_gstat(mt, "request_concurrency").mean or 1)
        totals = b.get("request_totals") or b.get("run_stats", {}).get("requests_made") or {}
        ok = int(totals.get("successful") or _gstat(mt, "request_latency").count or 0)
        err = int(totals.get("errored") or 0) + int(totals.get("incomplete") or 0)
        prompt = _gstat(mt, "prompt_token_count")
        out = _gstat(mt, "output_token_count")
        context = round(prompt.mean) if prompt.mean else (context_hint or 0)
        dur = _f(b.get("duration")) or ((_f(b.get("end_time")) or 0) - (_f(b.get("start_time")) or 0))
        m = CellMetrics(
            requests=ok + err, ok=ok, errors=err, error_rate=round(err / (ok + err), 4) if ok + err else 0.0,
            timeout=int(totals.get("incomplete") or 0), window_s=max(dur, 0.0),
            request_throughput=_gstat(mt, "requests_per_second").mean or 0.0,
            output_throughput=_gstat(mt, "output_tokens_per_second").mean or 0.0,
            total_token_throughput=_gstat(mt, "tokens_per_second").mean or 0.0,
            prompt_tokens_mean=prompt.mean, completion_tokens_mean=out.mean,
            ttft=_gstat(mt, "time_to_first_token_ms"), tpot=_gstat(mt, "inter_token_latency_ms"),
            e2e=_gstat(mt, "request_latency", 1000.0))
        p.cells.append(_cell(context, int(conc) if rate is None and conc else None, rate,
                             round(out.mean) if out.mean else 0, m))
        p.started_at = p.started_at or _f(b.get("start_time"))
    if not p.cells:
        raise ConfigError("The GuideLLM file has no benchmarks.")
    p.cells = _rows(_dedupe(p.cells, p.warnings))
    return p


def _dedupe(cells: list[CellResult], warnings: list[str]) -> list[CellResult]:
    seen: dict[str, CellResult] = {}
    for c in cells:
        if c.id in seen:
            warnings.append(f"two results for cell {c.id}: the later one is kept.")
        seen[c.id] = c
    return list(seen.values())


# -- the seed's CSVs ---------------------------------------------------------------------------------

_ALIASES = {
    "context": ("context_size", "context_len", "input_len", "context"),
    "concurrency": ("concurrency", "users", "max_concurrency"),
    "success_rate": ("success_rate",),
    "avg_latency": ("avg_latency", "avg_latency_s"),
    "p95_latency": ("p95_latency",),
    "req_per_sec": ("req_per_sec", "throughput_req_sec", "req_per_s", "throughput"),
    "total_time": ("total_time", "duration_s"),
    "ok": ("num_success", "successful_requests"),
    "fail": ("num_failure", "failed_requests", "errors"),
    "tok_per_sec": ("tokens_per_sec", "output_tok_per_s"),
    "avg_ttft": ("avg_ttft",), "p95_ttft": ("p95_ttft",),
    "mean_ttft_ms": ("mean_ttft_ms",), "median_ttft_ms": ("median_ttft_ms",), "p99_ttft_ms": ("p99_ttft_ms",),
    "mean_tpot_ms": ("mean_tpot_ms",), "mean_itl_ms": ("mean_itl_ms",), "status": ("status",),
    "total_tok_per_s": ("total_tok_per_s",),
}


def _col(row: dict[str, str], name: str) -> str | None:
    for a in _ALIASES[name]:
        if a in row and row[a] not in (None, ""):
            return row[a]
    return None


def parse_seed_csv(text: str, output_tokens: int | None = None) -> Parsed:
    """benchmark_sweep_results.csv and its cousins (seed-system.md §2): one row per (context, concurrency)."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    headers = [h.strip() for h in reader.fieldnames or []]
    reader.fieldnames = headers
    if not any(h in headers for h in _ALIASES["context"]) or not any(h in headers for h in _ALIASES["concurrency"]):
        raise ConfigError("This CSV has no context and concurrency columns; it is not a seed benchmark CSV.")
    p = Parsed(format="seed-csv", cells=[])
    for row in reader:
        ctx, conc = _f(_col(row, "context")), _f(_col(row, "concurrency"))
        if ctx is None or conc is None:
            continue
        rps = _f(_col(row, "req_per_sec")) or 0.0
        tps = _f(_col(row, "tok_per_sec"))
        out_tok = output_tokens or (round(tps / rps) if tps and rps else 1)
        sr = _f(_col(row, "success_rate"))
        ok, fail = _f(_col(row, "ok")), _f(_col(row, "fail"))
        if ok is None and sr is not None:  # the seed sent exactly `concurrency` requests per cell
            ok, fail = round(sr * conc), conc - round(sr * conc)
        ok, fail = int(ok or 0), int(fail or 0)
        status_raw = (_col(row, "status") or "").lower()
        status, reason = "complete", ""
        if status_raw.startswith("skipped"):
            status, reason = "infeasible", f"seed status {status_raw}"
        elif status_raw and status_raw != "success":
            reason = f"seed status {status_raw}"
        e2e_mean, e2e_p95 = _f(_col(row, "avg_latency")), _f(_col(row, "p95_latency"))
        ttft_ms = _f(_col(row, "mean_ttft_ms"))
        avg_ttft_s = _f(_col(row, "avg_ttft"))
        p95_ttft_s = _f(_col(row, "p95_ttft"))
        ttft = Dist(count=ok, mean=ttft_ms if ttft_ms is not None else (avg_ttft_s * 1000 if avg_ttft_s else None),
                    p50=_f(_col(row, "median_ttft_ms")), p95=p95_ttft_s * 1000 if p95_ttft_s else None,
                    p99=_f(_col(row, "p99_ttft_ms"))) if (ttft_ms or avg_ttft_s) else Dist()
        tpot_ms = _f(_col(row, "mean_tpot_ms"))
        m = CellMetrics(
            requests=ok + fail, ok=ok, errors=fail, error_rate=round(fail / (ok + fail), 4) if ok + fail else 0.0,
            window_s=_f(_col(row, "total_time")) or 0.0, request_throughput=rps,
            output_throughput=tps if tps is not None else rps * out_tok,
            total_token_throughput=_f(_col(row, "total_tok_per_s")) or rps * (ctx + out_tok),
            prompt_tokens_mean=ctx, completion_tokens_mean=float(out_tok),
            e2e=Dist(count=ok, mean=e2e_mean * 1000 if e2e_mean is not None else None,
                     p95=e2e_p95 * 1000 if e2e_p95 is not None else None) if e2e_mean is not None else Dist(),
            ttft=ttft, tpot=Dist(count=ok, mean=tpot_ms) if tpot_ms is not None else Dist(),
            itl=Dist(count=ok, mean=_f(_col(row, "mean_itl_ms"))) if _col(row, "mean_itl_ms") else Dist())
        if status == "complete" and ok == 0 and fail == 0:
            status, reason = "skipped", "no requests recorded"
        p.cells.append(_cell(int(ctx), int(conc), None, out_tok, m, status=status, reason=reason))
    if not p.cells:
        raise ConfigError("The CSV has a header but no rows with a context and a concurrency.")
    if not output_tokens and "tokens_per_sec" not in headers and "output_tok_per_s" not in headers:
        p.warnings.append("output tokens per request unknown: assumed 1 (the seed's benchmark_sweep.py sent "
                          "max_tokens=1); pass --output-tokens to change.")
    p.cells = _rows(_dedupe(p.cells, p.warnings))
    return p


# -- vllm bench serve, pasted text ------------------------------------------------------------------------

_BLOCK_START = "Serving Benchmark Result"
# Printed labels -> the keys of vllm bench serve's JSON result (the text block prints the same figures).
_TEXT_KEYS = {
    "successful requests": "completed", "failed requests": "failed",
    "maximum request concurrency": "max_concurrency", "max request concurrency": "max_concurrency",
    "traffic request rate": "request_rate", "request rate configured (rps)": "request_rate",
    "benchmark duration (s)": "duration", "total input tokens": "total_input_tokens",
    "total generated tokens": "total_output_tokens", "request throughput (req/s)": "request_throughput",
    "output token throughput (tok/s)": "output_throughput", "total token throughput (tok/s)": "total_token_throughput",
    "request goodput (req/s)": "request_goodput",
}  # fmt: skip
_DIST = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2el"}


def _text_value(raw: str) -> Any:
    raw = raw.strip()
    if raw.lower() in ("inf", "none"):
        return float("inf") if raw.lower() == "inf" else None
    try:
        return int(raw) if raw.lstrip("-").isdigit() else float(raw)
    except ValueError:
        return raw


def text_blocks(text: str) -> list[dict[str, Any]]:
    """Each ``====== Serving Benchmark Result ======`` block of pasted text as a vllm-bench-serve JSON dict.

    Lines are ``Label: value``; the mean/median/P99 latency lines become ``mean_ttft_ms`` etc. A
    ``Traffic request rate`` or ``Maximum request concurrency`` line printed just before the block (vLLM
    prints them above it) belongs to the block that follows. Lines that are not ``label: number`` are skipped.
    """
    blocks: list[dict[str, Any]] = []
    pending: dict[str, Any] = {}
    cur: dict[str, Any] | None = None
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip()
        if _BLOCK_START in line:
            cur = dict(pending)
            pending = {}
            blocks.append(cur)
            continue
        if line.startswith("=") and cur is not None and set(line) == {"="}:
            cur = None
            continue
        if ":" not in line:
            continue
        label, _, value = line.rpartition(":")
        label = label.strip().lower()
        v = _text_value(value)
        if isinstance(v, str):
            continue
        key = _TEXT_KEYS.get(label)
        if key is None:
            parts = label.replace("(ms)", "").split()
            stat = parts[0] if len(parts) == 2 and parts[1] in _DIST else ""
            if stat in ("mean", "median", "std") or (stat[:1] == "p" and stat[1:].replace(".", "").isdigit()):
                key = f"{stat}_{_DIST[parts[1]]}_ms"
        if key is None:
            continue
        (cur if cur is not None else pending)[key] = v
    for b in blocks:
        if b.get("request_rate") is not None and math.isinf(b["request_rate"]):
            b["request_rate"] = None
    return [b for b in blocks if "request_throughput" in b]


def parse_vllm_text(text: str, *, input_len: int | None = None) -> Parsed:
    """Pasted ``vllm bench serve`` output (one or more result blocks); the block does not print the
    configured input length, so the mean prompt length is used unless ``input_len`` is given."""
    blocks = text_blocks(text)
    if not blocks:
        raise ConfigError("The text holds no complete 'Serving Benchmark Result' block (no request throughput line).")
    for b in blocks:
        b.setdefault("failed", 0)  # older versions print no 'Failed requests' line
        if input_len:
            b["random_input_len"] = input_len
        if b.get("max_concurrency") is None and b.get("request_rate") is None:
            b.pop("max_concurrency", None)
            b["num_prompts"] = int(b.get("completed") or 0) + int(b.get("failed") or 0)
    p = parse_vllm(blocks)
    p.format = "vllm-bench-serve-text"
    return p


# -- detection ---------------------------------------------------------------------------------------


def parse(name: str, text: str, *, output_tokens: int | None = None) -> Parsed:
    """Detect the format of one file's text and parse it; unknown formats are a one-sentence ConfigError."""
    stripped = text.lstrip("\ufeff \r\n\t")
    if not stripped:
        raise ConfigError(f"{name} is empty.")
    if stripped[0] in "[{":
        objs: list[Any]
        try:
            doc = json.loads(stripped)
            objs = doc if isinstance(doc, list) else [doc]
        except ValueError:
            try:  # --append-result: one JSON object per line
                objs = [json.loads(line) for line in stripped.splitlines() if line.strip()]
            except ValueError:
                raise ConfigError(f"{name} is not valid JSON or JSON lines.") from None
        if len(objs) == 1 and isinstance(objs[0], dict) and "benchmarks" in objs[0]:
            return parse_guidellm(objs[0])
        if objs and all(isinstance(o, dict) and "request_throughput" in o for o in objs):
            return parse_vllm(objs)
        raise ConfigError(f"{name} is JSON but neither vllm bench serve results (request_throughput, completed...) "
                          "nor a GuideLLM report (benchmarks); supported: vllm bench serve JSON, GuideLLM JSON, "
                          "the seed's benchmark_sweep_results.csv.")
    if _BLOCK_START in stripped:
        return parse_vllm_text(stripped)
    if stripped.startswith("[source]") or "\n[source]" in stripped:
        return parse_corpus_text(name, stripped)
    first = stripped.splitlines()[0]
    if "," in first:
        return parse_seed_csv(stripped, output_tokens)
    raise ConfigError(f"Cannot tell the format of {name}; supported: vllm bench serve JSON or pasted text, "
                      "GuideLLM JSON, the seed's benchmark_sweep_results.csv, an inferctl measurement corpus file.")


# -- the measurement corpus (catalog/corpus.py) as cells: here, because catalog/ is data --------------


def entry_cell(e: Entry) -> CellResult:
    """One corpus entry as a measured cell (context = configured input length, else the mean prompt length)."""
    m, w = e.metrics, e.workload
    done = m.completed or w.num_prompts or 0
    ctx = w.input_len or (round(m.total_input_tokens / done) if m.total_input_tokens and done else 0)
    out = w.output_len or (round(m.total_output_tokens / done) if m.total_output_tokens and done else 0)
    rate = w.request_rate if w.request_rate is not None and not math.isinf(w.request_rate) else None
    conc = w.max_concurrency if w.max_concurrency else (w.num_prompts or done) if rate is None else None

    def dist(mean, median, p99):
        return Dist(count=done, mean=mean, p50=median, p99=p99) if mean is not None or median is not None else Dist()

    metrics = CellMetrics(
        requests=done + (m.failed or 0), ok=done, errors=m.failed or 0, window_s=m.duration_s or 0.0,
        request_throughput=m.request_throughput or 0.0, output_throughput=m.output_throughput or 0.0,
        total_token_throughput=m.total_token_throughput or 0.0,
        prompt_tokens_total=m.total_input_tokens or 0, completion_tokens_total=m.total_output_tokens or 0,
        prompt_tokens_mean=round(m.total_input_tokens / done, 2) if m.total_input_tokens and done else None,
        completion_tokens_mean=round(m.total_output_tokens / done, 2) if m.total_output_tokens and done else None,
        ttft=dist(m.ttft_mean_ms, m.ttft_median_ms, m.ttft_p99_ms),
        tpot=dist(m.tpot_mean_ms, m.tpot_median_ms, m.tpot_p99_ms),
        itl=dist(m.itl_mean_ms, m.itl_median_ms, m.itl_p99_ms))  # fmt: skip
    cid = f"ctx{ctx}-r{rate:g}" if rate is not None else f"ctx{ctx}-c{conc}"
    return CellResult(id=cid, context=ctx, concurrency=conc, rate=rate, output_tokens=out, status="complete",
                      metrics=metrics)  # fmt: skip


def parse_corpus_text(name: str, text: str) -> Parsed:
    """A corpus file as an importer result: one cell per entry, the entries kept in ``facts``."""
    from inferctl.catalog.corpus import parse_file

    cf = parse_file(name, text)
    p = Parsed(format="inferctl-corpus", cells=[entry_cell(e) for e in cf.entries])
    p.facts = {"source": cf.source.model_dump(), "entries": cf.entries}
    models = {e.model for e in cf.entries}
    p.model = models.pop() if len(models) == 1 else None
    return p
