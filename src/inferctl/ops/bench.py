"""Benchmark use cases shared by the CLI and the MCP server: sweep, one cell, list/show/export runs."""

from __future__ import annotations

import getpass
import os
import platform
import socket
import sys
import time
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl import __version__
from inferctl.bench import workload as wl
from inferctl.bench.spec import SweepSpec
from inferctl.bench.store import (
    CellResult,
    RunDamaged,
    RunDir,
    RunMeta,
    list_runs,
    new_run_id,
    runs_dir,
    seed_csv,
)
from inferctl.bench.sweep import NullReporter, Reporter, Sweep, engine_facts, run_failure
from inferctl.config import Target
from inferctl.errors import ConfigError
from inferctl.ops.targets import resolve_target
from inferctl.plan.provenance import Provenance
from inferctl.redact import MASK, redact_argv
from inferctl.server.client import VLLMClient


class SweepSummary(BaseModel):
    """The outcome of a sweep (``inferctl bench sweep --json``)."""

    run_id: str
    path: str
    status: str
    model: str | None = None
    cells_total: int = 0
    reason: str = Field(default="", description="Why the run failed, when it did.")
    cells_complete: int = 0
    cells_failed: int = 0
    cells_infeasible: int = 0
    cells_skipped: int = 0
    cells_aborted: int = 0
    client_bound_cells: list[str] = Field(default_factory=list)
    cells: list[CellResult] = Field(default_factory=list)
    provenance: Provenance | None = Field(default=None, description="Simulated runs: the speed parameters and "
                                          "config reader used, and the speed model's measured error band.")


class RunInfo(BaseModel):
    """One line of ``inferctl runs list``."""

    run_id: str
    path: str
    source: str
    status: str
    target: str | None = None
    model: str | None = None
    started_at: float | None = None
    cells_done: int = 0
    cells_total: int | None = None
    problem: str | None = Field(default=None, description="Why the run cannot be read (status 'damaged'); "
                                                          "None for a readable run.")


class RunList(BaseModel):
    root: str
    runs: list[RunInfo] = Field(default_factory=list)


class RunDetail(BaseModel):
    """``inferctl runs show``: meta plus every cell."""

    path: str
    meta: RunMeta
    cells: list[CellResult]


def _host() -> dict:
    return {"hostname": socket.gethostname(), "platform": platform.platform(), "python": platform.python_version(),
            "cpus": os.cpu_count(), "user": getpass.getuser() if hasattr(os, "getuid") else None}


def _summary(store: RunDir, meta: RunMeta, cells: list[CellResult], total: int) -> SweepSummary:
    s = SweepSummary(run_id=store.path.name, path=str(store.path), status=meta.status, reason=meta.reason,
                     model=meta.model, cells_total=total, cells=cells)
    for c in cells:
        if c.status == "complete":
            s.cells_complete += 1
        else:
            setattr(s, f"cells_{c.status}", getattr(s, f"cells_{c.status}") + 1)
        if c.client.client_bound:
            s.client_bound_cells.append(c.id)
    return s


async def sweep(
    target: Target | None,
    spec: SweepSpec | None,
    *,
    root: str | Path | None = None,
    resume: str | None = None,
    reporter: Reporter | None = None,
    command: list[str] | None = None,
) -> SweepSummary:
    """Run (or resume) a sweep and return its summary; results land in the run directory as they come.

    ``resume`` is a run id/path: its grid comes from meta.json and only missing cells run. Its
    target is the one recorded unless ``target`` is given.
    """
    reporter = reporter or NullReporter()
    base = runs_dir(root)
    if resume:
        store = RunDir.open(resume, base)
        meta = store.read_meta()
        if meta.source != "measured":
            raise ConfigError(f"Run {store.path.name} is {meta.source}, not measured; it cannot be resumed.")
        try:
            for note in store.prepare_resume():
                reporter.note(note)
        except RunDamaged as exc:
            raise ConfigError(f"Run {store.path.name} cannot be resumed: {exc.where}; a line in the middle of the "
                              "file is damage, not a crash (start a new sweep, or repair the line).") from None
        spec = SweepSpec.model_validate(meta.grid)
        if target is None:
            target = _recorded_target(meta)
        meta.resumed_at.append(time.time())
    else:
        if spec is None or target is None:
            raise ConfigError("A sweep needs a target and a grid.")
        spec.validate_grid()
        store, meta = None, None
    async with VLLMClient(target, max_connections=8) as client:
        served = await client.resolve_model(target.model or (meta.model if meta else None))
        if meta is None:
            store = RunDir.create(base, new_run_id(target.name))
            meta = RunMeta(
                run_id=store.path.name, model=served.id,
                # a deployment profile's target also says which image it runs (vllm_version is the server's word)
                target={"name": target.name, "url": target.display_url,
                        **({"image": target.image} if target.image else {})},
                model_root=served.root, max_model_len=served.max_model_len, vllm_version=await client.version(),
                engine={"models": [served.model_dump(mode="json")], **(await engine_facts(client))},
                grid=spec.model_dump(mode="json"), inferctl_version=__version__, host=_host(),
                command=redact_argv(command or []), started_at=time.time(),
            )
        assert store is not None
        workload = await wl.prepare(client, served.id, api=spec.api, output_tokens=spec.output_tokens,
                                    ignore_eos=spec.ignore_eos, seed=spec.seed, shared_prefix=spec.shared_prefix,
                                    extra=spec.extra_body, tokenizer=spec.tokenizer)
        ov = workload.overheads
        meta.workload = {"api": spec.api, "alphabet_words": len(workload.alphabet.words),
                         "chat_template": ov.chat_template,
                         "chat_template_tokens": ov.chat if ov.chat_template else None,
                         "special_tokens": ov.completions, "head_tokens": wl.HEAD_TOKENS,
                         "shared_prefix": spec.shared_prefix,
                         "tokenizer": workload.tokenizer.description if workload.tokenizer else workload.approximation,
                         "exact_lengths": workload.exact}
        if not workload.exact:
            meta.workload["tokens_per_word"] = round(workload.tokens_per_word, 4)
            reporter.note(f"{served.id}: prompt lengths are {workload.approximation}; every request still records "
                          "the prefill the server reported.")
        if workload.exact and not ov.chat_template:
            meta.workload["chat_template_error"] = ov.chat_error
            if spec.api == "chat":
                reporter.note(f"{served.id}: /tokenize could not apply a chat template ({ov.chat_error}); chat "
                              "prompts are not calibrated for template tokens and the server may reject chat "
                              "requests — consider --api completions. usage.prompt_tokens still records the "
                              "prefill the server saw.")
        meta.status = "running"
        store.write_meta(meta)
        try:
            cells = await Sweep(client, store, meta, spec, workload, reporter).run()
            failure = run_failure(cells)
            meta.status, meta.reason = ("failed", failure) if failure else ("complete", "")
        except BaseException:
            meta.status = "interrupted"
            raise
        finally:
            meta.ended_at = time.time()
            store.write_meta(meta)
            store.close()
    return _summary(store, meta, cells, len(spec.cells()))


def _recorded_target(meta: RunMeta) -> Target:
    """The run's own target: by name when the config still has it (auth included), else its URL."""
    t = meta.target
    if t.get("name") not in (None, "url"):
        try:
            found = resolve_target(t["name"], model=meta.model)
            if found.display_url == t.get("url") or found.local:
                return found
        except ConfigError:
            pass
    if MASK in t["url"]:
        raise ConfigError(f"Run {meta.run_id} was measured at a URL with credentials, which runs never store; "
                          "resume it with --url and the full URL.")
    return resolve_target(url=t["url"], model=meta.model)


def list_all(root: str | Path | None = None) -> RunList:
    """Every run directory under the runs root, oldest first."""
    base = runs_dir(root)
    out = RunList(root=str(base))
    for path in list_runs(base):
        store = RunDir(path)
        try:
            meta = store.read_meta()
        except ConfigError as exc:  # listed, marked: one unreadable run must not hide the others
            out.runs.append(RunInfo(run_id=path.name, path=str(path), source="?", status="damaged",
                                    problem=str(exc)))
            continue
        total = None
        if meta.grid:
            try:
                total = len(SweepSpec.model_validate(meta.grid).cells())
            except ValueError:
                total = None
        info = RunInfo(run_id=path.name, path=str(path), source=meta.source, status=meta.status,
                       target=meta.target.get("name"), model=meta.model, started_at=meta.started_at,
                       cells_total=total)
        try:
            info.cells_done = len(store.cells())
        except RunDamaged as exc:
            info.status, info.problem = "damaged", str(exc)
        out.runs.append(info)
    return out


def show(ref: str, root: str | Path | None = None) -> RunDetail:
    """One run: meta.json and every cell's result."""
    store = RunDir.open(ref, runs_dir(root))
    return RunDetail(path=str(store.path), meta=store.read_meta(), cells=store.cells())


def export(ref: str, fmt: str = "seed-csv", root: str | Path | None = None) -> str:
    """A run as text: ``seed-csv`` (the seed's columns), ``csv`` (cells.csv) or ``jsonl`` (counted requests)."""
    store = RunDir.open(ref, runs_dir(root))
    cells = store.cells()
    if fmt == "seed-csv":
        return seed_csv(cells)
    if fmt == "csv":
        from inferctl.bench.store import cells_csv

        return cells_csv(cells)
    if fmt == "jsonl":
        return "".join(r.to_json() + "\n" for r in store.requests())
    raise ConfigError(f"Unknown export format '{fmt}'; use seed-csv, csv or jsonl.")


def argv() -> list[str]:
    """The command line, for meta.json (``run`` stores it through ``redact_argv``)."""
    return [os.path.basename(sys.argv[0]), *sys.argv[1:]]
