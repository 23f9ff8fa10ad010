"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """A fresh inferctl home, config file and runs directory per test; no target or debug from the environment.

    Use with ``pytestmark = pytest.mark.usefixtures("isolated")``. Packages whose tests need more (mcp/, cloud/)
    define their own ``isolated`` in their conftest, which takes precedence.
    """
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.delenv("INFERCTL_TARGET", raising=False)
    monkeypatch.delenv("INFERCTL_DEBUG", raising=False)
    return tmp_path
