"""A live, step-by-step version of the scheduler simulation, driven by real requests in real time.

`inferctl sim serve` needs tokens to come out while requests are still arriving, so instead of the
offline simulation's jumps this loop takes one engine step at a time: it schedules like vLLM (running
first, then waiting FCFS while budget, ``max_num_seqs`` and KV blocks allow; newest preempted when KV
runs out), asks the same :class:`~inferctl.plan.perf.StepModel` how long the step takes, sleeps that long
(divided by ``speed``) and hands each sequence its tokens. Its counters feed the server's /metrics.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from inferctl.plan.cells import SimEngine


@dataclass
class LiveRequest:
    """One request inside the live engine."""

    prompt: int
    max_tokens: int
    queue: asyncio.Queue = field(default_factory=asyncio.Queue)  # ints: tokens produced; None: finished
    arrived: float = field(default_factory=time.monotonic)
    to_prefill: int = 0
    prefilled: int = 0
    generated: int = 0
    carry: float = 0.0  # fractional tokens (speculative decoding's expected acceptance)
    first_token: float | None = None
    preemptions: int = 0
    cancelled: bool = False


class LiveEngine:
    """Step the simulated engine while there is work; counters mirror vLLM's metrics."""

    def __init__(self, sim: SimEngine, speed: float = 1.0) -> None:
        self.sim = sim
        self.speed = speed
        self.sched = sim.scheduler()
        r = sim.resolved
        self.max_num_seqs = r.max_num_seqs
        self.budget = r.max_num_batched_tokens
        self.waiting: list[LiveRequest] = []
        self.running: list[LiveRequest] = []
        self.wake = asyncio.Event()
        self.task: asyncio.Task | None = None
        # counters for /metrics
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.success_total = 0
        self.preemptions_total = 0
        self.kv_usage = 0.0
        self.ttft: list[float] = []
        self.itl: list[float] = []
        self.e2e: list[float] = []
        self.steps = 0

    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    def submit(self, prompt: int, max_tokens: int) -> LiveRequest:
        req = LiveRequest(prompt=prompt, max_tokens=max_tokens, to_prefill=prompt)
        self.waiting.append(req)
        self.wake.set()
        return req

    def _context(self, req: LiveRequest) -> int:
        if req.prefilled < req.to_prefill:
            return req.prefilled
        return req.prompt + req.generated

    def _schedule(self) -> list[tuple[LiveRequest, int]]:
        """Tokens per running request for the next step (0 for decode = one step of decode)."""
        k1 = 1 + self.sim.step.spec_k
        nb = self.sched.num_blocks
        used = sum(self.sched.blocks(self._context(r), 1) for r in self.running)
        plan: list[tuple[LiveRequest, int]] = []
        budget = self.budget
        for r in list(self.running):
            if r.prefilled < r.to_prefill:
                c = min(r.to_prefill - r.prefilled, budget)
                if c <= 0:
                    continue
                plan.append((r, c))
                budget -= c
            else:
                plan.append((r, 0))
                budget -= k1
        while used > nb and len(self.running) > 1:  # preempt the newest (vLLM's recompute)
            victim = self.running.pop()
            used -= self.sched.blocks(self._context(victim), 1)
            plan = [(r, c) for r, c in plan if r is not victim]
            victim.preemptions += 1
            self.preemptions_total += 1
            victim.to_prefill = victim.prompt + victim.generated
            victim.prefilled = 0
            self.waiting.insert(0, victim)
        while self.waiting and budget > 0 and len(self.running) < self.max_num_seqs:
            r = self.waiting[0]
            c = min(r.to_prefill, budget)
            need = self.sched.blocks(c, c)
            if used + need > nb and self.running:
                break
            self.waiting.pop(0)
            self.running.append(r)
            plan.append((r, c))
            used += need
            budget -= c
        self.kv_usage = min(1.0, used / max(nb, 1))
        return plan

    def _step_time(self, plan: list[tuple[LiveRequest, int]]) -> float:
        n_dec = sum(1 for _, c in plan if c == 0)
        window = self.sched.window
        full = sum(r.prompt + r.generated for r, c in plan if c == 0)
        sliding = sum(min(r.prompt + r.generated, window) for r, c in plan if c == 0)
        chunks = [(r.prefilled, c) for r, c in plan if c > 0]
        sampling = sum(1 for r, c in plan if c > 0 and r.prefilled + c >= r.to_prefill)
        return self.sched._time(n_dec, full, sliding, chunks, sampling)  # noqa: SLF001 - same package family

    async def _loop(self) -> None:
        step_tokens = self.sim.step.tokens_per_step
        while True:
            self.running = [r for r in self.running if not r.cancelled]
            self.waiting = [r for r in self.waiting if not r.cancelled]
            if not self.running and not self.waiting:
                self.kv_usage = 0.0
                self.wake.clear()
                await self.wake.wait()
                continue
            plan = self._schedule()
            if not plan:
                await asyncio.sleep(0.001)
                continue
            dt = self._step_time(plan)
            await asyncio.sleep(dt / self.speed)
            now = time.monotonic()
            self.steps += 1
            for r, c in plan:
                if c > 0:
                    r.prefilled += c
                    if r.prefilled < r.to_prefill:
                        continue
                    if r.first_token is None:
                        r.first_token = now
                        self.prompt_tokens_total += r.prompt
                        self.ttft.append((now - r.arrived) * self.speed)
                        self._emit(r, 1)
                    continue
                r.carry += step_tokens
                n = min(int(r.carry), r.max_tokens - r.generated)
                r.carry -= int(r.carry)
                self.itl.append(dt)
                self._emit(r, n)
            for r in [r for r in self.running if r.generated >= r.max_tokens]:
                self.running.remove(r)
                self.success_total += 1
                self.e2e.append((now - r.arrived) * self.speed)
                r.queue.put_nowait(None)

    def _emit(self, r: LiveRequest, n: int) -> None:
        if n <= 0:
            return
        r.generated += n
        self.generation_tokens_total += n
        r.queue.put_nowait(n)


def bucket_counts(values: list[float], buckets: list[float]) -> list[int]:
    """Cumulative counts per upper bound (Prometheus histogram buckets), +Inf last."""
    out = [sum(1 for v in values if v <= b) for b in buckets]
    return [*out, len(values)]


TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0, 160.0, 640.0, 2560.0]  # fmt: skip
ITL_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0,
               80.0]  # fmt: skip
E2E_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0,
               960.0, 1920.0, 7680.0]  # fmt: skip
