"""The grid flags -> SweepSpec in one place (bench sweep and simulate share it)."""

from __future__ import annotations

import pytest

from inferctl.bench.spec import SweepSpec, spec_from_flags
from inferctl.errors import ConfigError


def test_preset_with_overrides():
    spec = spec_from_flags(preset="seed-grid", output_tokens=64, slo=["ttft_p95_ms=500"])
    assert isinstance(spec, SweepSpec) and spec.preset == "seed-grid"
    assert (len(spec.contexts), len(spec.concurrencies)) == (13, 12)
    assert spec.output_tokens == 64 and spec.ignore_eos and len(spec.slos) == 1


def test_open_loop_rates_drop_the_default_concurrencies():
    spec = spec_from_flags(rate="0.5,2", context="128")
    assert spec.rates == [0.5, 2.0] and spec.concurrencies == [] and spec.contexts == [128]


def test_workers_and_natural_stop_flags():
    flags = {"concurrency": "1..8", "context": "128,1024", "workers": "2", "natural_stop": True}
    assert spec_from_flags(**flags).workers == 2 and not spec_from_flags(**flags).ignore_eos


@pytest.mark.parametrize(("flags", "message"), [({"api": "grpc"}, "--api is chat or completions"),
                                                ({"workers": "many"}, "--workers is a number or auto"),
                                                ({"transport": "udp"}, "--transport is auto")])  # fmt: skip
def test_bad_flags_are_one_sentence_errors(flags, message):
    with pytest.raises(ConfigError, match=message):
        spec_from_flags(concurrency="1", context="128", **flags)
