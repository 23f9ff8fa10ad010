"""Calibrating accelerators on the measurement corpus: entries as fit groups, the fit, held-out error, CLI."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from inferctl.catalog import accelerators
from inferctl.catalog.corpus import load_corpus, parse_file
from inferctl.cli.app import app
from inferctl.plan.cells import SimEngine, simulate_cell
from inferctl.plan.corpus_fit import (
    PHYSICAL_CEIL,
    CorpusGroups,
    corpus_groups,
    entry_group,
    fit_entries,
    held_out,
    score_entries,
)
from inferctl.plan.perf import PerfParams

HEAD = """
[source]
id = "{sid}"
url = "https://example.org/{sid}"
date = "2026-01-01"
title = "synthetic"
kind = "blog"
"""

ENTRY = """
[[entries]]
id = "{eid}"
accelerator = "l4"
hardware = "1x L4"
count = 1
model = "{model}"
weight_format = "bf16"
[entries.flags]
max_model_len = 4096
[entries.workload]
dataset = "{dataset}"
input_len = {ctx}
output_len = {out}
{load}
[entries.metrics]
request_throughput = {rps}
output_throughput = {otps}
ttft_median_ms = {ttft}
tpot_median_ms = {tpot}
{extra}
"""


def corpus_file(sid: str, rows: list[dict]) -> str:
    return HEAD.format(sid=sid) + "".join(ENTRY.format(**r) for r in rows)


def row(eid, *, model="meta-llama/Llama-3.1-8B", ctx=512, out=128, load="max_concurrency = 8\nnum_prompts = 32",
        dataset="random", rps=1.0, otps=128.0, ttft=100.0, tpot=30.0, extra="") -> dict:  # fmt: skip
    return {"eid": eid, "model": model, "ctx": ctx, "out": out, "load": load, "dataset": dataset, "rps": rps,
            "otps": otps, "ttft": ttft, "tpot": tpot, "extra": extra}


def entries(text: str, name: str = "x.toml"):
    return tuple(parse_file(name, text).entries)


def test_workload_becomes_the_bench_cell(tmp_path) -> None:
    es = entries(corpus_file("s", [
        row("burst", load="request_rate = inf\nnum_prompts = 20"),
        row("capped", load="request_rate = inf\nmax_concurrency = 8\nnum_prompts = 3000"),
        row("open", load="request_rate = 2.5\nnum_prompts = 50"),
        row("sharegpt", dataset="sharegpt", load="request_rate = inf\nnum_prompts = 10",
            extra="completed = 10\ntotal_input_tokens = 1585\ntotal_output_tokens = 2490"),
    ]))  # fmt: skip
    burst, capped, open_, sharegpt = (entry_group(e, tmp_path) for e in es)
    # A burst of N prompts is concurrency N, N requests, no warm-up.
    cell = burst.group.spec.cells()[0]
    assert (cell.concurrency, burst.group.spec.requests, burst.group.spec.warmup) == (20, 20, 0)
    # --max-concurrency C: closed loop at C; a long run is cut to a steady state.
    assert capped.group.spec.cells()[0].concurrency == 8 and capped.group.spec.requests == 256
    assert open_.group.spec.cells()[0].rate == 2.5
    # ShareGPT: mean measured lengths; throughput of a short mixed-length batch is not compared.
    sg = sharegpt.group.spec.cells()[0]
    assert (sg.context, sharegpt.group.spec.output_tokens) == (158, 249)
    m = sharegpt.group.measured[0].metrics
    assert not m.request_throughput and not m.output_throughput and m.tpot.p50 == 30.0


def test_unknown_model_is_skipped_and_counted(tmp_path) -> None:
    es = entries(corpus_file("s", [row("known"), row("unknown", model="nobody/NoSuchModel-3B")]))
    acc = corpus_groups(entries=es, cache_dir=tmp_path)["l4"]
    assert [g.entry.id for g in acc.groups] == ["known"]
    assert acc.skipped[0].entry_id == "unknown" and "cannot describe nobody/NoSuchModel-3B" in acc.skipped[0].reason


def simulated_rows(truth: PerfParams, tmp_path, model: str, specs: list[tuple[int, int]], prefix: str) -> list[dict]:
    """Rows whose metrics are what the simulator gives with ``truth`` (a hardware we know the answer for)."""
    rows = []
    for ctx, conc in specs:
        r = row(f"{prefix}-{ctx}-{conc}", model=model, ctx=ctx, load=f"max_concurrency = {conc}\nnum_prompts = "
                f"{4 * conc}")  # fmt: skip
        g = entry_group(entries(corpus_file("t", [r]))[0], tmp_path)
        res, _, _ = simulate_cell(SimEngine(g.group.engine_for(truth).resolved, truth), g.group.spec,
                                  g.group.spec.cells()[0])  # fmt: skip
        m = res.metrics
        rows.append(row(r["eid"], model=model, ctx=ctx, load=r["load"], rps=round(m.request_throughput, 4),
                        otps=round(m.output_throughput, 2), ttft=round(m.ttft.p50, 3), tpot=round(m.tpot.p50, 3)))
    return rows


def test_fit_recovers_a_hardware_and_transfers_to_another_source(tmp_path) -> None:
    # An "L4" that reaches half the prior's bandwidth and has twice its step overhead: two sources, two models.
    prior = entry_group(entries(corpus_file("p", [row("p")]))[0], tmp_path).prior
    truth = prior.model_copy(update={"bw_efficiency": 0.35, "step_overhead_ms": 8.0})
    a = simulated_rows(truth, tmp_path, "meta-llama/Llama-3.1-8B", [(512, 1), (512, 8), (2048, 4)], "a")
    b = simulated_rows(truth, tmp_path, "Qwen/Qwen2.5-0.5B-Instruct", [(256, 1), (256, 16)], "b")
    es = entries(corpus_file("src-a", a)) + entries(corpus_file("src-b", b), "y.toml")
    acc = corpus_groups(entries=es, cache_dir=tmp_path)["l4"]
    h = held_out(acc, iters=120)
    assert h.mode == "leave-one-source-out" and h.sources == ["src-a", "src-b"]
    for k in ("request_throughput", "tpot_p50"):
        assert h.calibrated[k].median_abs < h.prior[k].median_abs / 2, (k, h.calibrated[k], h.prior[k])
    fitted = fit_entries(acc.groups, iters=120)
    assert fitted.bw_efficiency < prior.bw_efficiency and fitted.bw_efficiency <= PHYSICAL_CEIL["bw_efficiency"]


def test_one_source_is_held_out_entry_by_entry(tmp_path) -> None:
    es = entries(corpus_file("only", [row("a"), row("b", ctx=1024)]))
    acc: CorpusGroups = corpus_groups(entries=es, cache_dir=tmp_path)["l4"]
    h = held_out(acc, iters=10)
    assert h.mode == "leave-one-entry-out" and {c.cell for c in h.cells} == {"a", "b"}


def test_shipped_calibrations_name_real_entries_and_are_used_by_default() -> None:
    corpus = {e.id: e for e in load_corpus()}
    shipped = {n: a for n, a in accelerators().items() if a.calibration}
    for name, acc in shipped.items():
        cal = acc.calibration
        assert cal.error is not None and cal.error.measurements == len(cal.entries) > 0
        assert all(corpus[e].accelerator == name for e in cal.entries)
        assert set(cal.error.sources) == {corpus[e].source.id for e in cal.entries}
        assert cal.params["bw_efficiency"] <= 1 and cal.params["compute_efficiency"] <= 1
        assert {"request_throughput", "tpot_p50", "ttft_p50"} & set(cal.error.median_abs_pct)
        assert acc.prior_error is not None  # shipped next to the prior's own error on the same entries
    for name, acc in corpus_groups().items():
        if not acc.groups:
            continue
        g = acc.groups[0]
        engine = g.group.engine_for(None)  # SimEngine's own default
        cal = accelerators()[name].calibration
        assert engine.params.bw_efficiency == (cal.params["bw_efficiency"] if cal else g.prior.bw_efficiency)
        # Fits and the benchmark start from the uncalibrated prior, never from a shipped calibration.
        assert g.prior.bw_efficiency == accelerators()[name].bw_efficiency


def test_score_entries_uses_each_entrys_prior_without_params(tmp_path) -> None:
    es = entries(corpus_file("s", [row("a")]))
    acc = corpus_groups(entries=es, cache_dir=tmp_path)["l4"]
    assert score_entries(acc.groups, None)[0].cell == "a"


# -- CLI ---------------------------------------------------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_cli_corpus_mode_fits_one_accelerator_and_writes_parameters(tmp_path) -> None:
    res = invoke("calibrate", "--corpus", "--accelerator", "l4", "--out", str(tmp_path), "--json")
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    (fit,) = report["accelerators"]
    l4 = [e for e in load_corpus() if e.accelerator == "l4"]
    assert fit["accelerator"] == "l4" and len(fit["entries"]) == len(l4) >= 6
    assert set(fit["sources"]) == {e.source.id for e in l4} and "wmx-ai-l4-qwen25-05b" in fit["sources"]
    assert fit["errors"]["request_throughput"]["median_abs"] < fit["prior_errors"]["request_throughput"]["median_abs"]
    written = json.loads((tmp_path / "l4.json").read_text())
    assert written["params"] == fit["params"]
    # The file is a calibration plan/simulate read.
    sim = invoke("simulate", "gemma-4-e4b", "--accelerator", "l4",
                 "--concurrency", "1", "--context", "128", "--output-tokens", "8", "--calibration",
                 str(tmp_path / "l4.json"), "--json", "--runs-dir", str(tmp_path / "runs"))  # fmt: skip
    assert sim.exit_code == 0, sim.output


@pytest.mark.parametrize("args, message", [
    (["calibrate", "--corpus", "latest"], "Pass measured runs or --corpus, not both."),
    (["calibrate"], "Name at least one measured run, or pass --corpus."),
    (["calibrate", "--corpus", "--accelerator", "tpu-v5e"], "The measurement corpus has no entries for tpu-v5e."),
    (["calibrate", "--corpus", "--accelerator", "nosuch"], "Unknown accelerator 'nosuch'"),
])  # fmt: skip
def test_cli_corpus_bad_input_is_one_line(args, message) -> None:
    res = invoke(*args)
    assert res.exit_code != 0
    err = res.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1 and message in err, err
