"""Run directories: the one result format measured, imported and simulated sweeps share.

See docs/run-format.md for the contract. In short::

    <runs>/<YYYYmmdd-HHMMSS>-<target>/
      meta.json            run metadata (format_version, source, target, model, grid, ...)
      requests.jsonl       one line per request, appended and flushed as each one ends
      cells.jsonl          one line per finished cell attempt, appended (the crash-safe truth)
      cells.json           the latest result of every cell (rewritten atomically)
      cells.csv            the same, flattened
      server_metrics.jsonl /metrics snapshots before and after every cell

Crash safety: appends are flushed per line (a killed process loses only requests in flight; the
OS keeps what was written). A torn last line (no newline, not JSON: the process died mid-write) is
skipped on read and cut off on resume. A cell counts only once its line is in cells.jsonl; its
requests are the records with that cell's final ``attempt``, so records of an interrupted attempt are
kept for audit but never counted.

Damage is not crash damage: an unreadable line anywhere else (or a cells.json that is not JSON) is a
``RunDamaged`` error naming the file and the line, never a traceback; ``runs list`` marks such a run
and lists the others, and ``--resume`` refuses it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from inferctl.bench.agreement import MetricAgreement
from inferctl.bench.cachecheck import PrefixCacheCheck
from inferctl.bench.records import RequestRecord
from inferctl.bench.stats import CellMetrics, ClientHealth
from inferctl.errors import ConfigError
from inferctl.redact import redact_argv, redact_url

FORMAT_VERSION = 1
Source = Literal["measured", "imported", "simulated"]
# failed: requests were sent and none succeeded (the reason says why).
CellStatus = Literal["complete", "failed", "infeasible", "skipped", "aborted"]


class RunDamaged(ConfigError):
    """A file of a run directory has a line that cannot be read (not a torn last line)."""

    def __init__(self, run: Path, file: str, line: int | None, problem: str) -> None:
        self.run, self.file, self.line, self.problem = run, file, line, problem
        super().__init__(f"Run {run.name} is damaged: {self.where}.")

    @property
    def where(self) -> str:
        """'requests.jsonl line 7 is not a JSON object (a number (5))'."""
        return f"{self.file} line {self.line} {self.problem}" if self.line else f"{self.file} {self.problem}"


class CellResult(BaseModel):
    """One cell's outcome: its grid position, its metrics, and the server's and client's view."""

    id: str
    row: int = 0
    context: int
    concurrency: int | None = None
    rate: float | None = None
    output_tokens: int
    attempt: int = 0
    status: CellStatus = "complete"
    reason: str = ""
    started_at: float | None = None
    ended_at: float | None = None
    requests_planned: int | None = None
    warmup: int = 0
    metrics: CellMetrics = Field(default_factory=CellMetrics)
    server: dict[str, Any] = Field(default_factory=dict, description="ServerCellStats as a dict.")
    client: ClientHealth = Field(default_factory=ClientHealth)
    agreement: list[MetricAgreement] = Field(
        default_factory=list, description="Client p50s next to vLLM's own histograms (bench/agreement.py).")
    prefix_cache: PrefixCacheCheck | None = Field(
        default=None, description="Server prefix-cache hit rate vs what the workload shares (None: not exposed).")


class RunMeta(BaseModel):
    """meta.json."""

    format_version: int = FORMAT_VERSION
    source: Source = "measured"
    run_id: str
    # failed: the sweep ran to its end but no request of any cell succeeded (``reason`` says why).
    status: Literal["running", "complete", "failed", "interrupted"] = "running"
    reason: str = Field(default="", description="Why a run failed; empty otherwise.")
    target: dict[str, Any] = Field(default_factory=dict, description="name and url (never credentials); image when "
                                   "the target is a deployment profile.")
    model: str | None = None
    model_root: str | None = None
    max_model_len: int | None = None
    vllm_version: str | None = None
    engine: dict[str, Any] = Field(default_factory=dict, description="cache_config_info labels and /v1/models.")
    grid: dict[str, Any] = Field(default_factory=dict, description="The SweepSpec.")
    workload: dict[str, Any] = Field(default_factory=dict, description="Prompt calibration facts.")
    inferctl_version: str | None = None
    host: dict[str, Any] = Field(default_factory=dict)
    command: list[str] = Field(default_factory=list, description="The command line (credentials redacted).")
    started_at: float | None = None
    ended_at: float | None = None
    resumed_at: list[float] = Field(default_factory=list)

    # Validators run on construction and on load, so a meta.json neither gets a credential written
    # into it nor shows one that an older inferctl stored (reports, `runs show`, resume all read it here).
    @field_validator("target")
    @classmethod
    def _no_credentials_in_url(cls, value: dict[str, Any]) -> dict[str, Any]:
        if isinstance(value.get("url"), str):
            value = {**value, "url": redact_url(value["url"])}
        return value

    @field_validator("command")
    @classmethod
    def _no_credentials_in_command(cls, value: list[str]) -> list[str]:
        return redact_argv(value)


def runs_dir(path: str | os.PathLike | None = None) -> Path:
    """--runs-dir, else INFERCTL_RUNS_DIR, else <data dir>/runs."""
    if path:
        return Path(path).expanduser()
    env = os.environ.get("INFERCTL_RUNS_DIR")
    if env:
        return Path(env).expanduser()
    from inferctl.config import data_dir

    return data_dir() / "runs"


def new_run_id(target_name: str, now: float | None = None) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    return f"{stamp}-{re.sub(r'[^A-Za-z0-9._-]+', '-', target_name) or 'run'}"


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _describe(value: Any) -> str:
    if isinstance(value, bool | int | float | str):
        text = repr(value)
        return text if len(text) <= 40 else text[:37] + "..."
    return f"a {type(value).__name__}"


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) of every line of a JSONL file.

    A torn last line (no newline at the end and not JSON: the writer died mid-line) is skipped; any
    other line that is not a JSON object raises ``RunDamaged`` naming the file and the line.
    """
    if not path.exists():
        return
    with path.open("rb") as f:
        for n, raw in enumerate(f, start=1):
            text = raw.strip()
            if not text:
                continue
            try:
                value = json.loads(text)
            except (ValueError, RecursionError):
                if not raw.endswith(b"\n"):
                    continue  # torn by a kill: only the last line can lack its newline
                shown = _describe(text.decode("utf-8", "replace"))
                raise RunDamaged(path.parent, path.name, n, f"is not JSON ({shown})") from None
            if not isinstance(value, dict):
                raise RunDamaged(path.parent, path.name, n, f"is not a JSON object ({_describe(value)})")
            yield n, value


def torn_tail(path: Path) -> bool:
    """True when the file ends with a partial line that is not JSON (left by a kill mid-write)."""
    if not path.exists() or not path.stat().st_size:
        return False
    with path.open("rb") as f:
        f.seek(max(0, path.stat().st_size - (1 << 20)))  # a record is far shorter than 1 MiB
        data = f.read()
    if data.endswith(b"\n"):
        return False
    tail = data.rsplit(b"\n", 1)[-1].strip()
    try:
        json.loads(tail)
    except (ValueError, RecursionError):
        return True
    return False


class RunDir:
    """One run directory, opened for writing (a sweep) or reading (runs show, reports)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._requests = None
        self._server = None
        self._cells = None

    @classmethod
    def create(cls, root: Path, run_id: str) -> RunDir:
        """A new, empty directory ``root/run_id``, or ``run_id-2``, ``-3``... when that is taken.

        mkdir is the claim (atomic): two sweeps started in the same second, in threads or processes, never
        share a directory, and nobody checks-then-creates.
        """
        root.mkdir(parents=True, exist_ok=True)
        for n in range(1, 10_000):
            path = root / (run_id if n == 1 else f"{run_id}-{n}")
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return cls(path)
        raise ConfigError(f"Could not create a new run directory for {run_id} under {root}: 9,999 are taken.")

    @classmethod
    def open(cls, ref: str, root: Path | None = None) -> RunDir:
        """A run by path, by id under ``root``, or by unique id prefix; ``latest`` is the newest."""
        root = root or runs_dir()
        if not ref.strip():  # "" would be the current directory, or a prefix of every run
            raise ConfigError("Name a run: an id, an id prefix, a path or 'latest' (see `inferctl runs list`).")
        p = Path(ref).expanduser()
        if (p / "meta.json").exists():
            return cls(p)
        if ref == "latest":
            runs = list_runs(root)
            if not runs:
                raise ConfigError(f"No runs under {root}.")
            return cls(runs[-1])
        if (root / ref / "meta.json").exists():
            return cls(root / ref)
        matches = [r for r in list_runs(root) if r.name.startswith(ref)]
        if len(matches) == 1:
            return cls(matches[0])
        if matches:
            raise ConfigError(f"Run '{ref}' is ambiguous: {', '.join(m.name for m in matches[:5])}.")
        raise ConfigError(f"No run '{ref}' under {root}; see `inferctl runs list`.")

    # -- meta -----------------------------------------------------------------------------

    def write_meta(self, meta: RunMeta) -> None:
        _atomic_write(self.path / "meta.json", meta.model_dump_json(indent=2) + "\n")

    def read_meta(self) -> RunMeta:
        try:
            raw = json.loads((self.path / "meta.json").read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunDamaged(self.path, "meta.json", exc.lineno, f"is not valid JSON ({exc.msg})") from None
        except (OSError, UnicodeDecodeError, RecursionError) as exc:
            raise ConfigError(f"{self.path}/meta.json is missing or unreadable ({type(exc).__name__}).") from None
        try:
            return RunMeta.model_validate(raw)
        except ValueError as exc:
            raise RunDamaged(self.path, "meta.json", None, f"is not run metadata ({_first_error(exc)})") from None

    # -- appends --------------------------------------------------------------------------

    def _append_handle(self, name: str):
        path = self.path / name
        # Resume after a kill: the last line may be torn; start ours on a fresh line.
        if path.exists() and path.stat().st_size:
            with path.open("rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
            if torn:
                with path.open("a", encoding="utf-8") as f:
                    f.write("\n")
        return path.open("a", encoding="utf-8", buffering=1 << 16)

    def append_request(self, rec: RequestRecord) -> None:
        if self._requests is None:
            self._requests = self._append_handle("requests.jsonl")
        self._requests.write(rec.to_json() + "\n")
        self._requests.flush()

    def append_server(self, cell: str, attempt: int, entries: list[dict[str, Any]]) -> None:
        if self._server is None:
            self._server = self._append_handle("server_metrics.jsonl")
        for e in entries:
            self._server.write(json.dumps({"cell": cell, "attempt": attempt, **e}, separators=(",", ":")) + "\n")
        self._server.flush()

    def append_cell(self, result: CellResult) -> None:
        if self._cells is None:
            self._cells = self._append_handle("cells.jsonl")
        self._cells.write(result.model_dump_json() + "\n")
        self._cells.flush()
        os.fsync(self._cells.fileno())  # a finished cell is the unit of progress: make it durable
        self.write_cells(self.cells())

    def close(self) -> None:
        for h in (self._requests, self._server, self._cells):
            if h is not None:
                h.close()
        self._requests = self._server = self._cells = None

    # -- reads ----------------------------------------------------------------------------

    def cells(self) -> list[CellResult]:
        """The latest result of every cell, in first-seen order; ``RunDamaged`` names an unreadable line."""
        latest: dict[str, CellResult] = {}
        for n, d in _iter_jsonl(self.path / "cells.jsonl"):
            try:
                r = CellResult.model_validate(d)
            except ValueError as exc:
                raise RunDamaged(self.path, "cells.jsonl", n, f"is not a cell result ({_first_error(exc)})") from None
            latest[r.id] = r
        if not latest and (self.path / "cells.json").exists():  # imported/simulated runs may only have this
            return self._cells_json()
        return list(latest.values())

    def _cells_json(self) -> list[CellResult]:
        path = self.path / "cells.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise RunDamaged(self.path, "cells.json", exc.lineno, f"is not valid JSON ({exc.msg})") from None
        except (OSError, UnicodeDecodeError, RecursionError) as exc:
            raise RunDamaged(self.path, "cells.json", None, f"cannot be read ({type(exc).__name__})") from None
        if not isinstance(data, list):
            raise RunDamaged(self.path, "cells.json", None, f"is not a list of cells ({_describe(data)})")
        out = []
        for i, c in enumerate(data):
            try:
                out.append(CellResult.model_validate(c))
            except ValueError as exc:
                raise RunDamaged(self.path, "cells.json", None,
                                 f"has an entry #{i + 1} that is not a cell result ({_first_error(exc)})") from None
        return out

    def attempts(self) -> dict[str, int]:
        """Highest attempt number seen in requests.jsonl per cell (to number a resumed attempt)."""
        out: dict[str, int] = {}
        for n, d in _iter_jsonl(self.path / "requests.jsonl"):
            c, a = d.get("cell"), d.get("attempt", 0)
            if not isinstance(c, str) or isinstance(a, bool) or not isinstance(a, int):
                raise RunDamaged(self.path, "requests.jsonl", n, "is not a request record (its cell or attempt is "
                                 "missing or of the wrong type)")
            if a >= out.get(c, -1):
                out[c] = a
        return out

    def prepare_resume(self) -> list[str]:
        """Check that the run can be continued; cut off torn last lines. Returns what was done, as notes.

        A partial last line (the process died mid-write) is expected crash damage: it is dropped and the
        sweep goes on. An unreadable line anywhere else raises ``RunDamaged``.
        """
        notes = []
        for name in ("cells.jsonl", "requests.jsonl", "server_metrics.jsonl"):
            path = self.path / name
            if torn_tail(path):
                size = path.stat().st_size
                with path.open("r+b") as f:
                    f.seek(max(0, size - (1 << 20)))
                    tail = f.read()
                    keep = size - len(tail) + tail.rfind(b"\n") + 1
                    f.truncate(keep)
                notes.append(f"{name} ended with a partial line (the sweep was stopped mid-write); "
                             f"dropped it ({size - keep} bytes) and resuming.")
        self.cells()
        self.attempts()
        return notes

    def requests(self, *, counted_only: bool = True) -> Iterator[RequestRecord]:
        """Request records; by default only those of each cell's final, finished attempt."""
        final = {c.id: c.attempt for c in self.cells()} if counted_only else None
        for _, d in _iter_jsonl(self.path / "requests.jsonl"):
            if final is not None and final.get(d.get("cell")) != d.get("attempt", 0):
                continue
            try:
                yield RequestRecord.from_json(d)
            except (KeyError, TypeError):
                continue

    def write_cells(self, cells: list[CellResult]) -> None:
        _atomic_write(self.path / "cells.json",
                      json.dumps([c.model_dump(mode="json") for c in cells], indent=1) + "\n")
        _atomic_write(self.path / "cells.csv", cells_csv(cells))


def _first_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        first = errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the entry"
        return f"{where}: {first['msg']}"
    return str(exc).splitlines()[0][:120]


CSV_COLUMNS = [
    "cell", "context", "concurrency", "rate", "output_tokens", "status", "requests", "ok", "errors", "timeout",
    "infeasible", "error_rate", "request_throughput", "output_throughput", "total_token_throughput", "goodput",
    "ttft_p50_ms", "ttft_p95_ms", "ttft_p99_ms", "tpot_p50_ms", "tpot_p95_ms", "itl_p50_ms", "itl_p99_ms",
    "e2e_mean_ms", "e2e_p50_ms", "e2e_p95_ms", "queue_wait_p95_ms", "prompt_tokens_mean",
    "completion_tokens_mean", "achieved_concurrency", "client_bound", "kv_cache_usage_peak", "preemptions",
]


def cells_csv(cells: list[CellResult]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for c in cells:
        m = c.metrics
        w.writerow([
            c.id, c.context, c.concurrency, c.rate, c.output_tokens, c.status, m.requests, m.ok, m.errors,
            m.timeout, m.infeasible, m.error_rate, m.request_throughput, m.output_throughput,
            m.total_token_throughput, m.goodput, m.ttft.p50, m.ttft.p95, m.ttft.p99, m.tpot.p50, m.tpot.p95,
            m.itl.p50, m.itl.p99, m.e2e.mean, m.e2e.p50, m.e2e.p95, m.queue_wait.p95, m.prompt_tokens_mean,
            m.completion_tokens_mean, c.client.achieved_concurrency, c.client.client_bound,
            c.server.get("kv_cache_usage_peak"), c.server.get("preemptions"),
        ])
    return buf.getvalue()


SEED_COLUMNS = ["context_size", "concurrency", "success_rate", "avg_latency", "p95_latency", "req_per_sec",
                "total_time", "num_success", "num_failure", "tokens_per_sec", "avg_ttft", "p95_ttft"]


def seed_csv(cells: list[CellResult]) -> str:
    """The seed system's benchmark_sweep_results.csv columns (seconds, like the seed), plus TTFT.

    The seed's nine columns come first in its order so old spreadsheets line up; ``tokens_per_sec``
    (output tokens/s), ``avg_ttft`` and ``p95_ttft`` follow. Infeasible and skipped cells are kept
    with success_rate 0 and empty latencies (the seed wrote ``skipped_capacity_limit`` rows).
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SEED_COLUMNS)

    def s(ms: float | None) -> str:
        return "" if ms is None else f"{ms / 1000.0:.4f}"

    for c in cells:
        m = c.metrics
        sent = m.ok + m.errors
        w.writerow([
            c.context, c.concurrency if c.concurrency is not None else "", f"{(m.ok / sent) if sent else 0:.4f}",
            s(m.e2e.mean), s(m.e2e.p95), f"{m.request_throughput:.4f}", f"{m.window_s:.3f}", m.ok,
            m.errors + m.infeasible, f"{m.output_throughput:.3f}", s(m.ttft.mean), s(m.ttft.p95),
        ])
    return buf.getvalue()


def list_runs(root: Path | None = None) -> list[Path]:
    """Run directories under ``root``, oldest first (names start with a timestamp)."""
    root = root or runs_dir()
    if not root.exists():
        return []
    return sorted(p for p in root.iterdir() if (p / "meta.json").exists())
