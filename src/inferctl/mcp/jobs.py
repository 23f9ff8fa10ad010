"""Benchmarks started from MCP run in their own process; a job file says how far they got.

A sweep can take hours and no MCP call may hold a client for more than ~30 s, so ``start`` writes a job
file and spawns ``python -m inferctl.mcp.jobs JOBFILE`` (an argument list, never a shell; the grid travels
in the file, not on a command line). The child runs the same ``ops.bench.sweep`` the CLI runs and rewrites
the job file as cells finish. Being a separate session, it survives the MCP server exiting (stdio clients
close servers freely); its results are appended to the run directory as they arrive, so a killed job is
resumable with ``start_benchmark(resume=RUN)``. Job files live in ``<state dir>/mcp-jobs/``.

Only the child writes a job file after it starts (atomic replace), so readers never see a torn file.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from inferctl.errors import ConfigError
from inferctl.redact import redact_url

# A URL target with credentials reaches the child in this environment variable; the job file (on disk,
# and what get_benchmark_status shows) holds the URL without them.
_URL_ENV = "INFERCTL_JOB_TARGET_URL"

JobStatus = Literal["starting", "running", "complete", "failed", "interrupted"]
TERMINAL = ("complete", "failed", "interrupted")
START_GRACE_S = 120.0  # a child that has not reported by then is taken as dead


class BenchJob(BaseModel):
    """One background benchmark, as its job file records it."""

    job_id: str
    status: JobStatus = "starting"
    target: str | None = None
    pid: int | None = None
    run_id: str | None = None
    run_path: str | None = None
    cells_total: int | None = None
    cells_done: int = 0
    current_cell: str | None = None
    error: str | None = None
    notes: list[str] = Field(default_factory=list)
    started_at: float
    updated_at: float
    log_path: str
    request: dict[str, Any] = Field(default_factory=dict, description="target, grid (SweepSpec) and resume.")


def jobs_dir() -> Path:
    from inferctl.config import state_dir

    return state_dir() / "mcp-jobs"


def _path(job_id: str) -> Path:
    return jobs_dir() / f"{job_id}.json"


def _write(path: Path, job: BenchJob) -> None:
    job.updated_at = time.time()
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(job.model_dump_json(indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _read(path: Path) -> BenchJob | None:
    try:
        return BenchJob.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def all_jobs() -> list[BenchJob]:
    directory = jobs_dir()
    if not directory.is_dir():
        return []
    jobs = [j for p in directory.glob("job-*.json") if (j := _read(p)) is not None]
    return sorted((refresh(j) for j in jobs), key=lambda j: j.started_at)


def find(ref: str) -> BenchJob | None:
    """A job by its id, or the job that produced run ``ref``."""
    if ref.startswith("job-") and (job := _read(_path(ref))) is not None:
        return refresh(job)
    matches = [j for j in all_jobs() if j.run_id == ref]
    return matches[-1] if matches else None


def refresh(job: BenchJob) -> BenchJob:
    """A job whose process is gone without saying so was killed: report it as interrupted."""
    from inferctl.local.state import pid_alive

    if job.status in TERMINAL:
        return job
    if job.pid is not None and not pid_alive(job.pid):
        job.status = "interrupted"
        job.error = (f"The benchmark process ended without finishing (see {job.log_path}); completed cells are "
                     "kept" + ("; resume with start_benchmark(resume=...)" if job.run_id else "") + ".")
    elif job.pid is None and time.time() - job.started_at > START_GRACE_S:
        job.status, job.error = "failed", f"The benchmark process never started; see {job.log_path}."
    return job


def active_for(target: str | None) -> BenchJob | None:
    """A job still running against ``target`` (two sweeps on one server would spoil both)."""
    shown = redact_url(target) if target else target
    for job in all_jobs():
        if job.status not in TERMINAL and job.target == shown:
            return job
    return None


def start(target: str | None, grid: dict[str, Any] | None, resume: str | None, model: str | None = None) -> BenchJob:
    """Write the job file and spawn the child; returns at once (status 'starting')."""
    directory = jobs_dir()
    directory.mkdir(parents=True, exist_ok=True)
    job_id = f"job-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"
    path = _path(job_id)
    log_path = directory / f"{job_id}.log"
    now = time.time()
    shown = redact_url(target) if target else target
    job = BenchJob(job_id=job_id, target=shown, started_at=now, updated_at=now, log_path=str(log_path),
                   request={"target": shown, "model": model, "grid": grid, "resume": resume})
    _write(path, job)
    env = dict(os.environ)
    env.pop(_URL_ENV, None)
    if target and shown != target:
        env[_URL_ENV] = target
    with log_path.open("ab") as log:
        subprocess.Popen(  # noqa: S603 - a fixed argument list; the grid is in the job file
            [sys.executable, "-m", "inferctl.mcp.jobs", str(path)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True, close_fds=True, env=env,
        )
    return job


# -- the child ---------------------------------------------------------------------------------------


class _JobReporter:
    """The sweep's Reporter: every event rewrites the job file."""

    def __init__(self, path: Path, job: BenchJob) -> None:
        self.path, self.job = path, job

    def sweep_start(self, meta, cells, done: int) -> None:
        self.job.status = "running"
        self.job.run_id = meta.run_id
        self.job.cells_total, self.job.cells_done = len(cells), done
        from inferctl.bench.store import runs_dir

        self.job.run_path = str(runs_dir() / meta.run_id)
        _write(self.path, self.job)

    def cell_start(self, cell, live) -> None:
        self.job.current_cell = cell.id
        _write(self.path, self.job)

    def cell_end(self, result) -> None:
        self.job.cells_done += 1
        self.job.current_cell = None
        _write(self.path, self.job)

    def note(self, text: str) -> None:
        self.job.notes = [*self.job.notes, text][-5:]
        _write(self.path, self.job)


def run_job(path: Path) -> int:
    """Run the sweep a job file describes (the child's whole life)."""
    import asyncio
    import signal

    from inferctl.bench.spec import SweepSpec
    from inferctl.errors import InferctlError
    from inferctl.ops import bench
    from inferctl.ops.targets import resolve_target

    job = _read(path)
    if job is None:
        print(f"unreadable job file {path}", file=sys.stderr)  # noqa: T201 - the log file is stderr
        return 2
    job.pid, job.status = os.getpid(), "running"
    _write(path, job)

    def stop(signum, frame):  # SIGTERM -> KeyboardInterrupt, so the sweep marks its run interrupted
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    req = job.request
    try:
        name, model = os.environ.get(_URL_ENV) or req.get("target"), req.get("model")
        if name and name.startswith(("http://", "https://")):  # a URL target: no credentials, as in the server
            target = resolve_target(url=name, model=model)
        elif name or not req.get("resume"):
            target = resolve_target(name, model=model)
        else:
            target = None  # resume: the run's recorded target
        spec = SweepSpec.model_validate(req["grid"]) if req.get("grid") else None
        summary = asyncio.run(bench.sweep(target, spec, resume=req.get("resume"), reporter=_JobReporter(path, job),
                                          command=["inferctl", "mcp", "start_benchmark", job.job_id]))
        job.status, job.run_id, job.run_path = "complete", summary.run_id, summary.path
        if summary.status == "failed":  # ran to the end, measured nothing
            job.status, job.error = "failed", f"Run {summary.run_id} failed: {summary.reason}."
        job.cells_done = summary.cells_total - summary.cells_aborted - summary.cells_skipped
    except InferctlError as exc:
        job.status, job.error = "failed", str(exc)
    except KeyboardInterrupt:
        job.status, job.error = "interrupted", "Stopped by a signal; completed cells are kept."
    except Exception as exc:  # noqa: BLE001 - recorded for the poller; the traceback goes to the log
        import traceback

        traceback.print_exc()
        job.status, job.error = "failed", f"The benchmark crashed ({type(exc).__name__}); see {job.log_path}."
    job.current_cell = None
    _write(path, job)
    return 0 if job.status == "complete" else 1


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        raise ConfigError("usage: python -m inferctl.mcp.jobs JOBFILE")
    return run_job(Path(args[0]))


if __name__ == "__main__":
    sys.exit(main())

