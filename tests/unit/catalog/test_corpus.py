"""The shipped measurement corpus: every entry validates, names a known accelerator, is unique; coverage."""

from __future__ import annotations

import pytest

from inferctl.catalog import accelerators
from inferctl.catalog.corpus import coverage, load_corpus, model_ref, parse_file
from inferctl.errors import ConfigError


def test_every_entry_validates_and_is_unique() -> None:
    entries = load_corpus()
    assert len({e.id for e in entries}) == len(entries)
    assert len({e.key() for e in entries}) == len(entries)
    known = accelerators()
    for e in entries:
        assert e.accelerator in known
        assert e.source is not None and e.source.url.startswith("https://") and len(e.source.date) == 10
        assert e.metrics.request_throughput is not None or e.metrics.output_throughput is not None


def test_coverage_counts() -> None:
    # Today's corpus (see docs/planner.md for the targets it misses); the counts must only grow.
    cov = coverage(load_corpus())
    assert cov["entries"] >= 34 and cov["sources"] >= 5
    assert cov["per_accelerator"]["a100-80"] >= 20 and cov["per_accelerator"]["h100"] >= 5
    assert cov["per_accelerator"]["tpu-v6e"] >= 3 and cov["per_accelerator"]["l4"] >= 6


def test_every_measured_model_can_be_described(tmp_path) -> None:
    from inferctl.catalog.models import load_model

    for model in {e.model for e in load_corpus()}:
        ref = model_ref(model, tmp_path)
        assert ref is not None, model
        assert load_model(ref).num_layers > 0


BAD = """
[source]
id = "x"
url = "https://example.org"
date = "2026-01-01"
title = "t"
kind = "blog"

[[entries]]
id = "a"
accelerator = "l4"
hardware = "1x L4"
count = 1
model = "m"
weight_format = "bf16"
[entries.workload]
dataset = "random"
[entries.metrics]
ttft_mean_ms = 1.0
"""


@pytest.mark.parametrize("text, match", [
    (BAD, "needs at least request or output throughput"),
    (BAD.replace("ttft_mean_ms = 1.0", "request_throughput = 1.0\nmade_up = 2"), "Extra inputs"),
    (BAD.replace('kind = "blog"', 'kind = "rumour"'), "kind"),
])
def test_bad_files_are_one_sentence_errors(text, match) -> None:
    with pytest.raises(ConfigError, match=match):
        parse_file("bad.toml", text)
