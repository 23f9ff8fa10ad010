"""compare: deltas and winners checked against hand-computed numbers; regions where a run wins or loses."""

from __future__ import annotations

import pytest
from tests.unit.report.runs import cell, run

from inferctl.report.compare import compare


def _runs():
    # B (say MTP) is faster at low concurrency and slower at high: the seed's conclusion, made visible.
    a = run([cell(128, 1, 10.0, ttft=200), cell(128, 2, 18.0, ttft=220), cell(128, 4, 30.0, ttft=300),
             cell(128, 8, 40.0, ttft=500), cell(128, 16, 44.0, ttft=900)], run_id="A")
    b = run([cell(128, 1, 12.0, ttft=150), cell(128, 2, 21.6, ttft=160), cell(128, 4, 30.6, ttft=300),
             cell(128, 8, 34.0, ttft=600), cell(128, 16, 35.2, ttft=1200), cell(1024, 1, 3.0)], run_id="B")
    return a, b


def test_deltas_and_winners_by_hand() -> None:
    cmp = compare(list(_runs()), labels=["std", "mtp"])
    c1 = next(c for c in cmp.cells if c.load == 1)
    assert c1.values["request_throughput"] == [10.0, 12.0]
    assert c1.deltas["request_throughput"] == [None, 0.2]          # (12 - 10) / 10
    assert c1.deltas["ttft_p50"] == [None, -0.25]                  # (150 - 200) / 200
    assert c1.winners["request_throughput"] == "mtp" and c1.winners["ttft_p50"] == "mtp"
    c4 = next(c for c in cmp.cells if c.load == 4)
    assert c4.deltas["request_throughput"][1] == 0.02 and c4.winners["request_throughput"] is None  # 2% < 5%: tie
    c16 = next(c for c in cmp.cells if c.load == 16)
    assert c16.deltas["request_throughput"][1] == -0.2 and c16.winners["request_throughput"] == "std"
    assert cmp.unmatched == {"mtp": ["ctx1024-c1"]}


def test_where_a_run_wins_is_spelled_out() -> None:
    cmp = compare(list(_runs()), labels=["std", "mtp"])
    v = next(v for v in cmp.verdicts if v.metric == "output_throughput")
    assert (v.wins, v.losses, v.ties) == (2, 2, 1)
    text = " ".join(v.statements)
    assert "ctx 128: mtp wins at c=1–2 (+20%, +20%); ties at c=4 (+2%); loses at c=8–16 (−15%, −20%)" in text
    assert "+20% at low load (c=1–4), −18% at high load (c=8–16)" in text
    assert any("mtp wins 2, loses 2, ties 1 of 5 cells" in s for s in cmp.summary)


def test_tie_threshold_is_respected() -> None:
    cmp = compare(list(_runs()), labels=["std", "mtp"], tie_threshold=0.25)
    assert all(c.winners["request_throughput"] is None for c in cmp.cells)


def test_config_differences_show_what_changed() -> None:
    a, b = _runs()
    b = type(b)(meta=b.meta.model_copy(update={"model": "gemma-qat", "vllm_version": "0.33.0"}), cells=b.cells)
    diff = compare([a, b]).config_differences
    assert diff["model"] == ["tiny", "gemma-qat"] and diff["vllm_version"] == ["0.32.0", "0.33.0"]
    assert "max_model_len" not in diff


def test_duplicate_labels_are_made_distinct_and_three_runs_work() -> None:
    a, b = _runs()
    cmp = compare([a, b, a], labels=["x", "x", "x"])
    assert [r.label for r in cmp.runs] == ["x (1)", "x (2)", "x (3)"]
    assert cmp.cells[0].deltas["request_throughput"][2] == 0.0


def test_unknown_metric_is_an_error() -> None:
    from inferctl.errors import ConfigError

    with pytest.raises(ConfigError, match="Unknown metric 'speed'"):
        compare(list(_runs()), metrics=["speed"])
