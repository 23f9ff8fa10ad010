"""The report, compare, cost and import commands: stable --json shapes and one-sentence errors."""

from __future__ import annotations

import json

import pytest
from tests.unit.report.runs import knee_run, write
from tests.unit.report.test_importers import SEED
from typer.testing import CliRunner

from inferctl.cli.app import app


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("INFERCTL_DEBUG", raising=False)
    root = tmp_path / "runs"
    return root, write(root, knee_run("20260101-000000-a")), write(root, knee_run("20260102-000000-b", scale=1.2))


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line_error(result, text: str) -> None:
    assert result.exit_code != 0 and "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1 and text in err, err


def test_report_json(runs, tmp_path) -> None:
    r = invoke("report", "latest", "--json", "--no-png", "--out", str(tmp_path / "out"))
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert set(d) == {"run_id", "run_path", "source", "out_dir", "markdown", "html", "charts", "findings"}
    assert d["run_id"] == "20260102-000000-b" and d["charts"] == []
    assert {"run_id", "slos", "slo_source", "max_error_rate", "rows", "findings"} <= set(d["findings"])
    f = d["findings"]["findings"][0]
    assert set(f) == {"kind", "severity", "context", "text", "cells", "numbers"}


def test_compare_json_by_prefix_and_labels(runs) -> None:
    r = invoke("compare", "20260101", "20260102", "-l", "a", "-l", "b", "--json", "--no-files")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["out_dir"] is None and [x["label"] for x in d["comparison"]["runs"]] == ["a", "b"]
    cell = d["comparison"]["cells"][0]
    assert cell["deltas"]["request_throughput"][1] == pytest.approx(0.2)
    assert set(d["comparison"]) >= {"runs", "baseline", "metrics", "cells", "verdicts", "summary",
                                    "config_differences", "unmatched", "tie_threshold"}


def test_cost_json_and_compare(runs) -> None:
    r = invoke("cost", "latest", "--price-per-hour", "3.6", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    c1 = d["cells"][0]
    assert c1["usd_per_million_requests"] == pytest.approx(3.6 / (1.2 * 3600) * 1e6, rel=1e-5)
    assert d["monthly"]["always_on_usd"] == pytest.approx(2628.0)
    r = invoke("cost", "--compare", "20260101", "20260102", "--hardware", "cloudrun-l4", "--hardware",
               "cloudrun-l4", "--json")
    assert r.exit_code == 0, r.output
    rk = json.loads(r.stdout)
    assert [e["run_id"] for e in rk["entries"]] == ["20260102-000000-b", "20260101-000000-a"]


def test_import_json(runs, tmp_path) -> None:
    f = tmp_path / "benchmark_sweep_results.csv"
    f.write_text(SEED)
    r = invoke("import", str(f), "--hardware", "tpu-v6e-1", "--json")
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert d["format"] == "seed-csv" and d["cells"] == 3
    r = invoke("cost", d["run_id"], "--json")  # the imported --hardware prices it
    assert r.exit_code == 0 and json.loads(r.stdout)["hardware"]["key"] == "tpu-v6e-1"


def test_bad_input_is_one_sentence(runs, tmp_path) -> None:
    root, a, _ = runs
    one_line_error(invoke("report", "nope"), "No run 'nope'")
    one_line_error(invoke("cost", "latest", "--hardware", "tpu-v99"), "Unknown hardware 'tpu-v99'")
    one_line_error(invoke("cost", "20260101"), "does not say which priced hardware")
    meta = json.loads((a / "meta.json").read_text())
    (a / "meta.json").write_text(json.dumps({**meta, "format_version": 99}))
    one_line_error(invoke("report", a.name), "format_version 99")
    weird = tmp_path / "x.txt"
    weird.write_text("hello world")
    one_line_error(invoke("import", str(weird)), "Cannot tell the format")
    one_line_error(invoke("compare", "20260102"), "at least two runs")
