"""Error sentences and help texts stay whole when a value in them is empty or looks like Rich markup (issue 14.2).

"set GOOGLE_CLOUD_PROJECT or `project` under  in the config file": the section name, ``[cloud]``, was read as a
Rich style tag and vanished. Empty arguments (``destroy ""``, ``runs show ""``) built sentences like "profile ?".
"""

from __future__ import annotations

import re

import pytest
import typer
from tests.unit.report.runs import knee_run, write
from typer.testing import CliRunner

from inferctl.cli.app import app

# A sentence is broken when a value in it was empty (or swallowed): doubled spaces, a space before punctuation,
# an empty quote, a dangling "profile ?".
BROKEN = re.compile(r"\S  \S| [?.,;:](\s|$)|''|\"\"")


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("INFERCTL_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("INFERCTL_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.chdir(tmp_path)
    for var in ("INFERCTL_TARGET", "INFERCTL_DEBUG", "GOOGLE_CLOUD_PROJECT", "INFERCTL_GCP_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    write(tmp_path / "runs", knee_run("20260101-000000-only"))


def error_line(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    err = result.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1, err
    assert not BROKEN.search(err), f"broken sentence: {err!r}"
    return err


def test_missing_project_names_the_config_section():
    assert "`project` under [cloud] in the config file" in error_line("deploy", "cloudrun-l4-12b-qat")
    assert "[cloud]" in error_line("capacity", "-a", "nvidia-l4")


@pytest.mark.parametrize("args, says", [
    (["destroy", ""], "Name a profile"),
    (["scale", "", "--max-instances", "2"], "Name a profile"),
    (["describe", ""], "Name a profile"),
    (["profiles", "show", ""], "Name a profile"),
    (["deploy", ""], "Name a profile"),
    (["runs", "show", ""], "Name a run"),  # "" once matched every run as a prefix and showed the only one
    (["report", ""], "Name a run"),
    (["cost", "", "--price-per-hour", "1"], "Name a run"),
    (["memory", "--log", ""], "is a directory ("),
    (["import", ""], "is a directory"),
])
def test_empty_values_give_whole_sentences(args, says):
    assert says in error_line(*args)


def _params(command, path: str = ""):
    if getattr(command, "commands", None):  # a group (typer vendors its own click)
        for name, sub in command.commands.items():
            yield from _params(sub, f"{path} {name}")
        return
    for param in command.params:
        yield f"{path} {param.name}", getattr(param, "help", None) or ""
    yield f"{path} (help)", command.help or ""


def test_help_texts_have_no_bracketed_words_rich_would_swallow():
    """Help is Rich markup: "[cloud]" must be written "\\[cloud]" or it prints as nothing."""
    swallowed = [(where, text) for where, text in _params(typer.main.get_command(app))
                 if re.search(r"(?<!\\)\[[a-z][\w.-]*\]", text)]
    assert not swallowed, swallowed
    assert len(list(_params(typer.main.get_command(app)))) > 100  # the walk reached every command's options
