"""cost: $/1M arithmetic by hand, SLO-bounded capacity, monthly always-on vs active hours, ranking."""

from __future__ import annotations

import pytest
from tests.unit.report.runs import cell, knee_run, run

from inferctl.catalog.prices import HardwarePrice
from inferctl.report.cost import cost, per_million, rank


def hw(usd: float, key: str = "test-hw", stz: bool = True) -> HardwarePrice:
    return HardwarePrice(key=key, usd_per_hour=usd, scale_to_zero=stz, verified=True)


def test_per_million_by_hand() -> None:
    assert per_million(3.6, 10.0) == pytest.approx(100.0)      # 3.6 $/h / 36,000 req/h × 1e6
    assert per_million(3.6, 500.0) == pytest.approx(2.0)       # 3.6 / 1,800,000 tok/h × 1e6
    assert per_million(3.6, 0.0) is None and per_million(3.6, None) is None


def test_cells_and_capacity() -> None:
    r = run([cell(128, 1, 10.0, out_tok=50, ttft95=100), cell(128, 4, 20.0, out_tok=50, ttft95=300),
             cell(128, 8, 25.0, out_tok=50, ttft95=3000)])
    res = cost(r, hw(3.6), slos=["ttft_p95_ms=1000"])
    c1 = res.cells[0]
    assert c1.usd_per_million_requests == pytest.approx(100.0)
    assert c1.usd_per_million_output_tokens == pytest.approx(2.0)       # 10 req/s × 50 tok
    assert c1.usd_per_million_total_tokens == pytest.approx(3.6 / (10 * 178 * 3600) * 1e6, rel=1e-5)
    assert [c.meets_slo for c in res.cells] == [True, True, False]
    (cap,) = res.capacity
    assert cap.cell == "ctx128-c4" and cap.usd_per_million_requests == pytest.approx(50.0)


def test_monthly_always_on_vs_active_hours() -> None:
    res = cost(knee_run(), hw(3.6), active_hours=8)
    assert res.monthly.always_on_usd == pytest.approx(2628.0)        # 3.6 × 730
    assert res.monthly.active_only_usd == pytest.approx(876.0)       # 3.6 × 8 × 730 / 24
    assert res.monthly.saving_usd == pytest.approx(1752.0) and res.monthly.mode == "scale-to-zero"
    assert cost(knee_run(), hw(3.6, stz=False)).monthly.mode == "stop-when-idle"


def test_no_cell_meeting_slos_says_so() -> None:
    res = cost(knee_run(), hw(1.0), slos=["ttft_p95_ms=1"])
    assert all(c.cell is None and "no cell meets" in c.note for c in res.capacity)


def test_ranking_at_the_same_slos() -> None:
    cheap = cost(knee_run("A", scale=2.0), hw(2.0, "l4"), label="l4")
    dear = cost(knee_run("B"), hw(2.0, "v6e"), label="v6e")
    rk = rank([dear, cheap])
    assert [e.label for e in rk.entries] == ["l4", "v6e"] and [e.rank for e in rk.entries] == [1, 2]
    assert rk.contexts == [128, 1024]
    assert "2.00× cheaper" in rk.summary[0]   # twice the throughput at the same price
