"""Fleet sizing (issue 12): workloads, hand-checkable searches, ranking against brute force, no-fit refusals."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from inferctl.catalog.prices import HOURS_PER_MONTH, hardware_price
from inferctl.cli.app import app
from inferctl.errors import ConfigError
from inferctl.plan.cells import SimEngine
from inferctl.plan.config import resolve
from inferctl.plan.fleet import Evaluator, bounds, search
from inferctl.plan.workload import Lengths, load_workload, workload_from_dict


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("INFERCTL_DEBUG", raising=False)


# One L4 on Cloud Run, the QAT 12B, fp8 KV, no MTP: one candidate, one price (on-demand only in the catalog).
L4_ONLY = {"accelerators": ["l4"], "platforms": ["cloudrun"], "kv_dtypes": ["fp8"], "speculative": ["off"],
           "max_devices": 1}


def small(rate: float, **over) -> dict:
    return {"rate": rate, "prompt_tokens": 512, "output_tokens": 64, "slo": ["ttft_p95_ms=5000"],
            "models": ["gemma-4-12b:w4a16"], "search": dict(L4_ONLY), **over}


# -- the workload ----------------------------------------------------------------------------------------


def test_percentiles_are_sampled_by_the_documented_rule():
    d = Lengths.model_validate({"p50": 1000, "p90": 2000})
    # linear between the given percentiles, clamped below the lowest and above the highest
    assert d.quantile(0.7) == 1500 and d.quantile(0.1) == 1000 and d.quantile(0.99) == 2000
    sample = d.sample(10, seed=3)
    assert sorted(sample) == sorted(d.quantile((i + 0.5) / 10) for i in range(10))
    assert d.sample(10, seed=3) == sample  # reproducible
    assert Lengths.model_validate(300).sample(4) == [300] * 4


@pytest.mark.parametrize(("data", "words"), [
    ({"prompt_tokens": 10, "output_tokens": 10, "models": ["gemma-4-12b"]}, "rate"),
    ({"rate": 1, "prompt_tokens": {"p50": 10, "p90": 5}, "output_tokens": 10, "models": ["x"]}, "higher percentiles"),
    ({"rate": 1, "prompt_tokens": {"median": 10}, "output_tokens": 10, "models": ["x"]}, "not a percentile"),
    ({"rate": 1, "prompt_tokens": 10, "output_tokens": 10, "models": ["x"], "slo": ["fast"]}, "slo 'fast'"),
])  # fmt: skip
def test_bad_workloads_are_one_sentence(data, words):
    with pytest.raises(ConfigError) as e:
        workload_from_dict(data)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_every_shipped_example_loads():
    from pathlib import Path

    files = sorted(Path("examples").glob("*.toml"))
    assert files
    for f in files:
        w = load_workload(f)
        assert w.peak_rate > 0 and w.models and w.name == f.stem


def test_shipped_example_loads(tmp_path):
    w = load_workload("examples/chat-40rps.toml")
    assert w.peak_rate == 40 and w.prompt_tokens.fixed == 3000 and w.output_tokens.fixed == 400
    assert [s.key for s in w.slos] == ["ttft_p95_ms"] and w.max_model_len == 4096
    bad = tmp_path / "bad.toml"
    bad.write_text("rate = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_workload(bad)


# -- hand-checkable searches ------------------------------------------------------------------------------


def test_a_workload_one_l4_replica_meets_costs_one_instance_all_month():
    r = search(workload_from_dict(small(0.05)))
    assert r.counts["simulated"] == 1 and r.rows, r
    top = r.rows[0]
    assert (top.replicas, top.machines, top.price_key, top.tier) == (1, 1, "cloudrun-l4", "on-demand")
    hand = hardware_price("cloudrun-l4").usd_per_hour * HOURS_PER_MONTH
    assert top.monthly_always_on == pytest.approx(hand, abs=0.01) and top.monthly == top.monthly_always_on
    assert top.capacity_rps >= 0.05 and top.headroom == pytest.approx(top.capacity_rps / 0.05 - 1, abs=1e-3)
    # the catalog has no spot/committed price for Cloud Run: skipped and said so
    assert any("cloudrun-l4: spot, committed-1y, committed-3y" in n for n in r.notes)


def test_a_workload_that_needs_n_replicas_and_the_traffic_shape():
    cap = search(workload_from_dict(small(0.05))).rows[0].capacity_rps
    rate = 2.5 * cap
    r = search(workload_from_dict(small(rate, traffic={"peak_hours": 12, "off_peak": 0.0})))
    top = r.rows[0]
    assert top.capacity_rps == cap  # the capacity is the candidate's, not the load's
    assert top.replicas == math.ceil(rate / cap) == 3 and top.machines == 3
    hourly = hardware_price("cloudrun-l4").usd_per_hour
    assert top.monthly_always_on == pytest.approx(3 * hourly * HOURS_PER_MONTH, abs=0.01)
    # 12 h at the peak (3 instances), 12 h idle scaled to zero (Cloud Run)
    assert top.monthly == pytest.approx(3 * hourly * HOURS_PER_MONTH / 2, abs=0.01)


def test_a_workload_nothing_meets_names_the_binding_constraint():
    r = search(workload_from_dict(small(1.0, prompt_tokens=8000, slo=["ttft_p95_ms=20"])))
    assert not r.rows
    assert r.binding and "No candidate meets the workload" in r.binding and "TTFT" in r.binding
    tight_tpot = search(workload_from_dict(small(1.0, slo=["tpot_p50_ms=1"])))
    assert not tight_tpot.rows and "decode memory bandwidth (TPOT)" in tight_tpot.binding


def test_limiting_factor_comes_from_the_simulation():
    r = search(workload_from_dict(small(5.0, prompt_tokens=2000, output_tokens=600, slo=["ttft_p95_ms=60000"])))
    cap = next(c for c in r.candidates if c.status == "ok")
    fail = cap.first_failure
    assert fail is not None and not fail.meets
    if fail.preemptions or fail.kv_peak >= 0.95:
        assert cap.limiting == "KV cache capacity"
    elif fail.max_running >= cap.max_num_seqs:
        assert cap.limiting == "max_num_seqs"
    assert cap.at_capacity is not None and cap.at_capacity.meets and cap.at_capacity.rate < fail.rate


# -- ranking against brute force -------------------------------------------------------------------------


def _brute_capacity(cfg, workload) -> float:
    """A dense scan of rates (no bisection, no bound): the highest rate of the scan that meets the SLOs."""
    engine = SimEngine(resolve(cfg))
    ub, _ = bounds(engine, workload)
    ev = Evaluator(engine, workload)
    best = 0.0
    for i in range(1, 41):
        rate = ub * i / 40
        if ev.probe(rate).meets:
            best = rate
        else:
            break
    return best


def test_ranking_matches_brute_force_on_a_small_catalog():
    data = {"rate": 6.0, "prompt_tokens": {"p50": 800, "p95": 2000}, "output_tokens": 128,
            "slo": ["ttft_p95_ms=2000"], "models": ["gemma-4-e4b"],
            "search": {"accelerators": ["l4", "tpu-v6e"], "platforms": ["cloudrun", "tpu"], "tiers": ["on-demand"],
                       "kv_dtypes": ["auto"], "speculative": ["off"], "max_devices": 1, "keep": 2}}
    w = workload_from_dict(data)
    pruned, brute = search(w), search(w, prune=False)
    assert brute.counts["pruned"] == 0 and brute.counts["simulated"] > pruned.counts["simulated"]

    def best_per_candidate(res):
        out: dict[str, float] = {}
        for row in res.rows:
            out.setdefault(row.label, row.monthly)
        return list(out.items())

    keep = w.search.keep
    assert best_per_candidate(pruned)[:keep] == best_per_candidate(brute)[:keep]
    # each simulated capacity agrees with a dense scan of rates to the bisection's tolerance
    for cap in brute.candidates:
        if cap.status != "ok":
            continue
        scan = _brute_capacity(cap.candidate.config(w.max_model_len), w)
        assert cap.capacity_rps == pytest.approx(scan, rel=0.08), cap.candidate.label
    # and the ranking by cost follows from those capacities: the cheapest first
    monthly = [r.monthly for r in brute.rows]
    assert monthly == sorted(monthly)


# -- the faces -------------------------------------------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def test_cli_plan_workload_ranks_and_json(tmp_path):
    f = tmp_path / "w.toml"
    f.write_text('rate = 0.05\nprompt_tokens = 512\noutput_tokens = 64\nslo = ["ttft_p95_ms=5000"]\n'
                 'models = ["gemma-4-12b:w4a16"]\n[search]\naccelerators = ["l4"]\nplatforms = ["cloudrun"]\n'
                 'kv_dtypes = ["fp8"]\nspeculative = ["off"]\nmax_devices = 1\n')
    out = invoke("plan", "--workload", str(f), "--json", "--html", str(tmp_path / "fleet.html"))
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["rows"][0]["price_key"] == "cloudrun-l4" and data["counts"]["simulated"] == 1
    html = (tmp_path / "fleet.html").read_text()
    assert "Cost vs capacity" in html and "frontier" in html and "cloudrun-l4" in html
    human = invoke("plan", "--workload", str(f))
    assert human.exit_code == 0 and "cheapest first" in human.stdout and "vLLM:" in human.stdout


def test_cli_plan_workload_nothing_meets_exits_non_zero():
    out = invoke("plan", "gemma-4-12b", "--quant", "w4a16", "--rate", "1", "--context", "8000", "--slo",
                 "ttft_p95_ms=20", "--json")
    assert out.exit_code == 1
    assert "TTFT" in json.loads(out.stdout)["binding"]
    missing = invoke("plan", "--workload", "/nonexistent/w.toml")
    assert missing.exit_code != 0 and "does not exist" in missing.stderr and len(missing.stderr.splitlines()) == 1


def _plan_verdict(*cfg: str) -> str:
    out = invoke("plan", *cfg, "--json")
    assert out.exit_code == 1
    return json.loads(out.stdout)["verdict"]


@pytest.mark.parametrize(("command", "extra"), [(["simulate"], ["--concurrency", "1,8", "--context", "128"]),
                                               (["sim", "serve"], [])])
def test_simulate_and_sim_serve_refuse_a_config_that_does_not_fit(command, extra, tmp_path):
    cfg = ["gemma-4-12b", "--accelerator", "l4"]
    verdict = _plan_verdict(*cfg)
    assert "does not fit" in verdict and "--quant fp8" in verdict
    out = invoke(*command, *cfg, *extra)
    assert out.exit_code != 0
    err = out.stderr.strip()
    assert len(err.splitlines()) == 1 and err == f"error: {verdict}", err
    assert "sim serve" not in out.stdout  # refused before the banner, nothing served


def test_the_profile_to_create_is_a_valid_deployment_profile():
    import tomllib

    from inferctl.ops.fleet import profile_toml
    from inferctl.profiles.profile import parse_profile
    from inferctl.profiles.serve import serve_args, validate

    w = workload_from_dict({**small(3.0), "search": {"accelerators": ["l4", "tpu-v6e"], "kv_dtypes": ["fp8"],
                                                     "speculative": ["off", "mtp"], "max_devices": 2, "keep": 40}})
    rows = search(w).rows
    shown = {}
    for row in rows:
        shown.setdefault((row.platform, row.replicas_per_machine > 1, row.candidate.mtp), row)
    assert {p for p, _, _ in shown} == {"cloudrun", "gce", "tpu"}
    for row in shown.values():
        profile = parse_profile("planned", tomllib.loads(profile_toml(row, w)))
        assert validate(profile).errors == [], (row.price_key, validate(profile).errors)
        args = serve_args(profile)
        assert ("--data-parallel-size" in args) == (row.replicas_per_machine > 1)
        assert ("--speculative-config" in args) == row.candidate.mtp
        assert profile.spot == (row.tier == "spot")
