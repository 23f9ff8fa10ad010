"""From a workload to the cheapest deployment that meets it: the fleet search (docs/planner.md, "Fleet sizing").

Two separate searches, so each performance candidate is simulated once whatever it costs on each platform:

1. **Performance**: model x weight format x accelerator x tensor parallelism x KV dtype x MTP on/off. For each
   candidate that fits (:func:`~inferctl.plan.memory.plan_resolved`), the highest open-loop arrival rate one
   replica sustains with every SLO met: a probe at a low rate (can it meet the SLOs at all?), then a geometric
   bisection between it and an analytic upper bound, each step an open-loop simulation of the workload's
   sampled lengths with Poisson arrivals. The limiting factor is read off the first failing probe: KV
   capacity (preemptions or a full cache), max_num_seqs (as many running as allowed), else the SLO that
   failed (TTFT: prefill compute; TPOT/ITL: decode memory bandwidth; E2E), else throughput (the queue grew).
2. **Pricing**: each capacity x every catalog price entry with that accelerator whose device count is a
   multiple of the TP size (a machine holds count / tp replicas) x every tier the entry has a price for.
   Replicas for the peak, machines, monthly cost always on and over the day's traffic shape.

Pruning (before simulating): an analytic upper bound on a replica's rate (compute: every token's FLOPs at
the fitted peak; decode: the most sequences the KV cache and max_num_seqs allow, each step at least a
weight read) gives a lower bound on each candidate's cost; candidates are simulated cheapest bound first and
the search stops once the next bound exceeds the ``keep``-th cheapest cost found, so the top ``keep``
candidates are ranked exactly as a brute-force search would rank them. Latency lower bounds (an unloaded
prompt's compute, one weight read per decode step) drop candidates that cannot meet an SLO at any load.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable

from pydantic import BaseModel, Field

from inferctl.bench.stats import percentile
from inferctl.catalog import accelerators, get_accelerator, load_model
from inferctl.catalog.prices import HOURS_PER_MONTH, TIERS, hardware_price, prices
from inferctl.errors import ConfigError
from inferctl.plan.cells import SimEngine, weighted_dist
from inferctl.plan.config import parse_speculative, resolve
from inferctl.plan.perf import PerfParams
from inferctl.plan.scheduler import SimRequest
from inferctl.plan.workload import Workload
from inferctl.profiles.serving import ServingConfig

PROBE_SEED = 12
STABLE = 0.9  # completions / arrivals inside the measured window below this: the queue grows
REL_TOL = 0.05  # bisection stops when hi / lo < 1 + REL_TOL
MIN_REQUESTS, MAX_REQUESTS = 300, 2000
SECONDS = 60  # simulated seconds of arrivals per probe (within the request bounds above)


def _keeps_up(done: list[SimRequest]) -> bool:
    """The engine keeps up: the time to first token does not grow over the measured window.

    A queue that grows (arrivals faster than the engine serves them) makes each request wait longer than the
    one before: TTFT rises with the send time at a slope of about arrival rate / service rate - 1. Stable when
    the least-squares slope stays below 1 - STABLE (the engine serves at least STABLE x the arrivals).
    """
    if len(done) < 10:
        return False
    xs = [q.scheduled for q in done]
    ys = [q.first_token - q.scheduled for q in done if q.first_token is not None]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    return slope <= 1 - STABLE


class Candidate(BaseModel):
    """One way to serve a replica: what the performance search varies."""

    model: str
    quant: str
    accelerator: str
    tp: int
    kv_dtype: str
    mtp: bool

    @property
    def label(self) -> str:
        return (f"{self.model} {self.quant} on {self.tp}x {self.accelerator}, KV {self.kv_dtype}"
                f"{', MTP' if self.mtp else ''}")

    def config(self, max_model_len: int) -> ServingConfig:
        return ServingConfig(model=self.model, accelerator=self.accelerator, count=self.tp, tp=self.tp,
                             quant=self.quant, kv_dtype=self.kv_dtype, max_model_len=max_model_len,
                             speculative=parse_speculative("mtp") if self.mtp else None)  # fmt: skip


class Probe(BaseModel):
    """One simulated open-loop rate."""

    rate: float
    meets: bool
    failed: list[str] = Field(default_factory=list, description="SLOs missed (and 'stability', 'error_rate').")
    values: dict[str, float | None] = Field(default_factory=dict, description="Observed value per SLO key, ms.")
    kv_peak: float = 0.0
    preemptions: int = 0
    max_running: int = 0
    requests: int = 0


class Capacity(BaseModel):
    """What the performance search found for one candidate."""

    candidate: Candidate
    status: str = Field(description="ok | no-fit | infeasible (no load meets the SLOs) | pruned | unpriced.")
    capacity_rps: float | None = Field(default=None, description="Highest rate one replica sustains in SLO.")
    bound_rps: float | None = Field(default=None, description="Analytic upper bound on that rate.")
    limiting: str | None = Field(default=None, description="What stops a replica going faster (observed).")
    reason: str | None = Field(default=None, description="Why it is not ranked (no-fit, infeasible, pruned).")
    kv_cache_tokens: int | None = None
    max_num_seqs: int | None = None
    simulations: int = 0
    at_capacity: Probe | None = Field(default=None, description="The highest rate that met the SLOs.")
    first_failure: Probe | None = Field(default=None, description="The lowest rate that did not.")
    vllm_flags: str | None = None


class Row(BaseModel):
    """One deployment: a candidate on one priced machine and tier, sized for the peak."""

    candidate: Candidate
    label: str
    price_key: str
    platform: str | None
    tier: str
    usd_per_machine_hour: float
    devices_per_machine: int
    replicas_per_machine: int
    capacity_rps: float = Field(description="Per replica.")
    replicas: int = Field(description="Replicas for the peak rate.")
    machines: int = Field(description="Machines (instances, VMs, slices) for the peak rate.")
    headroom: float = Field(description="Capacity of the replicas at peak over the peak rate, minus 1.")
    monthly_always_on: float = Field(description="USD per month with the peak's machines running all month.")
    monthly_shaped: float = Field(description="USD per month autoscaled over the traffic shape (committed tiers: "
                                  "the always-on figure; scale to zero only where the platform can).")
    monthly: float = Field(description="The ranking figure: monthly_shaped.")
    scale_to_zero: bool
    limiting: str | None
    vllm_flags: str | None
    sources: list[str] = Field(default_factory=list)


class FleetResult(BaseModel):
    """The fleet search's answer."""

    workload: str
    peak_rate: float
    rows: list[Row] = Field(default_factory=list, description="Deployments, cheapest monthly first.")
    candidates: list[Capacity] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict, description="candidates, simulated, pruned, not_fitting, "
                                   "infeasible, unpriced, simulations.")
    binding: str | None = Field(default=None, description="When nothing meets the workload: the constraint that "
                                "bound every candidate.")
    skipped_tiers: list[str] = Field(default_factory=list, description="price key: tiers the catalog has no "
                                     "price for (skipped).")
    notes: list[str] = Field(default_factory=list)
    profile: str | None = Field(default=None, description="The deployment profile (TOML) to create for the top "
                                "deployment (filled by the use case).")
    elapsed_s: float = 0.0


# -- candidates and prices -------------------------------------------------------------------------------


class PriceOption(BaseModel):
    key: str
    platform: str | None
    tier: str
    usd_per_hour: float
    devices: int
    scale_to_zero: bool
    sources: list[str]


def price_options(accelerator: str, workload: Workload) -> tuple[list[PriceOption], list[str]]:
    """Every (machine, tier) the price catalog prices for an accelerator; and 'key: tiers' it has no price for."""
    s = workload.search
    out, skipped = [], []
    for entry in prices().values():
        if entry.accelerator != accelerator or not entry.accelerator_count:
            continue
        if s.platforms and entry.platform not in s.platforms:
            continue
        missing = []
        for tier in s.tiers or TIERS:
            try:
                hp = hardware_price(entry.key, tier)
            except ConfigError:
                missing.append(tier)
                continue
            out.append(PriceOption(key=entry.key, platform=entry.platform, tier=tier, usd_per_hour=hp.usd_per_hour,
                                   devices=entry.accelerator_count, scale_to_zero=entry.scale_to_zero,
                                   sources=hp.sources))  # fmt: skip
        if missing:
            skipped.append(f"{entry.key}: {', '.join(missing)}")
    return out, skipped


def candidates(workload: Workload) -> list[Candidate]:
    """The performance candidates the workload allows (every format, KV dtype, MTP, accelerator and TP)."""
    s = workload.search
    accs = s.accelerators or [a.name for a in accelerators().values() if a.kind != "cpu"]
    out = []
    for name, fmt in workload.model_choices():
        model = load_model(name)
        if fmt and fmt not in model.formats:
            raise ConfigError(f"{model.name} has no '{fmt}' weights; choose one of: {', '.join(model.formats)}.")
        for acc_name in accs:
            acc = get_accelerator(acc_name)
            counts = {e.accelerator_count for e in prices().values() if e.accelerator == acc.name
                      and e.accelerator_count}  # fmt: skip
            tps = [t for t in (1, 2, 4, 8, 16) if t <= min(s.max_devices, acc.max_per_host)
                   and any(c % t == 0 for c in counts)] or [1]  # fmt: skip
            for quant, tp, kv, mtp in itertools.product(
                    [fmt] if fmt else model.formats, tps, s.kv_dtypes,
                    [m == "mtp" for m in s.speculative if m == "off" or model.drafter]):
                out.append(Candidate(model=model.name, quant=quant, accelerator=acc.name, tp=tp, kv_dtype=kv,
                                     mtp=mtp))  # fmt: skip
    return out


def monthly_cost(capacity: float, workload: Workload, option: PriceOption, tp: int) -> tuple[int, int, float, float]:
    """(replicas, machines, always-on USD/month, shaped USD/month) for one capacity on one priced machine."""
    per_machine = option.devices // tp
    peak = workload.peak_rate

    def machines(rate: float) -> int:
        if rate <= 0:
            return 0 if option.scale_to_zero else 1
        return math.ceil(math.ceil(rate / capacity - 1e-9) / per_machine)

    replicas = max(1, math.ceil(peak / capacity - 1e-9))
    peak_machines = math.ceil(replicas / per_machine)
    always = peak_machines * option.usd_per_hour * HOURS_PER_MONTH
    if option.tier.startswith("committed"):
        shaped = always  # a commitment is billed every hour, used or not
    else:
        hours = sum(machines(peak * f) for f in workload.traffic.fractions())
        shaped = hours * option.usd_per_hour * HOURS_PER_MONTH / 24
    return replicas, peak_machines, always, shaped


# -- the performance search ---------------------------------------------------------------------------


class Evaluator:
    """Simulates one candidate under the workload at given open-loop rates."""

    def __init__(self, engine: SimEngine, workload: Workload) -> None:
        self.engine, self.workload = engine, workload
        self.slos = workload.slos
        self.simulations = 0

    def requests(self, rate: float) -> tuple[list[SimRequest], int, int]:
        from inferctl.bench.loadgen import arrivals

        n = int(min(MAX_REQUESTS, max(MIN_REQUESTS, SECONDS * rate)))
        prompts = self.workload.prompt_tokens.sample(n, PROBE_SEED)
        outputs = self.workload.output_tokens.sample(n, PROBE_SEED + 1)
        times = arrivals(rate, 1.0, PROBE_SEED)
        reqs = [SimRequest(index=i, prompt=p, output=o, send=t)
                for i, (p, o, t) in enumerate(zip(prompts, outputs, times, strict=False))]  # fmt: skip
        return reqs, n // 4, (3 * n) // 4  # measured: the middle half (no ramp-up, no drain)

    def probe(self, rate: float) -> Probe:
        self.simulations += 1
        reqs, lo, hi = self.requests(rate)
        stats = self.engine.scheduler().run(reqs, None)
        o = self.engine.params.request_overhead_ms / 1000
        measured = reqs[lo:hi]
        ok = [q for q in measured if q.status == "ok" and q.end is not None and q.first_token is not None]
        errors = (len(measured) - len(ok)) / max(1, len(measured))
        stable = _keeps_up(ok)
        ttft = sorted((q.first_token + o - q.scheduled) * 1000 for q in ok)
        e2e = sorted((q.end + o - q.scheduled) * 1000 for q in ok)
        tpot = sorted((q.end - q.first_token) * 1000 / (q.output - 1) for q in ok if q.output > 1)
        itl = weighted_dist(stats.itl_segments)
        values: dict[str, float | None] = {}
        failed = []
        for slo in self.slos:
            vals = {"ttft": ttft, "e2e": e2e, "tpot": tpot}.get(slo.metric)
            if slo.metric == "itl":
                v = itl.get(slo.stat)
            elif not vals:
                v = None
            elif slo.stat == "mean":
                v = sum(vals) / len(vals)
            else:
                v = percentile(vals, float(slo.stat[1:]))
            values[slo.key] = None if v is None else round(v, 2)
            if v is None and slo.metric == "tpot" and ok:
                continue  # one-token answers have no decode phase to judge (as the bench counts goodput)
            if v is None or v > slo.limit_ms:
                failed.append(slo.key)
        if errors > self.workload.max_error_rate:
            failed.append("error_rate")
        if not stable:
            failed.append("stability")
        return Probe(rate=round(rate, 4), meets=not failed, failed=failed, values=values,
                     kv_peak=round(min(1.0, stats.max_blocks_used / max(1, self.engine.memory.kv.num_blocks)), 4),
                     preemptions=stats.preemptions, max_running=stats.max_running, requests=len(reqs))  # fmt: skip


def bounds(engine: SimEngine, workload: Workload) -> tuple[float, dict[str, float]]:
    """An upper bound on a replica's sustainable rate, and lower bounds on each SLO's value (ms)."""
    step = engine.step
    r = engine.resolved
    n = 1000
    prompts = workload.prompt_tokens.sample(n)
    outputs = workload.output_tokens.sample(n)
    mean_p, mean_o = sum(prompts) / n, sum(outputs) / n
    # Compute: every prompt and output token runs through the model once at least.
    big = 1e9
    per_token = step.step_time(0, 0.0, 0.0, big, 0.0, 0.0, 0, 0) / big
    compute_rate = 1.0 / ((mean_p + mean_o) * per_token)
    # Decode: at most n_max sequences decode at once (KV, max_num_seqs); a step reads the weights at least.
    sched = engine.scheduler()
    per_seq = max(1.0, 0.5 * sched.blocks(min(prompts), 0))
    n_max = max(1, min(r.max_num_seqs, int(engine.memory.kv.num_blocks / per_seq)))
    tps = step.tokens_per_step
    decode_rate = math.inf
    if mean_o > 1:
        decode_rate = n_max * tps / ((mean_o - 1) * step.step_time(n_max, 0.0, 0.0))
    ub = min(compute_rate, decode_rate)
    o_ms = engine.params.request_overhead_ms
    tpot_lb = step.step_time(1, 0.0, 0.0) / tps * 1000
    lbs = {}
    for slo in workload.slos:
        # the length five percentiles below the SLO's: a probe's measured half of the sample may sit a little low
        q = 0.0 if slo.stat == "mean" else max(0.0, float(slo.stat[1:]) / 100 - 0.05)
        p, out = workload.prompt_tokens.quantile(q), workload.output_tokens.quantile(q)
        ttft = p * per_token * 1000 + o_ms
        if slo.metric == "ttft":
            lbs[slo.key] = ttft
        elif slo.metric in ("tpot", "itl"):
            lbs[slo.key] = tpot_lb
        elif slo.metric == "e2e":
            lbs[slo.key] = ttft + max(0, out - 1) * tpot_lb
    return ub, lbs


def _limiting(fail: Probe, engine: SimEngine, slos_order: list[str]) -> str:
    if fail.preemptions or fail.kv_peak >= 0.95:
        return "KV cache capacity"
    if fail.max_running >= engine.resolved.max_num_seqs:
        return "max_num_seqs"
    for key in slos_order:
        if key in fail.failed:
            return {"ttft": "prefill compute (TTFT)", "tpot": "decode memory bandwidth (TPOT)",
                    "itl": "decode memory bandwidth (ITL)", "e2e": "end-to-end latency (E2E)"}[key.split("_")[0]]
    if "error_rate" in fail.failed:
        return "KV cache capacity (requests rejected)"
    return "engine throughput (the queue grows)"


def speculative_config(drafter_hf_id: str | None) -> dict:
    """vLLM's --speculative-config for the model's MTP assistant (4 draft tokens, as the simulation assumes)."""
    return {"model": drafter_hf_id, "num_speculative_tokens": 4} if drafter_hf_id else \
        {"method": "mtp", "num_speculative_tokens": 4}


def vllm_flags(c: Candidate, max_model_len: int, hf_id: str | None, drafter_hf_id: str | None = None) -> str:
    """The `vllm serve` line for a candidate (the checkpoint in its weight format is named in words)."""
    import json

    parts = [f"vllm serve {hf_id or c.model}"]
    if c.quant != "bf16":
        parts.append(f"(its {c.quant} checkpoint)")
    parts.append(f"--max-model-len {max_model_len}")
    if c.tp > 1:
        parts.append(f"--tensor-parallel-size {c.tp}")
    if c.kv_dtype == "fp8":
        parts.append("--kv-cache-dtype fp8")
    if c.mtp:
        parts.append(f"--speculative-config '{json.dumps(speculative_config(drafter_hf_id), separators=(',', ':'))}'")
    return " ".join(parts)


def capacity(engine: SimEngine, workload: Workload, ub: float, cand: Candidate) -> Capacity:
    """The highest open-loop rate one replica sustains with every SLO met (bisection between probes)."""
    ev = Evaluator(engine, workload)
    order = [s.key for s in workload.slos]
    res = Capacity(candidate=cand, status="ok", bound_rps=round(ub, 4),
                   kv_cache_tokens=engine.memory.kv.kv_cache_tokens, max_num_seqs=engine.resolved.max_num_seqs)
    lo_rate = max(ub * 0.02, 1e-3)
    low = ev.probe(lo_rate)
    if not low.meets:
        res.status, res.first_failure, res.simulations = "infeasible", low, ev.simulations
        res.limiting = _limiting(low, engine, order)
        res.reason = (f"misses {', '.join(low.failed)} even at {lo_rate:.3g} req/s "
                      f"({', '.join(f'{k} {v:g}' for k, v in low.values.items() if v is not None) or 'no requests'})")
        return res
    best, fail = low, None
    top = ev.probe(ub)
    if top.meets:
        best = top
    else:
        fail = top
        lo, hi = lo_rate, ub
        while hi / lo > 1 + REL_TOL:
            mid = math.sqrt(lo * hi)
            p = ev.probe(mid)
            if p.meets:
                lo, best = mid, p
            else:
                hi, fail = mid, p
    res.capacity_rps = round(best.rate, 4)
    res.at_capacity, res.first_failure = best, fail
    res.limiting = _limiting(fail, engine, order) if fail else "none within the analytic bound"
    res.simulations = ev.simulations
    return res


def search(workload: Workload, *, params_for: Callable[[str], PerfParams | None] | None = None,
           prune: bool = True) -> FleetResult:  # fmt: skip
    """Rank deployments for a workload: performance per candidate once, then every price for it."""
    t0 = time.perf_counter()
    peak = workload.peak_rate
    max_len = workload.max_model_len
    result = FleetResult(workload=workload.describe(), peak_rate=round(peak, 4))
    counts = dict.fromkeys(("candidates", "simulated", "pruned", "not_fitting", "infeasible", "unpriced",
                            "simulations"), 0)  # fmt: skip
    options: dict[str, list[PriceOption]] = {}
    skipped: list[str] = []
    queue: list[tuple[float, int, SimEngine, float]] = []
    unpriced_accs: list[str] = []
    for cand in candidates(workload):
        if cand.accelerator not in options:
            options[cand.accelerator], miss = price_options(cand.accelerator, workload)
            skipped += miss
            if not options[cand.accelerator]:
                unpriced_accs.append(cand.accelerator)
        if not options[cand.accelerator]:
            continue  # nothing to rank it by: said once in the notes, not simulated
        counts["candidates"] += 1
        opts = [o for o in options[cand.accelerator] if o.devices % cand.tp == 0]
        cap = Capacity(candidate=cand, status="ok")
        result.candidates.append(cap)
        try:
            r = resolve(cand.config(max_len))
        except ConfigError as exc:
            cap.status, cap.reason = "no-fit", str(exc)
            counts["not_fitting"] += 1
            continue
        engine = SimEngine(r, params_for(cand.accelerator) if params_for else None)
        mem = engine.memory
        cap.kv_cache_tokens, cap.max_num_seqs = mem.kv.kv_cache_tokens, r.max_num_seqs
        cap.vllm_flags = vllm_flags(cand, max_len, r.model.hf_id, r.drafter.hf_id if r.drafter else None)
        if not mem.fits:
            cap.status, cap.reason = "no-fit", mem.reason
            counts["not_fitting"] += 1
            continue
        if not opts:
            cap.status, cap.reason = "unpriced", f"the price catalog has no price for {cand.accelerator} " \
                f"machines of a multiple of {cand.tp} devices"
            counts["unpriced"] += 1
            continue
        ub, lbs = bounds(engine, workload)
        cap.bound_rps = round(ub, 4)
        slo_limits = {s.key: s.limit_ms for s in workload.slos}
        missed = [k for k, v in lbs.items() if v > slo_limits[k]]
        if missed and prune:
            k = missed[0]
            cap.status = "infeasible"
            cap.limiting = {"ttft": "prefill compute (TTFT)", "tpot": "decode memory bandwidth (TPOT)",
                            "itl": "decode memory bandwidth (ITL)", "e2e": "end-to-end latency (E2E)"}[k.split("_")[0]]
            cap.reason = f"{k} is at least {lbs[k]:,.0f} ms unloaded (limit {slo_limits[k]:,.0f} ms)"
            counts["pruned"] += 1
            continue
        lb_cost = min(monthly_cost(ub, workload, o, cand.tp)[3] for o in opts)
        queue.append((lb_cost, len(result.candidates) - 1, engine, ub))
    queue.sort(key=lambda x: x[0])
    best_costs: list[float] = []
    keep = workload.search.keep
    rows: list[Row] = []
    for lb_cost, i, engine, ub in queue:
        cap = result.candidates[i]
        if prune and len(best_costs) >= keep and lb_cost > best_costs[keep - 1]:
            cap.status = "pruned"
            cap.bound_rps = round(ub, 4)
            cap.reason = (f"costs at least {lb_cost:,.0f} USD/month even at its analytic capacity; the "
                          f"{keep}th cheapest candidate costs {best_costs[keep - 1]:,.0f}")
            counts["pruned"] += 1
            continue
        cap = result.candidates[i] = capacity(engine, workload, ub, cap.candidate).model_copy(
            update={"vllm_flags": cap.vllm_flags})
        counts["simulated"] += 1
        counts["simulations"] += cap.simulations
        if cap.status != "ok":
            counts["infeasible"] += 1
            continue
        cand_rows = []
        for o in options[cap.candidate.accelerator]:
            if o.devices % cap.candidate.tp:
                continue
            replicas, machines, always, shaped = monthly_cost(cap.capacity_rps, workload, o, cap.candidate.tp)
            cand_rows.append(Row(
                candidate=cap.candidate, label=cap.candidate.label, price_key=o.key, platform=o.platform, tier=o.tier,
                usd_per_machine_hour=o.usd_per_hour, devices_per_machine=o.devices,
                replicas_per_machine=o.devices // cap.candidate.tp, capacity_rps=cap.capacity_rps, replicas=replicas,
                machines=machines, headroom=round(replicas * cap.capacity_rps / peak - 1, 4),
                monthly_always_on=round(always, 2), monthly_shaped=round(shaped, 2), monthly=round(shaped, 2),
                scale_to_zero=o.scale_to_zero, limiting=cap.limiting, vllm_flags=cap.vllm_flags, sources=o.sources,
            ))  # fmt: skip
        rows += cand_rows
        best_costs = sorted([*best_costs, min(x.monthly for x in cand_rows)])
    rows.sort(key=lambda x: (x.monthly, x.monthly_always_on, x.label, x.price_key, x.tier))
    result.rows = rows
    result.counts = counts
    result.skipped_tiers = sorted(set(skipped))
    if not rows:
        result.binding = binding_constraint(result.candidates)
    if unpriced_accs:
        result.notes.append(f"Not searched, no price in the catalog for the platforms and tiers searched: "
                            f"{', '.join(sorted(set(unpriced_accs)))}.")
    if skipped:
        result.notes.append("Tiers without a catalog price were skipped: " + "; ".join(sorted(set(skipped))) + ".")
    if workload.users is not None:
        result.notes.append("Users with think time are read as the open-loop rate users / think_time (an upper "
                            "bound: each user also waits for its answer).")
    if params_for is None:
        result.notes.append("Speeds use the accelerators' prior efficiency factors (not calibrated).")
    result.elapsed_s = round(time.perf_counter() - t0, 3)
    return result


def binding_constraint(caps: list[Capacity]) -> str:
    """The sentence saying why no candidate meets the workload: the most common limiting factor."""
    infeasible = [c for c in caps if c.status == "infeasible"]
    if infeasible:
        by: dict[str, list[Capacity]] = {}
        for c in infeasible:
            by.setdefault(c.limiting or "unknown", []).append(c)
        limit, group = max(by.items(), key=lambda kv: len(kv[1]))
        example = group[0]
        return (f"No candidate meets the workload: {limit} binds {len(group)} of {len(infeasible)} that fit "
                f"(e.g. {example.candidate.label}: {example.reason}).")
    if any(c.status == "unpriced" for c in caps):
        return "No candidate that fits has a price in the catalog."
    reasons = [c.reason for c in caps if c.reason]
    return ("No candidate meets the workload: nothing in the catalog fits it"
            + (f" ({reasons[0]})." if reasons else "."))
