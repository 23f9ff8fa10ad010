"""Every table command at 80 columns keeps the identifiers people type next whole: run id, profile, target, model,
cell (issue 14.1). An identifier is whole when it appears, unbroken, on one line of the output."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.table import Table
from tests.fakes.fake_gcp import FakeGCP, GcpState
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM
from tests.unit.report.runs import knee_run, write
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.cli.tables import keep_whole

LONG_TARGET = "cloudrun-rtx6000-12b-qat-mtp-europe"
LONG_MODEL = "google/gemma-4-12B-it-qat-w4a16-ct"


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "test-proj")
    for var in ("INFERCTL_TARGET", "INFERCTL_DEBUG", "INFERCTL_GCP_ENDPOINT", "GOOGLE_APPLICATION_CREDENTIALS"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def runs(tmp_path):
    root = tmp_path / "runs"
    ids = [f"20261122-154615-{LONG_TARGET}", f"20261123-101500-{LONG_TARGET}"]
    for i, run_id in enumerate(ids):
        write(root, knee_run(run_id, scale=1 + i / 5, target={"name": LONG_TARGET, "url": "http://127.0.0.1:9"},
                             model=LONG_MODEL))
    return ids


def invoke80(*args: str):
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output + (result.stderr or "")
    assert max(len(line) for line in result.stdout.splitlines()) <= 80, result.stdout
    return result.stdout


def assert_whole(output: str, *identifiers: str) -> None:
    lines = output.splitlines()
    for ident in identifiers:
        assert any(ident in line for line in lines), f"{ident!r} is cut in:\n{output}"
    assert "…" not in output, output


def render(renderable, width: int) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, highlight=False, color_system=None).print(renderable)
    return buf.getvalue()


@pytest.mark.parametrize("width", [56, 80, 200])
def test_keep_whole_never_cuts_a_key_at_any_width(width):
    t = Table(title="runs")
    for col in ("run", "source", "status", "target", "model", "started"):
        t.add_column(col)
    t.add_row(f"20261122-154615-{LONG_TARGET}", "measured", "complete", LONG_TARGET, LONG_MODEL, "2026-11-22 15:46")
    out = render(keep_whole(t, ["run", "target", "model"], width), width)
    assert_whole(out, f"20261122-154615-{LONG_TARGET}", LONG_TARGET, LONG_MODEL)
    assert "measured" in out and "complete" in out  # the other columns are still there (wrapped or as records)


def test_keep_whole_stays_a_table_when_the_keys_fit():
    t = Table()
    for col in ("cell", "status", "note"):
        t.add_column(col)
    t.add_row("ctx32768-c128", "complete", "a long remark that can wrap over several lines without harm " * 2)
    out = render(keep_whole(t, ["cell"], 60), 60)
    assert "┃ cell" in out and any("ctx32768-c128" in line for line in out.splitlines())


def test_runs_list_and_show(runs):
    assert_whole(invoke80("runs", "list"), *runs, LONG_TARGET, LONG_MODEL)
    assert_whole(invoke80("runs", "show", runs[0]), runs[0], "ctx128-c16", "ctx128-c32")


def test_profiles_list():
    from inferctl.ops.profiles import list_profile_summaries

    names = [p.name for p in list_profile_summaries()]
    assert_whole(invoke80("profiles", "list"), *names, *(p.model for p in list_profile_summaries()))


def test_models():
    with FakeVLLM(FakeConfig(model=LONG_MODEL, served=[LONG_MODEL + "-assistant-draft"])) as f:
        assert_whole(invoke80("models", "--url", f.url), LONG_MODEL)


def test_cost_and_cost_ranking(runs):
    assert_whole(invoke80("cost", runs[1], "--price-per-hour", "3.6"), "ctx128-c16", "ctx128-c32")
    out = invoke80("cost", "--compare", *runs, "--hardware", "cloudrun-rtx6000-12b-qat-mtp",
                   "--hardware", "cloudrun-l4-12b-qat", "-l", LONG_TARGET + "-a", "-l", LONG_TARGET + "-b")
    assert_whole(out, LONG_TARGET + "-a", LONG_TARGET + "-b", "cloudrun-rtx6000-12b-qat-mtp", "cloudrun-l4-12b-qat")


def test_simulate(tmp_path):
    out = invoke80("simulate", "gemma-4-e2b", "--accelerator", "l4", "--max-model-len", "32768",
                   "--concurrency", "1,128", "--context", "128,16384", "--output-tokens", "16",
                   "--runs-dir", str(tmp_path / "sim"))
    assert_whole(out, "ctx16384-c128", "ctx128-c1")


def test_capacity_and_artifacts(monkeypatch):
    state = GcpState(project="test-proj")
    state.gpu_zones = {"northamerica-northeast1-a": ["nvidia-l4"], "northamerica-northeast1-b": ["nvidia-l4"]}
    state.region_quotas = {"northamerica-northeast1": [{"metric": "NVIDIA_L4_GPUS", "limit": 8, "usage": 3}]}
    folder = "google/gemma-4-31B-it-qat-w4a16-ct"
    state.blobs["weights"] = [{"name": f"{folder}/config.json", "size": "1200"},
                              {"name": f"{folder}/model-00001-of-00002.safetensors", "size": "5000000000"}]
    with FakeGCP(state) as fake:
        monkeypatch.setenv("INFERCTL_GCP_ENDPOINT", fake.url)
        assert_whole(invoke80("capacity", "-a", "nvidia-l4", "--regions", "northamerica-northeast1",
                              "--platform", "gce"), "northamerica-northeast1")
        assert_whole(invoke80("artifacts", "gs://weights"), folder, f"{folder}/model-00001-of-00002.safetensors")
