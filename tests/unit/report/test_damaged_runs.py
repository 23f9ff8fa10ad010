"""A damaged run directory is reported, not fatal (issue 17, item 7).

Garbage in cells.json / cells.jsonl / meta.json: `runs list` lists every other run and marks the damaged
one; `report` and `compare` say which file and line in one sentence. A bad line in requests.jsonl makes
`bench sweep --resume` refuse with the reason, while a torn last line (a kill mid-write) is dropped and
the sweep goes on. Real run directories, the real CLI, the fake vLLM over real HTTP for the sweeps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.fake_vllm import FakeConfig, FakeVLLM
from tests.unit.report.runs import cell, knee_run, run, write
from typer.testing import CliRunner

from inferctl.bench.store import RunDamaged, RunDir
from inferctl.cli.app import app

pytestmark = pytest.mark.usefixtures("isolated")  # tests/unit/conftest.py


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_line_error(result, *texts: str) -> str:
    assert result.exit_code not in (0, None), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    err = result.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1, err
    for t in texts:
        assert t in err, err
    return err


def _replace_line(path: Path, number: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[number - 1] = text
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def three_runs(tmp_path):
    """Three readable runs under the runs root: (root, good_a, middle, good_b)."""
    root = tmp_path / "runs"
    return (root, write(root, knee_run("20260101-000000-a")), write(root, knee_run("20260102-000000-mid")),
            write(root, knee_run("20260103-000000-b", scale=1.2)))


def _simulated_like(path: Path) -> None:
    """Imported and simulated runs have only cells.json: make this one so."""
    (path / "cells.jsonl").unlink()


# -- cells.json / cells.jsonl / meta.json garbage --------------------------------------------------------


def test_garbage_line_in_cells_json_is_named_by_every_reader(three_runs):
    root, a, mid, b = three_runs
    _simulated_like(mid)
    _replace_line(mid / "cells.json", 3, "garbage")

    listed = invoke("runs", "list", "--json")
    assert listed.exit_code == 0, listed.output
    runs = {r["run_id"]: r for r in json.loads(listed.stdout)["runs"]}
    assert set(runs) == {a.name, mid.name, b.name}
    assert runs[mid.name]["status"] == "damaged" and "cells.json line 3 is not valid JSON" in runs[mid.name]["problem"]
    assert runs[a.name]["problem"] is None and runs[a.name]["cells_done"] == 9

    table = CliRunner().invoke(app, ["runs", "list"], env={"COLUMNS": "250"})
    assert table.exit_code == 0, table.output
    assert a.name in table.stdout and b.name in table.stdout
    assert f"warning: Run {mid.name} is damaged: cells.json line 3" in table.stdout

    one_line_error(invoke("report", mid.name, "--no-png"), f"Run {mid.name} is damaged: cells.json line 3")
    one_line_error(invoke("compare", a.name, mid.name), "cells.json line 3 is not valid JSON")
    one_line_error(invoke("runs", "show", mid.name), "cells.json line 3")
    one_line_error(invoke("cost", mid.name, "--price-per-hour", "1"), "cells.json line 3")


def test_cells_json_of_the_wrong_shape_is_named(three_runs):
    _, _, mid, _ = three_runs
    _simulated_like(mid)
    (mid / "cells.json").write_text('[{"id": "x"}]\n')
    one_line_error(invoke("report", mid.name, "--no-png"), "cells.json has an entry #1 that is not a cell result")
    (mid / "cells.json").write_text("5\n")
    one_line_error(invoke("report", mid.name, "--no-png"), "cells.json is not a list of cells (5)")


def test_garbage_line_in_the_middle_of_cells_jsonl_is_damage(three_runs):
    _, _, mid, _ = three_runs
    _replace_line(mid / "cells.jsonl", 2, "5")
    one_line_error(invoke("report", mid.name, "--no-png"), "cells.jsonl line 2 is not a JSON object (5)")
    _replace_line(mid / "cells.jsonl", 2, '{"id": "ctx128-c2"}')
    one_line_error(invoke("report", mid.name, "--no-png"), "cells.jsonl line 2 is not a cell result")


def test_torn_last_line_of_cells_jsonl_is_crash_damage_and_skipped(three_runs):
    _, _, mid, _ = three_runs
    with (mid / "cells.jsonl").open("a") as f:
        f.write('{"id": "ctx128-c64", "cont')  # a kill mid-write: no newline
    assert len(RunDir(mid).cells()) == 9
    result = invoke("report", mid.name, "--no-png", "--json")
    assert result.exit_code == 0, result.output


def test_damaged_meta_json_is_listed_and_marked(three_runs):
    _, a, mid, b = three_runs
    _replace_line(mid / "meta.json", 2, "}{")
    listed = invoke("runs", "list", "--json")
    assert listed.exit_code == 0, listed.output
    runs = {r["run_id"]: r for r in json.loads(listed.stdout)["runs"]}
    assert set(runs) == {a.name, mid.name, b.name}
    assert runs[mid.name]["status"] == "damaged" and "meta.json line 2 is not valid JSON" in runs[mid.name]["problem"]
    one_line_error(invoke("report", mid.name, "--no-png"), "meta.json")


def test_run_damaged_names_the_file_and_line(tmp_path):
    path = write(tmp_path, knee_run("20260101-000000-a"))
    _replace_line(path / "cells.jsonl", 4, "[1, 2]")
    with pytest.raises(RunDamaged) as info:
        RunDir(path).cells()
    assert (info.value.file, info.value.line) == ("cells.jsonl", 4)
    assert str(info.value) == f"Run {path.name} is damaged: cells.jsonl line 4 is not a JSON object (a list)."


# -- compare with nothing in common ----------------------------------------------------------------------


def test_compare_with_no_cells_in_common_says_so(tmp_path):
    root = tmp_path / "runs"
    a = write(root, run([cell(128, 1, 1.0), cell(128, 2, 2.0)], run_id="20260101-000000-a"))
    b = write(root, run([cell(4096, 8, 3.0)], run_id="20260102-000000-b"))
    err = one_line_error(invoke("compare", a.name, b.name), "have no cells in common")
    assert "ctx128-c1" in err and "ctx4096-c8" in err
    assert not (root / "compare").exists() or not any((root / "compare").rglob("*.png"))
    printed = invoke("compare", a.name, b.name, "--no-files", "--json")  # printing only still works
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.stdout)["comparison"]["cells"] == []


# -- resume ------------------------------------------------------------------------------------------------

SWEEP = ["-c", "1,2", "--context", "32", "--output-tokens", "2", "--requests", "3", "--warmup", "0",
         "--workers", "1"]


def _measured_run(fake: FakeVLLM, tmp_path: Path) -> Path:
    result = invoke("bench", "sweep", "--url", fake.url, *SWEEP, "--json")
    assert result.exit_code == 0, result.output
    return Path(json.loads(result.stdout)["path"])


def _forget_last_cell(path: Path) -> None:
    lines = (path / "cells.jsonl").read_text().splitlines()
    (path / "cells.jsonl").write_text("\n".join(lines[:-1]) + "\n")


def test_resume_refuses_a_run_with_a_bad_request_line(tmp_path):
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2)) as fake:
        path = _measured_run(fake, tmp_path)
        _forget_last_cell(path)
        _replace_line(path / "requests.jsonl", 2, "5")
        before = fake.state.requests
        result = invoke("bench", "sweep", "--resume", path.name)
        sent = fake.state.requests - before
    one_line_error(result, f"Run {path.name} cannot be resumed", "requests.jsonl line 2 is not a JSON object (5)")
    assert sent == 0


def test_resume_refuses_a_record_without_its_cell(tmp_path):
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2)) as fake:
        path = _measured_run(fake, tmp_path)
        _forget_last_cell(path)
        _replace_line(path / "requests.jsonl", 1, '{"attempt": "x"}')
        result = invoke("bench", "sweep", "--resume", path.name)
    one_line_error(result, "requests.jsonl line 1 is not a request record")


def test_resume_drops_a_torn_last_line_says_so_and_goes_on(tmp_path):
    with FakeVLLM(FakeConfig(ttft_ms=1, itl_ms=0.2)) as fake:
        path = _measured_run(fake, tmp_path)
        _forget_last_cell(path)
        with (path / "requests.jsonl").open("a") as f:
            f.write('{"cell": "ctx32-c2", "attempt": 0, "ind')  # the kill cut this line
        result = invoke("bench", "sweep", "--resume", path.name)
        assert result.exit_code == 0, result.output
        assert "requests.jsonl ended with a partial line" in " ".join(result.stdout.split())
        # Every line is whole now: a second kill-and-resume sees no damage in the middle.
        for line in (path / "requests.jsonl").read_text().splitlines():
            json.loads(line)
        _forget_last_cell(path)
        again = invoke("bench", "sweep", "--resume", path.name, "--json")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["cells_complete"] == 2
