"""The simulator predicts exactly what it predicted before its speed-ups (pinned small grid)."""

from __future__ import annotations

import json
import math

from tests.unit.plan.golden_sim import PATH, figures


def _diffs(old, new, path=""):
    if isinstance(old, dict) and isinstance(new, dict):
        out = [f"{path}: keys {sorted(set(old) ^ set(new))}"] if set(old) != set(new) else []
        for k in old.keys() & new.keys():
            out += _diffs(old[k], new[k], f"{path}/{k}")
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True)) for d in _diffs(a, b, f"{path}[{i}]")]
    if isinstance(old, float | int) and isinstance(new, float | int) and not isinstance(old, bool):
        return [] if math.isclose(old, new, rel_tol=1e-9, abs_tol=1e-9) else [f"{path}: {old} -> {new}"]
    return [] if old == new else [f"{path}: {old!r} -> {new!r}"]


def test_small_grid_matches_the_pinned_output():
    golden = json.loads(PATH.read_text(encoding="utf-8"))
    now = json.loads(json.dumps(figures()))
    assert len(golden) == 110 and any(v["server"]["preemptions"] for v in golden.values())
    diffs = _diffs(golden, now)
    assert not diffs, "\n".join(diffs[:20])
