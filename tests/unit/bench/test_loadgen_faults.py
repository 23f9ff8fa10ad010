"""Fault injection through the fake server: every fault classified, every request accounted for."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from tests.fakes.fake_vllm import MALFORMED_CHUNKS, FakeConfig, FakeVLLM, free_port

from inferctl.bench import loadgen, workload
from inferctl.bench.loadgen import LoadSpec
from inferctl.bench.stats import aggregate
from inferctl.bench.transport import make_transport
from inferctl.config import Target
from inferctl.server.client import VLLMClient

TRANSPORTS = ["raw", "aiohttp", "httpx"]


async def _prompts(url: str, context: int = 32, output: int = 4) -> workload.PromptSet:
    async with VLLMClient(Target(name="url", url=url)) as c:
        wl = await workload.prepare(c, "fake-model", api="chat", output_tokens=output)
        ps = wl.prompt_set("cell", 0, context)
        await workload.verify(c, ps)
        return ps


async def _run(url: str, spec: LoadSpec, *, kind: str, timeout: float = 10.0, output: int = 4):
    ps = await _prompts(url, output=output)
    tr = make_transport(Target(name="url", url=url), concurrency=spec.concurrency or 0, timeout=timeout, kind=kind)
    seen = []
    try:
        run = await loadgen.run_cell(tr, ps, spec, sink=seen.append)
    finally:
        await tr.aclose()
    return run, seen


def _accounted(run, seen, n: int) -> None:
    assert len(run.records) == n
    assert len(seen) == n
    assert sorted(r.index for r in seen) == list(range(n))


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_each_fault_is_classified(kind: str) -> None:
    cycle = ["", "429", "500", "503", "reset", "malformed", "no_usage", "no_done", "finish_no_done"]
    cfg = FakeConfig(ttft_ms=1, itl_ms=0.5, fault_cycle=cycle)
    with FakeVLLM(cfg) as fake:
        run, seen = asyncio.run(_run(fake.url, LoadSpec(concurrency=4, requests=len(cycle) * 3, warmup=0), kind=kind))
    _accounted(run, seen, len(cycle) * 3)
    statuses = Counter(r.status for r in seen)
    codes = Counter(r.http_status for r in seen if r.status == "http_error")
    assert codes == {429: 3, 500: 3, 503: 3}
    assert statuses["http_error"] == 9
    assert statuses["stream_broken"] == 9  # reset, malformed, cut off (no finish reason, no [DONE])
    assert statuses["ok"] == 9  # normal, no usage, finish reason then end of body without [DONE]
    no_usage = [r for r in seen if r.status == "ok" and r.completion_tokens is None]
    assert len(no_usage) == 3
    assert all(r.first_token is not None for r in no_usage)
    m = aggregate(seen)
    assert m.requests == 27 and m.ok == 9 and m.errors == 18 and m.missing_usage == 3
    assert m.http_error == 9 and m.stream_broken == 9
    assert m.completion_tokens_total == 6 * 4  # tokens only from usage, never from chunks


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_stalled_stream_is_a_timeout(kind: str) -> None:
    cfg = FakeConfig(ttft_ms=1, itl_ms=0.5, fault_cycle=["stall", ""], stall_s=5.0)
    with FakeVLLM(cfg) as fake:
        run, seen = asyncio.run(_run(fake.url, LoadSpec(concurrency=2, requests=4, warmup=0), kind=kind,
                                     timeout=0.5))
    _accounted(run, seen, 4)
    statuses = Counter(r.status for r in seen)
    assert statuses == {"timeout": 2, "ok": 2}
    stalled = [r for r in seen if r.status == "timeout"]
    assert all(r.first_token is not None for r in stalled)  # it did start streaming


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_nothing_listening_is_a_connection_error(kind: str) -> None:
    async def go():
        with FakeVLLM(FakeConfig()) as fake:
            ps = await _prompts(fake.url)
        url = f"http://127.0.0.1:{free_port()}"
        tr = make_transport(Target(name="url", url=url), concurrency=2, timeout=2, kind=kind)
        try:
            return await loadgen.run_cell(tr, ps, LoadSpec(concurrency=2, requests=6, warmup=1))
        finally:
            await tr.aclose()

    run = asyncio.run(go())
    assert len(run.records) == 7
    assert {r.status for r in run.records} == {"connection_error"}


def test_failing_cell_stops_issuing_but_accounts_for_everything() -> None:
    cfg = FakeConfig(ttft_ms=0.5, itl_ms=0.1, fault_cycle=["503"])
    spec = LoadSpec(concurrency=4, requests=1000, warmup=0, abort_errors=20)
    with FakeVLLM(cfg) as fake:
        run, seen = asyncio.run(_run(fake.url, spec, kind="aiohttp"))
        served = fake.state.requests
    assert run.aborted and "errors" in run.aborted
    assert len(seen) == len(run.records) == served < 1000
    assert {r.status for r in seen} == {"http_error"}


def test_open_loop_poisson_records_schedule_and_queue_wait() -> None:
    cfg = FakeConfig(ttft_ms=20, itl_ms=1)
    spec = LoadSpec(concurrency=2, rate=200.0, requests=30, warmup=2, seed=7)
    with FakeVLLM(cfg) as fake:
        run, seen = asyncio.run(_run(fake.url, spec, kind="aiohttp"))
    _accounted(run, seen, 32)
    assert all(r.status == "ok" for r in seen)
    # A cap of 2 in flight with 20+ ms requests at 200 req/s: requests must wait for a slot.
    waits = [r.send - r.scheduled for r in seen]
    assert max(waits) > 0.02
    scheduled = [r.scheduled for r in sorted(seen, key=lambda r: r.index)]
    assert scheduled == sorted(scheduled)
    assert sum(r.warmup for r in seen) == 2


def test_arrivals_are_seeded_and_have_the_asked_mean() -> None:
    a = loadgen.arrivals(10.0, 1.0, seed=3)
    b = loadgen.arrivals(10.0, 1.0, seed=3)
    xs = [next(a) for _ in range(2001)]
    assert xs == [next(b) for _ in range(2001)]
    assert 180 < xs[-1] < 220  # 2000 gaps of mean 0.1 s
    bursty = loadgen.arrivals(10.0, 0.25, seed=3)
    ys = [next(bursty) for _ in range(2001)]
    gaps_x = sorted(x2 - x1 for x1, x2 in zip(xs, xs[1:], strict=False))
    gaps_y = sorted(y2 - y1 for y1, y2 in zip(ys, ys[1:], strict=False))
    assert gaps_y[1000] < gaps_x[1000]  # burstier: more short gaps at the same mean rate


def test_duration_and_requests_are_both_minimums() -> None:
    cfg = FakeConfig(ttft_ms=1, itl_ms=0.2)
    with FakeVLLM(cfg) as fake:
        run, seen = asyncio.run(_run(fake.url, LoadSpec(concurrency=2, requests=3, duration=0.3, warmup=0),
                                     kind="aiohttp"))
    # Closed loop: a slot issues another request while either minimum is unmet. So, however slow the
    # machine: at least 3 requests, every request beyond the 3rd was issued before the duration was up,
    # and the loop only stopped after a request finished past the duration.
    issued = sorted(r.scheduled for r in seen)
    assert len(seen) >= 3
    assert all(t < 0.3 + 0.05 for t in issued[3:])
    assert max(r.done for r in seen) >= 0.3


@pytest.mark.parametrize("kind", TRANSPORTS)
def test_malformed_chunks_are_failed_records_not_crashes(kind: str) -> None:
    """A well-formed data line of the wrong shape (choices [5], content 5, usage a list, 10,000-deep JSON)."""
    cycle = ["", *sorted(MALFORMED_CHUNKS)]
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.5, fault_cycle=cycle)) as fake:
        run, seen = asyncio.run(_run(fake.url, LoadSpec(concurrency=2, requests=len(cycle) * 2, warmup=0), kind=kind))
    _accounted(run, seen, len(cycle) * 2)
    broken = [r for r in seen if r.status == "stream_broken"]
    assert len(broken) == len(MALFORMED_CHUNKS) * 2
    assert all(r.error.startswith("malformed chunk: ") for r in broken), {r.error for r in broken}
    assert Counter(r.status for r in seen)["ok"] == 2
