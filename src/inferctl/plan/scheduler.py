"""A continuous-batching simulation of vLLM's V1 scheduler, fast enough for a whole sweep grid.

Each engine step, like vLLM: running requests first (decode: 1 + k tokens each; unfinished prefills:
their next chunk), then waiting requests in arrival order while there is token budget
(``max_num_batched_tokens``), a free sequence slot (``max_num_seqs``) and KV blocks for their first
chunk. Prompts longer than the budget are prefilled in chunks. When a decode step needs more KV blocks
than are free, the most recently admitted request is preempted (vLLM's recompute: its blocks are freed
and it re-enters the waiting queue at the front, to re-prefill prompt + generated tokens).

Speed: steps whose composition does not change are taken together. All decoding sequences advance on
one shared clock (``G``, tokens generated per sequence), so a stretch of pure-decode steps up to the next
finish, arrival or KV exhaustion costs O(log n); a long prompt's identical chunk steps are taken at once.
KV use is counted in blocks per group from the layout (:mod:`inferctl.plan.kvcache`): full-attention
groups hold the whole context, sliding groups at most window - 1 + in-flight tokens (+1 block).
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from inferctl.plan.kvcache import KVLayout
from inferctl.plan.perf import StepModel


@dataclass(slots=True)
class SimRequest:
    """One simulated request and what happened to it (times in seconds from the cell's start)."""

    index: int
    prompt: int
    output: int
    send: float
    scheduled: float = 0.0  # when the client meant to send it (open loop); send is later when capped
    arrival: float = 0.0  # reaches the scheduler (send + request overhead)
    first_token: float | None = None
    end: float | None = None
    preemptions: int = 0
    status: str = "ok"  # ok | rejected (can never fit the KV cache)
    # scheduler state
    to_prefill: int = 0
    prefilled: int = 0
    generated: float = 0.0
    g0: float = 0.0  # shared decode clock value when it entered decode
    base: int = 0  # context when it entered decode
    seq: int = 0  # admission order (preemption takes the newest)
    alive: bool = False
    held: float = 0.0  # KV blocks held while prefilling


@dataclass(slots=True)
class CappedSum:
    """Sum over decoding sequences of min(context, cap), context = base + (G - g0), in O(log n) per event."""

    cap: float
    growing_const: float = 0.0  # sum of (base - g0) over sequences still below the cap
    growing: int = 0
    capped: int = 0
    heap: list = field(default_factory=list)  # (G at which it reaches the cap, seq id)
    state: dict = field(default_factory=dict)  # seq id -> "g" | "c"

    def add(self, sid: int, base: float, g0: float, now: float) -> None:
        if base >= self.cap:
            self.capped += 1
            self.state[sid] = ("c", 0.0)
            return
        self.growing += 1
        self.growing_const += base - g0
        self.state[sid] = ("g", base - g0)
        heapq.heappush(self.heap, (g0 + self.cap - base, sid))

    def remove(self, sid: int) -> None:
        kind, const = self.state.pop(sid)
        if kind == "c":
            self.capped -= 1
        else:
            self.growing -= 1
            self.growing_const -= const

    def advance(self, g: float) -> None:
        while self.heap and self.heap[0][0] <= g:
            _, sid = heapq.heappop(self.heap)
            st = self.state.get(sid)
            if st is None or st[0] != "g":
                continue
            self.growing -= 1
            self.growing_const -= st[1]
            self.capped += 1
            self.state[sid] = ("c", 0.0)

    def total(self, g: float) -> float:
        # No sequence at the cap adds nothing (0 x an infinite cap would be NaN: models without sliding layers).
        return self.growing_const + self.growing * g + (self.capped * self.cap if self.capped else 0.0)


@dataclass
class SimStats:
    """What a cell simulation observed besides per-request times."""

    steps: int = 0
    preemptions: int = 0
    max_running: int = 0
    max_blocks_used: float = 0.0
    itl_segments: list[tuple[float, float]] = field(default_factory=list)  # (gap seconds, number of gaps)
    busy_time: float = 0.0


class Scheduler:
    """Simulate one cell: requests arrive (closed loop at a concurrency, or at given send times)."""

    def __init__(self, step: StepModel, layout: KVLayout, *, max_num_seqs: int, max_num_batched_tokens: int,
                 request_overhead_s: float = 0.0, blocks_cache: dict | None = None) -> None:
        self.step = step
        # blocks() is a pure function of (context, new) for one layout and is asked the same few
        # questions over and over (every request of a cell has the same prompt): memoised, shareable
        # between the cells of one engine.
        self._blocks_cache: dict = {} if blocks_cache is None else blocks_cache
        self.layout = layout
        self.max_num_seqs = max_num_seqs
        self.budget = max_num_batched_tokens
        self.overhead = request_overhead_s
        self.full_groups = [g for g in layout.groups if g.attention == "full"]
        self.sliding_groups = [g for g in layout.groups if g.attention == "sliding"]
        # While decoding, a sliding group keeps the window plus the tokens of the step in flight.
        self.kv_cap = (self.sliding_groups[0].sliding_window + step.spec_k) if self.sliding_groups else math.inf
        self.window = step.window or math.inf
        self.num_blocks = layout.num_blocks
        # Groups with the same shape behave alike: count them once (Gemma: one full, one sliding shape).
        full: dict[int, int] = {}
        sliding: dict[tuple[int, int], int] = {}
        for g in self.full_groups:
            full[g.block_size] = full.get(g.block_size, 0) + 1
        for g in self.sliding_groups:
            key = (g.block_size, g.sliding_window or 0)
            sliding[key] = sliding.get(key, 0) + 1
        self._full = [(n, bs) for bs, n in full.items()]
        self._sliding = [(n, bs, w) for (bs, w), n in sliding.items()]
        self._growth_per_token = sum(1 / g.block_size for g in layout.groups)
        # _decode_blocks as one linear form: a_full x full context + a_sliding x kept context + c x sequences
        self._a_full = sum(n / bs for n, bs in self._full)
        self._a_sliding = sum(n / bs for n, bs, _ in self._sliding)
        self._c_seq = 0.5 * sum(n for n, _ in self._full) + 1.5 * sum(n for n, _, _ in self._sliding)

    # -- KV blocks -------------------------------------------------------------------------------
    def blocks(self, context: float, new: float = 1.0) -> float:
        """Blocks one request holds with ``context`` tokens of KV, ``new`` of them computed this step.

        Sliding groups free blocks that fall out of the window before each step (vLLM's
        ``remove_skipped_blocks``), so they hold at most window - 1 + new tokens, plus one block because
        the window rarely starts on a block boundary.
        """
        key = (context, new)
        cached = self._blocks_cache.get(key)
        if cached is None:
            cached = self._blocks_cache[key] = self._count_blocks(context, new)
        return cached

    def _count_blocks(self, context: float, new: float) -> float:
        total = 0.0
        for n, bs in self._full:
            total += n * -(-context // bs)
        for n, bs, window in self._sliding:
            whole = -(-context // bs)
            kept = -(-min(context, window - 1 + new) // bs) + 1
            total += n * (whole if whole < kept else kept)
        return total

    def run(self, requests: list[SimRequest], concurrency: int | None, *, cap: int | None = None,
            on_step: Callable[[float, int, int], None] | None = None,
            check: Callable[[], None] | None = None) -> SimStats:
        """Simulate until every request finished or was rejected.

        Closed loop when ``concurrency`` is set: the next request is sent when one finishes. Otherwise
        open loop: each request's ``send`` is its schedule, delayed while ``cap`` requests are in flight.
        ``check`` is called every few thousand steps; it raises to stop the simulation (a caller's deadline
        or cancellation), so abandoned work does not keep a core busy.
        """
        stats = SimStats()
        prefill_blocks = 0.0
        for r in requests:
            r.scheduled = r.send if concurrency is None else 0.0
        pending = deque(sorted(requests, key=lambda r: r.send)) if concurrency is None else deque(requests)
        in_flight = 0
        limit = concurrency if concurrency is not None else (cap or math.inf)
        t = 0.0
        waiting: deque[SimRequest] = deque()
        arrivals: list[tuple[float, int, SimRequest]] = []  # sent, not yet at the scheduler
        prefilling: list[SimRequest] = []
        decoding: dict[int, SimRequest] = {}
        finish_heap: list[tuple[float, int]] = []
        g = 0.0  # shared decode clock: tokens generated per decoding sequence
        full_const = 0.0  # sum over decoding of (base - g0): full context = full_const + n * g
        attn = CappedSum(self.window)
        kvs = attn if self.kv_cap == self.window else CappedSum(self.kv_cap)  # equal without spec decode
        order = 0
        admitted: list[SimRequest] = []  # admission order; preemption pops the newest still running
        L = self.step.tokens_per_step
        k1 = 1 + self.step.spec_k
        step_time, window = self.step.step_time, self.window
        # Hot loop: methods and constants as locals.
        blocks, num_blocks, max_num_seqs = self.blocks, self.num_blocks, self.max_num_seqs
        a_full, a_sliding, c_seq, growth_per_token = self._a_full, self._a_sliding, self._c_seq, self._growth_per_token
        heappop = heapq.heappop

        def send_more(now: float) -> None:
            nonlocal in_flight
            while pending and in_flight < limit and (concurrency is not None or pending[0].send <= now + 1e-12):
                r = pending.popleft()
                r.send = now if concurrency is not None else max(r.send, now)
                # The request overhead (HTTP, tokenization) is added to the client's times by the caller;
                # keeping it out of the server's timeline saves a simulation event per request.
                r.arrival = r.send
                in_flight += 1
                heapq.heappush(arrivals, (r.arrival, r.index, r))

        def start_decode(r: SimRequest) -> None:
            nonlocal full_const
            r.base = r.prompt + int(r.generated)
            r.g0 = g - (r.generated - int(r.generated))
            full_const += r.base - r.g0
            attn.add(r.index, r.base, r.g0, g)
            if kvs is not attn:
                kvs.add(r.index, r.base, r.g0, g)
            decoding[r.index] = r
            heapq.heappush(finish_heap, (r.g0 + r.output - (r.base - r.prompt), r.index))

        def stop_decode(r: SimRequest) -> None:
            nonlocal full_const
            r.generated = (r.base - r.prompt) + (g - r.g0)
            full_const -= r.base - r.g0
            attn.remove(r.index)
            if kvs is not attn:
                kvs.remove(r.index)
            del decoding[r.index]

        def finish(r: SimRequest, now: float) -> None:
            nonlocal in_flight
            r.end = now
            r.alive = False
            in_flight -= 1

        def preempt_newest() -> bool:
            victim = None
            while admitted:
                cand = admitted.pop()
                if cand.alive and cand.to_prefill and (cand.index in decoding or cand in prefilling):
                    victim = cand
                    break
            if victim is None:
                return False
            victim.alive = False
            nonlocal prefill_blocks
            if victim.index in decoding:
                stop_decode(victim)
            else:
                prefilling.remove(victim)
                prefill_blocks -= victim.held
                victim.held = 0.0
            victim.preemptions += 1
            stats.preemptions += 1
            victim.to_prefill = victim.prompt + int(victim.generated)
            victim.prefilled = 0
            waiting.appendleft(victim)
            return True

        send_more(t)
        loops = 0
        while pending or arrivals or waiting or prefilling or decoding:
            loops += 1
            if check is not None and not loops & 2047:
                check()
            while arrivals and arrivals[0][0] <= t + 1e-12:
                waiting.append(heappop(arrivals)[2])
            if not (waiting or prefilling or decoding):
                nxt = arrivals[0][0] if arrivals else (pending[0].send if pending and in_flight < limit else None)
                if nxt is None:
                    break
                t = max(t, nxt)
                send_more(t)
                continue
            if attn.heap and attn.heap[0][0] <= g:
                attn.advance(g)
            if kvs is not attn and kvs.heap and kvs.heap[0][0] <= g:
                kvs.advance(g)
            n_dec = len(decoding)
            full_ctx = full_const + n_dec * g
            # attn.total(g), inline (0 capped x an infinite cap is NaN, hence the guards)
            attn_ctx = attn.growing_const + attn.growing * g + (attn.capped * attn.cap if attn.capped else 0.0)
            kv_kept = attn_ctx if kvs is attn else (kvs.growing_const + kvs.growing * g
                                                    + (kvs.capped * kvs.cap if kvs.capped else 0.0))
            used = a_full * full_ctx + a_sliding * kv_kept + c_seq * n_dec + prefill_blocks
            # KV for the decode step itself: every decoding sequence may open a block per group.
            growth = n_dec * k1 * growth_per_token
            if used + growth > num_blocks and (n_dec + len(prefilling)) > 1 and preempt_newest():
                continue
            budget = self.budget - n_dec * k1
            chunks: list[tuple[SimRequest, int]] = []
            for r in prefilling:
                if budget <= 0:
                    break
                c = min(r.to_prefill - r.prefilled, budget)
                need = blocks(r.prefilled + c, c) - r.held
                if used + growth + need > num_blocks:
                    break
                used += need
                chunks.append((r, c))
                budget -= c
            while waiting and budget > 0 and n_dec + len(prefilling) < max_num_seqs:
                r = waiting[0]
                if r.to_prefill == 0:
                    r.to_prefill = r.prompt
                c = min(r.to_prefill, budget)
                need = blocks(c, c)
                if used + growth + need > num_blocks:
                    if not (decoding or prefilling) and blocks(r.prompt + r.output) > num_blocks:
                        waiting.popleft()  # can never fit: vLLM rejects it
                        r.status = "rejected"
                        finish(r, t)
                        send_more(t)
                        continue
                    break
                waiting.popleft()
                order += 1
                r.seq = order
                r.alive = True
                admitted.append(r)
                prefilling.append(r)
                chunks.append((r, c))
                used += need
                budget -= c
            if not chunks and not n_dec:
                if len(prefilling) == 1:
                    # Alone and still unable to take its next chunk: it can never finish (vLLM refuses to
                    # start such a configuration; max_concurrency < 1). Report it instead of spinning.
                    r = prefilling.pop()
                    prefill_blocks -= r.held
                    r.held = 0.0
                    r.status = "rejected"
                    finish(r, t)
                    send_more(t)
                    continue
                if (arrivals or pending) and not (prefilling or waiting):
                    t = max(t, arrivals[0][0] if arrivals else pending[0].send)
                    send_more(t)
                    continue
                if not preempt_newest():
                    break
                continue
            # How many identical steps to take at once.
            steps = 1
            if not chunks:
                steps = math.inf
                if finish_heap:
                    steps = max(1, math.ceil((finish_heap[0][0] - g) / L - 1e-9))
                free = num_blocks - used
                if growth > 0:
                    steps = min(steps, max(1, int(free / growth)))
                # A waiting request that was not admitted now only becomes admissible after a finish
                # (slots, budget or blocks free up), which already bounds the jump.
                next_arrival = arrivals[0][0] if arrivals else (pending[0].send if pending and concurrency is None
                                                               else math.inf)  # fmt: skip
                if next_arrival < math.inf and n_dec < max_num_seqs:
                    dt1 = self._time(n_dec, full_ctx, attn_ctx, [])
                    steps = min(steps, max(1, math.ceil((next_arrival - t) / max(dt1, 1e-9))))
                steps = int(min(steps, 1_000_000))
            elif len(chunks) == 1 and budget <= 0:  # budget used up: nobody can be admitted meanwhile
                r, c = chunks[0]
                left = r.to_prefill - r.prefilled
                if left > c and c > 0:
                    steps = max(1, left // c - (1 if left % c == 0 else 0))
                    if finish_heap:
                        steps = min(steps, max(1, math.ceil((finish_heap[0][0] - g) / L - 1e-9)))
                    if growth > 0:
                        per = growth + blocks(c, c) - blocks(0, 0)
                        steps = min(steps, max(1, int((num_blocks - used) / max(per, 1e-9))))
            mid = (steps - 1) / 2 * L
            if chunks:  # what _time() computes, inline: this is the hottest line of a sweep
                pf_tokens = pf_full = pf_sliding = 0.0
                sampling = 0
                for r, c in chunks:
                    start = r.prefilled + c * (steps - 1) / 2
                    cmid = start + c / 2
                    pf_tokens += c
                    pf_full += c * cmid
                    pf_sliding += c * (cmid if cmid < window else window)
                    if r.prefilled + c * steps >= r.to_prefill:
                        sampling += 1
                dt = step_time(n_dec, full_ctx + n_dec * mid, attn_ctx + attn.growing * mid, pf_tokens, pf_full,
                               pf_sliding, len(chunks), sampling)  # fmt: skip
            else:
                dt = step_time(n_dec, full_ctx + n_dec * mid, attn_ctx + attn.growing * mid)
            t += dt * steps
            stats.steps += steps
            stats.busy_time += dt * steps
            stats.max_running = max(stats.max_running, n_dec + len(prefilling))
            stats.max_blocks_used = max(stats.max_blocks_used, used + growth * steps)
            if n_dec:
                stats.itl_segments.append((dt, n_dec * steps))
            g += L * steps
            for r, c in chunks:
                r.prefilled += c * steps
                if r.prefilled >= r.to_prefill:
                    prefilling.remove(r)
                    prefill_blocks -= r.held
                    r.held = 0.0
                    if r.first_token is None:
                        r.first_token = t
                        r.generated = 1.0
                    if r.generated >= r.output:
                        finish(r, t)
                    else:
                        start_decode(r)
                else:
                    held = blocks(r.prefilled, 0)
                    prefill_blocks += held - r.held
                    r.held = held
            while finish_heap and finish_heap[0][0] <= g + 1e-9:
                _, idx = heappop(finish_heap)
                r = decoding.get(idx)
                if r is None or (r.base - r.prompt) + (g - r.g0) < r.output - 1e-9:
                    continue  # stale entry (preempted and re-admitted)
                stop_decode(r)
                r.generated = float(r.output)
                finish(r, t)
            if on_step is not None:
                on_step(t, len(decoding) + len(prefilling), len(waiting))
            if pending:
                send_more(t)
        return stats

    def _time(self, n_dec: int, full_ctx: float, sliding_ctx: float, chunks: list[tuple[float, int]],
              sampling: int = 0) -> float:
        if not chunks:
            return self.step.step_time(n_dec, full_ctx, sliding_ctx)
        pf_tokens = pf_full = pf_sliding = 0.0
        window = self.window
        for start, c in chunks:
            mid = start + c / 2
            pf_tokens += c
            pf_full += c * mid
            pf_sliding += c * (mid if mid < window else window)
        return self.step.step_time(n_dec, full_ctx, sliding_ctx, pf_tokens, pf_full, pf_sliding, len(chunks), sampling)
