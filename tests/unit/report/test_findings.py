"""Findings on constructed runs whose knees, SLO limits and failures are known."""

from __future__ import annotations

from tests.unit.report.runs import cell, knee_run, run

from inferctl.report.findings import compute


def _by(f, kind, ctx=None):
    return [x for x in f.findings if x.kind == kind and (ctx is None or x.context == ctx)]


def test_saturation_point_is_the_first_load_within_90_percent_of_the_peak() -> None:
    f = compute(knee_run())
    row = next(r for r in f.rows if r.context == 128)
    assert row.saturation_load == 8 and row.peak_load == 16 and row.peak_request_throughput == 8.1
    (sat,) = _by(f, "saturation", 128)
    assert "saturates at c=8" in sat.text and "7.60 req/s" in sat.text and "8.10 req/s at c=16" in sat.text
    assert sat.numbers["saturation_load"] == 8 and sat.cells[0] == "ctx128-c8"


def test_a_row_still_growing_is_not_saturated_within_the_grid() -> None:
    f = compute(knee_run())
    row = next(r for r in f.rows if r.context == 1024)
    assert row.saturation_load is None
    (sat,) = _by(f, "saturation", 1024)
    assert "not saturated within the grid" in sat.text and "1.50 req/s at c=2 to 2.90 req/s at c=4" in sat.text


def test_one_noisy_dip_does_not_fake_a_knee() -> None:
    r = run([cell(128, 1, 3.0), cell(128, 2, 2.0), cell(128, 4, 6.0), cell(128, 8, 12.0)])
    assert compute(r).rows[0].saturation_load is None


def test_slo_capacity_cites_the_cell_and_why_the_next_one_misses() -> None:
    f = compute(knee_run(), slos=["ttft_p95_ms=2000"])
    (slo,) = _by(f, "slo_capacity", 128)
    assert slo.numbers["slo_max_load"] == 8 and f.slo_source == "given"
    assert "c=16 misses: ttft p95 2,600 ms > 2000" in slo.text
    tighter = compute(knee_run(), slos=["ttft_p95_ms=100"])
    assert next(r for r in tighter.rows if r.context == 128).slo_max_load == 2


def test_slos_come_from_the_run_when_not_given_else_defaults() -> None:
    r = knee_run(grid={"contexts": [128, 1024], "slos": [{"metric": "ttft", "stat": "p95", "limit_ms": 500}]})
    f = compute(r)
    assert f.slo_source == "run" and f.slos == ["ttft_p95_ms=500"]
    assert next(x for x in f.rows if x.context == 128).slo_max_load == 4
    assert compute(knee_run()).slo_source == "default"


def test_operating_range_stops_at_the_knee_when_the_knee_meets_the_slos() -> None:
    f = compute(knee_run(), slos=["ttft_p95_ms=5000", "tpot_p95_ms=1000"], max_error_rate=0.5)
    row = next(r for r in f.rows if r.context == 128)
    assert row.slo_max_load == 32  # everything meets these loose SLOs...
    assert (row.recommended_min_load, row.recommended_max_load) == (1, 8)  # ...but past the knee is waste
    (rng,) = _by(f, "operating_range", 128)
    assert "c=1–8" in rng.text and "saturation point" in rng.text


def test_failure_boundary_says_where_and_why() -> None:
    f = compute(knee_run())
    (fail,) = _by(f, "failure", 128)
    assert fail.numbers["failure_load"] == 32 and fail.severity == "problem"
    assert "success 75% (30/40)" in fail.text and "6 timeouts" in fail.text and "4 HTTP 503 server errors" in fail.text
    assert "Service Unavailable" in fail.text
    assert not _by(f, "failure", 1024)


def test_infeasible_cells_are_a_boundary_with_their_reason() -> None:
    r = run([cell(128, 1, 2.0), cell(4096, 1, 0, status="infeasible", reason="prompt + output > max_model_len 2048")])
    (fail,) = _by(compute(r), "failure", 4096)
    assert "nothing sent" in fail.text and "max_model_len 2048" in fail.text and fail.severity == "warning"


def test_client_bound_cells_are_named() -> None:
    r = run([cell(128, 1, 2.0), cell(128, 64, 9.0, client_bound=True)])
    (cb,) = _by(compute(r), "client_bound")
    assert cb.cells == ["ctx128-c64"] and "1 of 2 cells" in cb.text and "40 ms" in cb.text


def test_spec_decode_acceptance_is_summarised_only_when_present() -> None:
    assert not _by(compute(knee_run()), "spec_decode")
    r = run([cell(128, 1, 2.0, server={"spec_decode_acceptance_rate": 0.8, "spec_decode_mean_acceptance_length": 3.4}),
             cell(128, 4, 6.0, server={"spec_decode_acceptance_rate": 0.6, "spec_decode_mean_acceptance_length": 2.8})])
    (sd,) = _by(compute(r), "spec_decode")
    assert sd.numbers["acceptance_rate_mean"] == 0.7 and sd.numbers["mean_acceptance_length"] == 3.1
    assert "70%" in sd.text and "lowest 60% at ctx128-c4" in sd.text


def test_kv_pressure_and_preemptions() -> None:
    r = run([cell(128, 1, 2.0, server={"kv_cache_usage_peak": 0.3}),
             cell(128, 8, 6.0, server={"kv_cache_usage_peak": 0.99, "preemptions": 12.0})])
    (kv,) = _by(compute(r), "kv_pressure")
    assert kv.cells == ["ctx128-c8"] and "12 preemptions" in kv.text and "99%" in kv.text


def test_open_loop_rows_use_rates() -> None:
    r = run([cell(128, None, 1.0, rate=1.0), cell(128, None, 2.0, rate=2.0), cell(128, None, 2.05, rate=4.0)])
    f = compute(r)
    assert f.rows[0].load_kind == "rate" and f.rows[0].saturation_load == 2.0
    assert "r=2/s" in _by(f, "saturation")[0].text
