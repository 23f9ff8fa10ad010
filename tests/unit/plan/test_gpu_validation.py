"""The planner against every GPU validation run committed under benchmarks/gpu/data (issue 18, item 2).

CI has no GPU: what a GPU measured is kept as data, and this test re-runs the planner against it on every
`make test`, so a change that moves the planner away from a real engine shows up here. The goal is 2% on
KV memory/tokens and on the longest length that fits; cells that miss it today are strict xfails with the
reason, so fixing them turns this test red until the marker is removed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
RUNS = sorted(p for p in (ROOT / "benchmarks/gpu/data").iterdir() if p.is_dir())
GOAL = 0.02

# (run, shape, max_model_len) -> why the planner misses the goal there today.
KNOWN_MISSES = {
    ("h100-vllm-0.26-issue18", "31b", 8192): "the reserve (activation + 3 sampler copies at max_num_seqs 1024 + "
    "CUDA graphs, summed) is ~2.8 GiB larger than vLLM's measured one for dense 31B; the profile lines that would "
    "split it were not logged (rerun kv_validation.sh with DEBUG logging)",
    ("h100-vllm-0.26-issue18", "31b", 32768): "same reserve error as 31b @ 8192: the longest "
    "length follows the KV memory",
}


def _compare():
    spec = importlib.util.spec_from_file_location("kv_compare", ROOT / "benchmarks/gpu/kv_compare.py")
    mod = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(mod)
    return mod


def _cases():
    mod = _compare()
    for run in RUNS:
        for cell in mod.cells(run):
            key = (run.name, cell.shape, cell.max_model_len)
            marks = [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[key])] if key in KNOWN_MISSES else []
            yield pytest.param(cell, id=f"{run.name}:{cell.shape}@{cell.max_model_len}", marks=marks)


def test_there_is_gpu_data():
    assert RUNS, "benchmarks/gpu/data holds no validation run"


@pytest.mark.parametrize("cell", list(_cases()))
def test_planner_matches_the_gpu(cell):
    errors = cell.errors()
    assert errors, f"{cell.source}: nothing to compare"
    assert cell.plan_fits == cell.started, f"vLLM {'started' if cell.started else 'refused'}; the planner disagrees"
    worst = max(errors.items(), key=lambda kv: abs(kv[1]))
    assert abs(worst[1]) <= GOAL, f"{worst[0]} off by {worst[1]:+.1%} ({cell.source})"
