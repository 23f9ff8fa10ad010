"""Runs through MCP: plan, simulate, list, poll, report, compare, cost, the report resource, and a background
benchmark against the fake vLLM that survives its own call."""

from __future__ import annotations

import anyio
import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM
from tests.unit.mcp.conftest import client, text

pytestmark = pytest.mark.anyio
SMALL = {"model": "gemma-4-12b", "quant": "w4a16", "concurrencies": [1, 8], "contexts": [128],
         "output_tokens": 32}


async def test_plan_fits_and_suggests_fixes():
    async with client() as c:
        fits = await c.call_tool("plan_serving", {"model": "gemma-4-12b", "accelerator": "l4", "quant": "w4a16",
                                                  "context": 2048, "price_per_hour": 0.9})
        assert not fits.is_error, text(fits)
        assert fits.structured_content["fits"] is True and fits.structured_content["performance"]
        assert "FITS" in fits.content[0].text
        prov = fits.structured_content["provenance"]  # issue 11.5: a prior is never read as a promise
        # L4's priors were scored on the public corpus: the band is theirs, never a calibrated promise
        assert prov["speed_params"] == "prior" and prov["config_reader"] == "catalog"
        assert prov["error_band_method"].startswith("prior (not fitted)") and prov["error_band"]["ttft_p50"]
        assert "speed parameters: prior" in fits.content[0].text
        too_big = await c.call_tool("plan_serving", {"model": "gemma-4-31b", "accelerator": "l4"})
        assert not too_big.is_error, text(too_big)
        assert too_big.structured_content["fits"] is False and too_big.structured_content["suggestions"]
        unknown = await c.call_tool("plan_serving", {"model": "no-such-model", "accelerator": "l4"})
        assert unknown.is_error and "no-such-model" in text(unknown)
        path = await c.call_tool("plan_serving", {"model": "/etc/passwd"})
        assert path.is_error and "validation error" in text(path)


async def test_simulated_runs_list_poll_report_compare_and_cost():
    async with client() as c:
        a = await c.call_tool("simulate_sweep", {**SMALL, "accelerator": "l4"})
        assert not a.is_error, text(a)
        b = await c.call_tool("simulate_sweep", {**SMALL, "accelerator": "rtx-pro-6000"})
        run_a, run_b = a.structured_content["run_id"], b.structured_content["run_id"]
        assert a.structured_content["status"] == "complete" and len(a.structured_content["cells"]) == 2
        assert a.structured_content["source"] == "simulated"
        assert a.structured_content["provenance"]["speed_params"] == "prior"
        assert "speed parameters: prior" in a.content[0].text

        runs = await c.call_tool("list_runs", {})
        assert {run_a, run_b} <= {r["run_id"] for r in runs.structured_content["runs"]}
        status = await c.call_tool("get_benchmark_status", {"run_id": run_a})
        assert status.structured_content["cells_done"] == 2 and "| cell |" in status.content[0].text
        one = await c.call_tool("get_benchmark_status", {"run_id": run_a, "max_cells": 1})
        assert len(one.structured_content["cells"]) == 1 and one.structured_content["cells_omitted"] == 1
        row = await c.call_tool("get_benchmark_status", {"run_id": run_a, "context": 999})
        assert row.structured_content["cells"] == [] and row.structured_content["cells_done"] == 2

        report = await c.call_tool("get_run_report", {"run_id": run_a, "write_html": False})
        assert not report.is_error, text(report)
        assert report.structured_content["findings"]["rows"]
        resource = await c.read_resource(f"inferctl://runs/{run_a}/report")
        assert run_a in resource.contents[0].text

        cmp = await c.call_tool("compare_runs", {"run_ids": [run_a, run_b], "labels": ["l4", "rtx"]})
        assert not cmp.is_error, text(cmp)
        assert len(cmp.structured_content["comparison"]["cells"]) == 2

        cost = await c.call_tool("estimate_cost", {"run_ids": [run_a], "price_per_hour": 0.9})
        assert not cost.is_error, text(cost)
        assert cost.structured_content["result"]["monthly"]["always_on_usd"] == pytest.approx(0.9 * 730, rel=0.01)
        assert cost.structured_content["result"]["cells"] == [] and cost.structured_content["result"]["capacity"]
        ranked = await c.call_tool("estimate_cost", {"run_ids": [run_a, run_b], "hardware": ["cloudrun-l4",
                                                                                            "cloudrun-rtx-pro-6000"]})
        assert not ranked.is_error, text(ranked)
        assert len(ranked.structured_content["ranking"]["entries"]) == 2

        missing = await c.call_tool("get_benchmark_status", {"run_id": "no-such-run"})
        assert missing.is_error and "No run 'no-such-run'" in text(missing)
        traversal = await c.call_tool("get_benchmark_status", {"run_id": "../../etc"})
        assert traversal.is_error and "validation error" in text(traversal)


async def test_resources_and_prompts():
    async with client() as c:
        uris = {str(r.uri) for r in (await c.list_resources()).resources}
        assert {"inferctl://docs/metrics", "inferctl://profiles"} <= uris
        templates = {t.uri_template for t in (await c.list_resource_templates()).resource_templates}
        assert "inferctl://runs/{run_id}/report" in templates and "inferctl://profiles/{name}" in templates
        doc = await c.read_resource("inferctl://docs/metrics")
        assert "TTFT" in doc.contents[0].text
        profile = await c.read_resource("inferctl://profiles/cloudrun-l4-12b-qat")
        assert "serve_command" in profile.contents[0].text
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        assert prompts == {"triage_incident", "choose_hardware", "compare_configurations"}
        triage = await c.get_prompt("triage_incident", {"target": "cloudrun-l4-12b-qat"})
        assert "analyze_logs(target='cloudrun-l4-12b-qat'" in triage.messages[0].content.text


async def test_background_benchmark_returns_a_run_id_then_polls_to_complete(isolated):
    with FakeVLLM(FakeConfig(model="fake-model", ttft_ms=2, itl_ms=1, instant=True)) as fake:
        async with client(allow_write=True) as c:  # a URL target, and an explicit served model
            started = await c.call_tool("start_benchmark", {"target": fake.url, "model": "fake-model",
                                                            "concurrencies": [1, 2],
                                                            "contexts": [16], "output_tokens": 4,
                                                            "requests_per_cell": 4})
            assert not started.is_error, text(started)
            run_id = started.structured_content["run_id"]
            assert run_id and started.structured_content["status"] in ("running", "complete")
            with anyio.fail_after(120):
                while True:
                    status = await c.call_tool("get_benchmark_status", {"run_id": run_id, "wait_seconds": 5})
                    assert not status.is_error, text(status)
                    if status.structured_content["status"] in ("complete", "failed", "interrupted"):
                        break
        out = status.structured_content
        assert out["status"] == "complete", out
        assert out["cells_done"] == 2 and all(cell["ok"] >= 4 for cell in out["cells"])
        assert out["job_id"].startswith("job-") and out["model"] == "fake-model"


async def test_one_benchmark_per_target_at_a_time(isolated):
    import os
    import time

    from inferctl.mcp import jobs

    jobs.jobs_dir().mkdir(parents=True)
    now = time.time()
    running = jobs.BenchJob(job_id="job-1", status="running", target="local", pid=os.getpid(), run_id="r1",
                            started_at=now, updated_at=now, log_path="x.log")
    (jobs.jobs_dir() / "job-1.json").write_text(running.model_dump_json(), encoding="utf-8")
    async with client(allow_write=True) as c:
        r = await c.call_tool("start_benchmark", {"target": "local"})
        assert r.is_error and "already running (r1)" in text(r)
        polled = await c.call_tool("get_benchmark_status", {"run_id": "job-1"})
        assert polled.structured_content["status"] == "running" and "again" in polled.structured_content["next_step"]
    dead = running.model_copy(update={"pid": 2**22 + 12345})  # a pid that is not running
    (jobs.jobs_dir() / "job-1.json").write_text(dead.model_dump_json(), encoding="utf-8")
    assert jobs.find("r1").status == "interrupted" and jobs.active_for("local") is None


async def test_benchmark_start_fails_fast_for_an_unknown_target():
    async with client(allow_write=True) as c:
        r = await c.call_tool("start_benchmark", {"target": "nope"})
        assert r.is_error and "Unknown target 'nope'" in text(r)
        r = await c.call_tool("start_benchmark", {"target": "local", "concurrencies": [0]})
        assert r.is_error and "validation error" in text(r)


async def test_a_background_benchmark_at_a_url_with_credentials_stores_none(isolated):
    from inferctl.bench.store import runs_dir
    from inferctl.mcp import jobs

    password = "Pa55w0rdInUrl"
    with FakeVLLM(FakeConfig(model="fake-model", ttft_ms=2, itl_ms=1, instant=True)) as fake:
        url = fake.url.replace("http://", f"http://bench-user:{password}@")
        async with client(allow_write=True) as c:
            started = await c.call_tool("start_benchmark", {"target": url, "model": "fake-model",
                                                            "concurrencies": [1], "contexts": [16],
                                                            "output_tokens": 4, "requests_per_cell": 2})
            assert not started.is_error, text(started)
            run_id = started.structured_content["run_id"]
            with anyio.fail_after(120):
                while True:
                    status = await c.call_tool("get_benchmark_status", {"run_id": run_id, "wait_seconds": 5})
                    if status.structured_content["status"] in ("complete", "failed", "interrupted"):
                        break
    assert status.structured_content["status"] == "complete", status.structured_content
    assert password not in text(started) + text(status)
    written = [*jobs.jobs_dir().iterdir(), *(runs_dir() / run_id).rglob("*")]
    assert any(p.name == "meta.json" for p in written)
    for path in (p for p in written if p.is_file()):
        assert password.encode() not in path.read_bytes(), path.name


async def test_plan_serving_with_a_workload_ranks_deployments():
    workload = {"rate": 0.05, "prompt_tokens": {"fixed": 512}, "output_tokens": {"fixed": 64},
                "slo": ["ttft_p95_ms=5000"], "models": ["gemma-4-12b:w4a16"],
                "search": {"accelerators": ["l4"], "platforms": ["cloudrun"], "kv_dtypes": ["fp8"],
                           "speculative": ["off"], "max_devices": 1}}
    async with client() as c:
        r = await c.call_tool("plan_serving", {"workload": workload})
        assert not r.is_error, text(r)
        fleet = r.structured_content["fleet"]
        assert fleet["rows"][0]["machine"] == "cloudrun-l4" and fleet["rows"][0]["replicas"] == 1
        assert fleet["counts"]["simulated"] == 1 and "USD/month" in r.content[0].text
        none = await c.call_tool("plan_serving", {"workload": {**workload, "prompt_tokens": {"fixed": 8000},
                                                               "slo": ["ttft_p95_ms=20"]}})
        assert not none.is_error and none.structured_content["fits"] is False
        assert "TTFT" in none.structured_content["fleet"]["binding"]


async def test_simulate_sweep_refuses_a_config_that_does_not_fit():
    async with client() as c:
        plan = await c.call_tool("plan_serving", {"model": "gemma-4-12b", "accelerator": "l4"})
        verdict = plan.structured_content["verdict"]
        r = await c.call_tool("simulate_sweep", {**SMALL, "quant": "bf16", "accelerator": "l4"})
        # the same sentence as plan's (its flag hints in the tool's argument names)
        assert r.is_error and verdict.split(":")[0] in text(r) and "does not fit" in verdict
        assert "(count 4)" in text(r) and "--" not in text(r)
        runs = await c.call_tool("list_runs", {})
        assert runs.structured_content["runs"] == []  # nothing simulated, nothing stored
