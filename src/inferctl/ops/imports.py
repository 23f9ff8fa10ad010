"""`inferctl import FILE...`: other tools' results become a run directory (``source: imported``)."""

from __future__ import annotations

import time
from pathlib import Path

from pydantic import BaseModel, Field

from inferctl import __version__
from inferctl.bench.store import CellResult, RunDir, RunMeta, new_run_id, runs_dir
from inferctl.errors import ConfigError


class ImportResult(BaseModel):
    """``inferctl import --json``."""

    run_id: str
    path: str
    format: str = Field(description="vllm-bench-serve | guidellm | seed-csv")
    files: list[str]
    cells: int
    contexts: list[int]
    loads: list[float] = Field(description="Concurrencies (or rates) found.")
    warnings: list[str] = Field(default_factory=list)
    runs: list[str] = Field(default_factory=list, description="Corpus files: one run directory per entry.")


def import_files(files: list[str | Path], *, root: str | Path | None = None, label: str | None = None,
                 hardware: str | None = None, model: str | None = None, output_tokens: int | None = None,
                 command: list[str] | None = None) -> ImportResult:
    """Parse one or more result files of one format and write them as one imported run."""
    from inferctl.report.importers import parse

    if not files:
        raise ConfigError("Nothing to import; pass one or more result files.")
    cells: dict[str, CellResult] = {}
    fmt, found_model, started, warnings = None, None, None, []
    for f in files:
        path = Path(f).expanduser()
        if path.is_dir():
            raise ConfigError(f"{path.resolve()} is a directory; import takes result files (JSON or the seed's CSV).")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot read {path}: {exc.strerror or exc}.") from None
        parsed = parse(path.name, text, output_tokens=output_tokens)
        if parsed.format == "inferctl-corpus":
            if len(files) > 1:
                raise ConfigError("Import a measurement corpus file on its own.")
            return _import_corpus(path, parsed, root=root, command=command)
        if fmt and parsed.format != fmt:
            raise ConfigError(f"{path.name} is {parsed.format} but earlier files are {fmt}; import them separately.")
        fmt = parsed.format
        found_model = found_model or parsed.model
        started = started or parsed.started_at
        warnings += [f"{path.name}: {w}" for w in parsed.warnings]
        for c in parsed.cells:
            if c.id in cells:
                warnings.append(f"{path.name}: cell {c.id} appears in several files; the last one is kept.")
            cells[c.id] = c
    ordered = sorted(cells.values(), key=lambda c: (c.context, c.rate if c.rate is not None else c.concurrency or 0))
    ctxs = sorted({c.context for c in ordered})
    for c in ordered:
        c.row = ctxs.index(c.context)
    name = label or Path(files[0]).stem
    store = RunDir.create(runs_dir(root), new_run_id(f"import-{name}"))
    rates = sorted({c.rate for c in ordered if c.rate is not None})
    concs = sorted({c.concurrency for c in ordered if c.rate is None and c.concurrency is not None})
    outs = sorted({c.output_tokens for c in ordered})
    meta = RunMeta(
        run_id=store.path.name, source="imported", status="complete", target={"name": name, "url": None},
        model=model or found_model,
        engine={"hardware": hardware, "imported_from": {"format": fmt, "file": str(files[0]),
                                                          "files": [str(f) for f in files]}} if hardware else
        {"imported_from": {"format": fmt, "file": str(files[0]), "files": [str(f) for f in files]}},
        grid={"contexts": ctxs, "concurrencies": concs, "rates": rates or None,
              "output_tokens": outs[0] if len(outs) == 1 else outs, "api": None, "slos": []},
        inferctl_version=__version__, command=command or [], started_at=started or time.time(),
        ended_at=time.time())
    store.write_meta(meta)
    store.write_cells(ordered)
    return ImportResult(run_id=store.path.name, path=str(store.path), format=fmt or "?",
                        files=[str(f) for f in files], cells=len(ordered), contexts=ctxs,
                        loads=[float(x) for x in (rates or concs)], warnings=warnings)


def _import_corpus(path: Path, parsed, *, root, command) -> ImportResult:
    """A corpus file: one run directory per entry (entries differ in model and hardware)."""
    runs = []
    source = parsed.facts["source"]
    for entry, cell in zip(parsed.facts["entries"], parsed.cells, strict=True):
        cell.row = 0
        store = RunDir.create(runs_dir(root), new_run_id(f"import-{entry.id}"))
        loads = {"concurrencies": [cell.concurrency] if cell.rate is None else [], "rates": [cell.rate] if cell.rate
                 is not None else None}  # fmt: skip
        meta = RunMeta(
            run_id=store.path.name, source="imported", status="complete", target={"name": entry.id, "url": None},
            model=entry.model,
            engine={"hardware": entry.hardware, "accelerator": entry.accelerator, "count": entry.count,
                    "vllm_version": entry.vllm_version, "flags": entry.flags,
                    "imported_from": {"format": "inferctl-corpus", "file": str(path), "entry": entry.id,
                                      "source": source["url"], "source_date": source["date"]}},
            grid={"contexts": [cell.context], **loads, "output_tokens": cell.output_tokens, "api": None, "slos": []},
            inferctl_version=__version__, command=command or [], started_at=time.time(), ended_at=time.time())
        store.write_meta(meta)
        store.write_cells([cell])
        runs.append(store.path.name)
    ctxs = sorted({c.context for c in parsed.cells})
    return ImportResult(run_id=runs[0], path=str(runs_dir(root) / runs[0]), format="inferctl-corpus",
                        files=[str(path)], cells=len(parsed.cells), contexts=ctxs,
                        loads=sorted({float(c.rate if c.rate is not None else c.concurrency or 0)
                                      for c in parsed.cells}),
                        runs=runs)  # fmt: skip
