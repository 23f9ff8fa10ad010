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
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"Cannot read {path}: {exc.strerror or exc}.") from None
        parsed = parse(path.name, text, output_tokens=output_tokens)
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
