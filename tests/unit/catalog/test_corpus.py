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



def test_a_requantized_checkpoint_is_described_by_its_catalog_model(tmp_path) -> None:
    """models.toml points a re-quantized checkpoint at the catalog entry instead of copying its fields, so the
    catalog's weight formats (fp8 here) apply and nothing can drift apart."""
    from pydantic import ValidationError

    from inferctl.catalog.corpus import ModelConfig
    from inferctl.plan.corpus_fit import entry_group

    assert model_ref("RedHatAI/gemma-4-31B-it-FP8-block", tmp_path) == "gemma-4-31b"
    h200 = [e for e in load_corpus() if e.model == "RedHatAI/gemma-4-31B-it-FP8-block"]
    assert h200 and all(e.weight_format == "fp8" for e in h200)
    # What still keeps these entries out of a fit is the unstated prompt length, not the model or its format.
    with pytest.raises(ConfigError, match="prompt and output lengths"):
        entry_group(h200[0], tmp_path)
    for bad in ({"source": "s"}, {"source": "s", "catalog": "gemma-4-31b", "config": {"model_type": "x"}}):
        with pytest.raises(ValidationError, match="either config"):
            ModelConfig.model_validate(bad)


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
