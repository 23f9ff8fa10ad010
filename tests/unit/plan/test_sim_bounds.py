"""`inferctl simulate` has the same cost bound as the MCP tool: a grid too large is one sentence, not hours."""

from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from inferctl.bench.spec import spec_from_flags
from inferctl.cli.app import app
from inferctl.errors import ConfigError
from inferctl.ops.simulate import MAX_REQUESTS, MAX_TOKENS, check_cost
from inferctl.plan.cells import grid_cost


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.delenv("INFERCTL_RUNS_DIR", raising=False)


def test_the_seed_grid_is_within_the_bound():
    cost = check_cost(spec_from_flags(preset="seed-grid", workers=1))
    assert cost.cells == 156 and cost.requests < MAX_REQUESTS / 2 and cost.tokens < MAX_TOKENS / 2


def test_cli_refuses_a_huge_grid_in_one_sentence_with_its_flags(tmp_path):
    t0 = time.monotonic()
    r = CliRunner().invoke(app, ["simulate", "gemma-4-12b", "-c", "1000000", "--context", "100000",
                                 "--runs-dir", str(tmp_path / "runs")])
    assert time.monotonic() - t0 < 10
    assert r.exit_code != 0 and "Traceback" not in r.output
    err = r.stderr.strip()
    assert len(err.splitlines()) == 1 and "too large to simulate" in err, err
    assert "--concurrency" in err and "--context" in err and "--requests" in err
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_many_small_cells_are_bounded_by_requests_too():
    spec = spec_from_flags(concurrency="1000000", context="1,2,3,4", output_tokens=1, workers=1)
    cost = grid_cost(spec)
    assert cost.tokens < MAX_TOKENS < cost.tokens * 100 and cost.requests > MAX_REQUESTS  # few tokens, many requests
    with pytest.raises(ConfigError, match="too large to simulate"):
        check_cost(spec)
