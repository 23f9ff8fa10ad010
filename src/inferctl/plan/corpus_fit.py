"""Calibrate accelerators on the public measurement corpus: entries as fit groups, fits, held-out error.

Each corpus entry (``catalog/data/measurements``) becomes one :class:`~inferctl.plan.calibrate.FitGroup`:
its model described through :func:`~inferctl.catalog.corpus.model_ref`, its serving flags as a
:class:`~inferctl.plan.config.ServingConfig`, its workload as a one-cell :class:`SweepSpec`:

* a burst of N prompts (``request_rate = inf``, no ``max_concurrency``) is concurrency N, N requests;
* ``max_concurrency`` C with N prompts is concurrency C, N requests (at most :data:`MAX_SIM_REQUESTS`,
  a steady state long before that); no prompt count stated: the bench default (4 waves, >= 20);
* a finite ``request_rate`` is an open-loop cell at that rate;
* no warm-up (``vllm bench serve`` sends one test prompt, which is not measured);
* prompt and output lengths: the measured means where the source prints totals (ShareGPT), else the
  configured random lengths; with variable lengths (a dataset such as ShareGPT) the entry's req/s and
  output tok/s are left out - a finite batch of mixed lengths ends with its longest requests, which
  the corpus does not carry - and only its TTFT and TPOT are compared;
* the KV space: the ``available_kv_cache`` the source logged, else the planner's from
  ``gpu_memory_utilization``.

Entries whose model the planner cannot describe, or whose configuration does not resolve, are skipped
and counted. :func:`fit_entries` fits one accelerator's PerfParams on any mix of models (the roofline
carries efficiency across models); :func:`held_out` measures how well that transfers: leave one
source out where an accelerator has two or more sources, else leave one entry out (weaker: the held-out
entry shares its source's setup and habits with the entries the fit saw).
"""

from __future__ import annotations

import math
import re
import tempfile
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.bench.spec import SweepSpec
from inferctl.catalog.corpus import Entry, load_corpus, model_ref
from inferctl.errors import ConfigError
from inferctl.plan.calibrate import (
    METRICS,
    PRIOR_WEIGHT,
    CellError,
    FitGroup,
    MetricError,
    cell_figures,
    fit_groups,
    score,
    summarize,
)
from inferctl.plan.cells import SimEngine
from inferctl.plan.config import ServingConfig, resolve
from inferctl.plan.perf import PerfParams
from inferctl.report.importers import entry_cell

# A closed-loop cell reaches its steady state within a few waves; simulating 3,000 requests of 1,000
# tokens each costs minutes per fit evaluation and changes no figure by more than noise.
MAX_SIM_REQUESTS = 256

# A public measurement is a different setup from the roofline's: an efficiency above 1 would mean the model's
# structure is off (overheads, bytes), not that the hardware beats its peak; such a fit would carry to other
# models as a promise no device keeps. The corpus fit stops at the peaks.
PHYSICAL_CEIL = {"bw_efficiency": 1.0, "compute_efficiency": 1.0}

# What a corpus fit moves; the rest keeps the prior's values.
FITTED = ("bw_efficiency", "compute_efficiency", "step_overhead_ms", "per_seq_overhead_ms", "request_overhead_ms")
# Below this many compared figures the pull towards the prior grows in proportion (PRIOR_WEIGHT x 80 / n).
PULL_FIGURES = 80

# The figures the aim is stated in (output tok/s follows req/s for fixed lengths).
AIM = {"request_throughput": 25.0, "tpot_p50": 25.0, "ttft_p50": 40.0}


@dataclass
class CorpusGroup:
    """One corpus entry ready to fit or score."""

    entry: Entry
    group: FitGroup
    prior: PerfParams

    @property
    def source(self) -> str:
        return self.entry.source.id if self.entry.source else ""


@dataclass
class Skipped:
    entry_id: str
    reason: str


@dataclass
class CorpusGroups:
    """An accelerator's usable entries and the ones skipped (with why)."""

    accelerator: str
    groups: list[CorpusGroup] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        return sorted({g.source for g in self.groups})


def _gib(text: object) -> float | None:
    m = re.fullmatch(r"\s*([\d.]+)\s*GiB\s*", str(text))
    return float(m.group(1)) if m else None


def variable_lengths(e: Entry) -> bool:
    """True when the entry's requests have different lengths (a dataset, or output without --ignore-eos)."""
    w = e.workload
    return w.dataset != "random" or (w.ignore_eos is False)


def entry_group(e: Entry, cache_dir: Path) -> CorpusGroup:
    """The FitGroup of one entry; ConfigError (one sentence) when it cannot be simulated."""
    ref = model_ref(e.model, cache_dir)
    if ref is None:
        raise ConfigError(f"the planner cannot describe {e.model} (not in the model catalog or corpus models.toml)")
    f, w, m = e.flags, e.workload, e.metrics
    if e.weight_format not in ("bf16", "fp16", "fp8", "w4a16"):
        raise ConfigError(f"weight format {e.weight_format} is not modelled")
    kv_gib = _gib(f["available_kv_cache"]) if "available_kv_cache" in f else None
    if kv_gib is not None and (e.tp or e.count) > 1:
        kv_gib = None  # the logged figure is the whole engine's; per device it depends on vLLM's layout
    cfg = ServingConfig(
        model=ref, accelerator=e.accelerator, count=e.count, tp=e.tp, quant="bf16" if e.weight_format == "fp16"
        else e.weight_format, max_model_len=f.get("max_model_len"), gpu_mem_util=f.get("gpu_memory_utilization", 0.92),
        max_num_seqs=f.get("max_num_seqs"), max_num_batched_tokens=f.get("max_num_batched_tokens"),
        kv_cache_memory_gib=kv_gib, async_scheduling=f.get("async_scheduling"),
    )  # fmt: skip
    resolved = resolve(cfg)
    done = m.completed or w.num_prompts
    ctx = round(m.total_input_tokens / done) if m.total_input_tokens and done else w.input_len
    out = round(m.total_output_tokens / done) if m.total_output_tokens and done else w.output_len
    if not ctx or not out:
        raise ConfigError("the source states neither the prompt and output lengths nor token totals")
    rate = w.request_rate if w.request_rate is not None and not math.isinf(w.request_rate) else None
    if rate is not None:
        spec = SweepSpec(contexts=[ctx], rates=[rate], max_concurrency=w.max_concurrency, output_tokens=out,
                         requests=min(w.num_prompts or MAX_SIM_REQUESTS, MAX_SIM_REQUESTS), warmup=0)  # fmt: skip
    else:
        conc = w.max_concurrency or w.num_prompts
        if not conc:
            raise ConfigError("the source states neither a concurrency nor a number of prompts")
        n = w.num_prompts if w.max_concurrency is None else min(w.num_prompts or 0, MAX_SIM_REQUESTS) or None
        spec = SweepSpec(contexts=[ctx], concurrencies=[conc], output_tokens=out, requests=n, warmup=0)
    cell = spec.cells()[0]
    meas = entry_cell(e)
    meas = meas.model_copy(update={"id": cell.id, "context": ctx, "output_tokens": out,
                                   "concurrency": cell.concurrency, "rate": cell.rate})  # fmt: skip
    if variable_lengths(e):
        # Throughput of a finite batch of mixed lengths is set by its longest requests, which the corpus does
        # not carry; the simulation runs the mean lengths. TTFT and TPOT still compare; throughput does not.
        meas.metrics = meas.metrics.model_copy(update={"request_throughput": 0.0, "output_throughput": 0.0})
    group = FitGroup(engine_for=partial(SimEngine, resolved), spec=spec, measured=[meas],
                     hidden_size=resolved.model.hidden_size)  # fmt: skip
    return CorpusGroup(entry=e, group=group, prior=PerfParams.prior(resolved))


def corpus_groups(accelerator: str | None = None, entries: tuple[Entry, ...] | None = None,
                  cache_dir: Path | None = None) -> dict[str, CorpusGroups]:  # fmt: skip
    """The corpus's entries as fit groups, per accelerator (one accelerator if named)."""
    entries = entries if entries is not None else load_corpus()
    if accelerator is not None:
        from inferctl.catalog.accelerators import get_accelerator

        accelerator = get_accelerator(accelerator).name
        entries = tuple(e for e in entries if e.accelerator == accelerator)
        if not entries:
            raise ConfigError(f"The measurement corpus has no entries for {accelerator}.")
    cache = cache_dir or Path(tempfile.mkdtemp(prefix="inferctl-corpus-"))
    out: dict[str, CorpusGroups] = {}
    for e in entries:
        acc = out.setdefault(e.accelerator, CorpusGroups(accelerator=e.accelerator))
        try:
            acc.groups.append(entry_group(e, cache))
        except ConfigError as exc:
            acc.skipped.append(Skipped(entry_id=e.id, reason=str(exc).rstrip(".")))
    return dict(sorted(out.items()))


def fit_entries(groups: list[CorpusGroup], iters: int | None = None) -> PerfParams:
    """One accelerator's PerfParams fitted jointly on its entries, starting from (and pulled to) the prior.

    Public entries are few and come from setups the roofline does not see, so the fit is kept small: the
    two efficiencies, the two per-step overheads and the per-request overhead (the client's HTTP and
    tokenization, part of every TTFT) (:data:`FITTED`; the per-token overhead and the size curve keep the
    prior's values), efficiencies at most the peak, the mean *absolute* log error
    (a queue-dominated TTFT far off does not drag every other figure), and a pull towards the prior that
    grows as the figures get fewer (:data:`PULL_FIGURES`).
    """
    if not groups:
        raise ConfigError("No corpus entries to fit on.")
    figures = sum(1 for g in groups for c in g.group.measured for v in cell_figures(c).values() if v)
    weight = PRIOR_WEIGHT * max(1.0, PULL_FIGURES / max(figures, 1))
    return fit_groups([g.group for g in groups], groups[0].prior, prior_weight=weight, iters=iters, robust=True,
                      ceil=PHYSICAL_CEIL, only=FITTED)  # fmt: skip


def score_entries(groups: list[CorpusGroup], params: PerfParams | None) -> list[CellError]:
    """Per-entry errors with ``params`` (None: each entry's prior), cells named by entry id."""
    out = []
    for g in groups:
        cells, _ = score(g.group.engine_for, params or g.prior, g.group.spec, g.group.measured)
        out += [c.model_copy(update={"cell": g.entry.id}) for c in cells]
    return out


class HeldOut(BaseModel):
    """Held-out error of one accelerator: fitted without the held-out entries, scored on them."""

    accelerator: str
    mode: Literal["leave-one-source-out", "leave-one-entry-out"]
    entries: int
    sources: list[str]
    skipped: int = Field(description="Entries that could not be simulated (model not describable, ...).")
    calibrated: dict[str, MetricError] = Field(description="Per metric, held-out error of the fitted parameters.")
    prior: dict[str, MetricError] = Field(description="Per metric, error of the catalog prior on the same entries.")
    cells: list[CellError] = Field(default_factory=list, description="Held-out error per entry.")


def held_out(acc: CorpusGroups, iters: int | None = None) -> HeldOut:
    """Leave-one-source-out error where the accelerator has >= 2 sources, else leave-one-entry-out."""
    if len(acc.groups) < 2:
        raise ConfigError(f"{acc.accelerator} has {len(acc.groups)} usable corpus entries; holding one out "
                          "needs at least two.")  # fmt: skip
    by_source = len(acc.sources) >= 2
    folds = ([[g for g in acc.groups if g.source == s] for s in acc.sources] if by_source
             else [[g] for g in acc.groups])  # fmt: skip
    cells: list[CellError] = []
    for test in folds:
        train = [g for g in acc.groups if g not in test]
        cells += score_entries(test, fit_entries(train, iters=iters))
    return HeldOut(accelerator=acc.accelerator, mode="leave-one-source-out" if by_source else "leave-one-entry-out",
                   entries=len(acc.groups), sources=acc.sources, skipped=len(acc.skipped),
                   calibrated=summarize(cells), prior=summarize(score_entries(acc.groups, None)),
                   cells=cells)  # fmt: skip


def beats_prior(h: HeldOut) -> bool:
    """True when the fitted parameters predict held-out entries better than the prior on every metric both have
    (median absolute error)."""
    common = [k for k in METRICS if k in h.calibrated and k in h.prior]
    return bool(common) and all(h.calibrated[k].median_abs <= h.prior[k].median_abs for k in common) and any(
        h.calibrated[k].median_abs < h.prior[k].median_abs for k in common)


def at_bound(params: PerfParams) -> list[str]:
    """Fitted parameters that ended on a ceiling: the data could not place them (e.g. one model cannot tell
    bandwidth from per-step overhead), so the value is the bound's, not the hardware's."""
    return [k for k, c in PHYSICAL_CEIL.items() if getattr(params, k) >= c * 0.999]


def ship_decision(h: HeldOut, fitted: PerfParams) -> tuple[bool, str]:
    """Whether the catalog should ship ``fitted``, and why (one clause)."""
    if not beats_prior(h):
        worse = [k for k in METRICS if k in h.calibrated and k in h.prior
                 and h.calibrated[k].median_abs > h.prior[k].median_abs]  # fmt: skip
        return False, "held out, worse than the prior on " + ", ".join(worse)
    bound = at_bound(fitted)
    if bound:
        return False, f"{', '.join(bound)} at the peak bound (not placed by the data)"
    return True, "beats the prior held out"
