"""Profiles as data: shipped examples, config-file overrides, project resolution, validation."""

from __future__ import annotations

import pytest
from tests.unit.cloud.conftest import write_config

from inferctl.errors import ConfigError
from inferctl.ops.profiles import check_profile
from inferctl.profiles.profile import ProjectMissing, list_profiles, load_profile, profile_names
from inferctl.profiles.serve import serve_args, validate

SHIPPED = ["cloudrun-l4-12b-qat", "cloudrun-rtx6000-12b-qat-mtp", "gce-g2-48-31b", "tpu-v6e-1-12b", "tpu-v6e-4-26b-moe"]


def test_shipped_profiles_load_and_validate():
    assert set(SHIPPED) <= set(profile_names())
    for name in SHIPPED:
        p = load_profile(name)
        assert p.project is None  # never hard-coded
        assert check_profile(p).errors == [], name


def test_project_order(tmp_path, monkeypatch):
    p = load_profile("cloudrun-l4-12b-qat")
    assert p.with_project().project == "test-proj"
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    write_config(tmp_path, '[cloud]\nproject = "from-config"\n')
    assert p.with_project().project == "from-config"
    write_config(tmp_path, "")
    with pytest.raises(ProjectMissing, match="GOOGLE_CLOUD_PROJECT"):
        p.with_project()


def test_user_profile_from_base(tmp_path):
    write_config(tmp_path, """
[profiles.mine]
base = "cloudrun-l4-12b-qat"
region = "europe-west4"
vllm.max_model_len = 16384
""")
    p = load_profile("mine")
    assert p.region == "europe-west4" and p.vllm.max_model_len == 16384
    assert p.vllm.kv_cache_dtype == "fp8"  # inherited
    assert ("mine", False) in [(q.name, shipped) for q, shipped in list_profiles()]


def test_invalid_profile_is_one_sentence(tmp_path):
    write_config(tmp_path, '[profiles.bad]\nbase = "cloudrun-l4-12b-qat"\nvllm.max_model_len = -3\n')
    with pytest.raises(ConfigError, match="Profile 'bad' is invalid at 'vllm.max_model_len'"):
        load_profile("bad")
    with pytest.raises(ConfigError, match="Unknown profile 'nope'"):
        load_profile("nope")


def _variant(name: str, **update):
    p = load_profile(name)
    vllm = update.pop("vllm", None)
    if vllm:
        p = p.model_copy(update={"vllm": p.vllm.model_copy(update=vllm)})
    return p.model_copy(update=update)


@pytest.mark.parametrize("flag", ["--speculative-model=x", "--num-speculative-tokens", "--use-v2-block-manager"])
def test_removed_vllm_flags_are_refused(flag):
    r = validate(_variant("cloudrun-l4-12b-qat", vllm={"extra_args": [flag]}))
    assert any("was removed" in e for e in r.errors)


def test_removed_env_and_secret_env_are_refused():
    r = validate(_variant("cloudrun-l4-12b-qat", vllm={"env": {"VLLM_USE_V1": "0", "HF_TOKEN": "x"}}))
    assert any("VLLM_USE_V1" in e for e in r.errors)
    assert any("looks like a secret" in e for e in r.errors)


def test_rtx_pro_6000_minimums():
    r = validate(_variant("cloudrun-rtx6000-12b-qat-mtp", cpu="8", memory="32Gi"))
    assert any("at least 20 CPU and 80Gi" in e for e in r.errors)
    r = validate(_variant("cloudrun-l4-12b-qat", cpu="2", memory="8Gi"))
    assert any("at least 4 CPU and 16Gi" in e for e in r.errors)


def test_hardware_shape_checks():
    assert any("exactly one GPU" in e for e in validate(_variant("cloudrun-l4-12b-qat", accelerator_count=2)).errors)
    assert any("exceeds the 4 GPUs" in e
               for e in validate(_variant("gce-g2-48-31b", vllm={"tensor_parallel_size": 8})).errors)
    assert any("exceeds the 1 chips" in e
               for e in validate(_variant("tpu-v6e-1-12b", vllm={"tensor_parallel_size": 4})).errors)


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "::/0"])
def test_world_open_firewall_is_refused(cidr):
    r = validate(_variant("gce-g2-48-31b", allowed_source_ranges=[cidr]))
    assert any("whole internet" in e for e in r.errors)


def test_unauthenticated_cloud_run_warns():
    r = validate(_variant("cloudrun-l4-12b-qat", allow_unauthenticated=True))
    assert r.errors == [] and any("anyone on the internet" in w for w in r.warnings)


def test_serve_args_use_current_flags():
    args = serve_args(load_profile("cloudrun-rtx6000-12b-qat-mtp"))
    assert args[0] == "google/gemma-4-12B-it-qat-w4a16-ct"
    assert "--speculative-config" in args and "--speculative-model" not in args
    spec = args[args.index("--speculative-config") + 1]
    assert '"num_speculative_tokens":4' in spec
    bucket = serve_args(load_profile("gce-g2-48-31b"))
    assert bucket[0] == "/mnt/models/google/gemma-4-31B-it-qat-w4a16-ct"
    assert bucket[bucket.index("--tensor-parallel-size") + 1] == "4"


def test_planner_fit_check_runs_before_any_call():
    from inferctl.profiles.profile import ModelSource

    ok = check_profile(load_profile("cloudrun-l4-12b-qat"))
    assert ok.fit and ok.fit.startswith("fits")
    too_big = _variant("cloudrun-l4-12b-qat", model=ModelSource(hf_repo="google/gemma-4-31B-it"))
    assert validate(too_big).errors == [] and validate(too_big).fit is None  # the data checks know no planner
    r = check_profile(too_big)
    assert any("does not fit" in e for e in r.errors)
    unknown = _variant("cloudrun-l4-12b-qat", model=ModelSource(hf_repo="someone/unknown-model"))
    r = check_profile(unknown)
    assert r.errors == [] and any("Fit check skipped" in w for w in r.warnings)
