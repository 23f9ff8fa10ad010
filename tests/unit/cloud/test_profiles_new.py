"""`inferctl profiles new NAME --from PROFILE --set key=value`: a user profile appended to the config file, validated
first, never by hand-edited TOML (issue 14.5)."""

from __future__ import annotations

import json
import tomllib

import pytest
from typer.testing import CliRunner

from inferctl.cli.app import app
from inferctl.profiles.profile import load_profile

USER_TEXT = """# my settings (this comment must survive)
[cloud]
project = "p"
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def config(tmp_path):
    return tmp_path / "config.toml"


def test_new_from_a_shipped_profile_writes_base_and_changes(tmp_path):
    config(tmp_path).write_text(USER_TEXT)
    r = invoke("profiles", "new", "my-l4", "--from", "cloudrun-l4-12b-qat", "--set", "region=europe-west4",
               "--set", "vllm.max_model_len=16384", "--set", "scaling.max_instances=3", "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["table"] == {"base": "cloudrun-l4-12b-qat", "region": "europe-west4",
                            "vllm": {"max_model_len": 16384}, "scaling": {"max_instances": 3}}
    assert out["fit"].startswith("fits:")
    text = config(tmp_path).read_text()
    assert text.startswith(USER_TEXT) and "this comment must survive" in text  # appended, nothing rewritten
    assert tomllib.loads(text)["cloud"]["project"] == "p"
    p = load_profile("my-l4")
    assert (p.region, p.vllm.max_model_len, p.scaling.max_instances) == ("europe-west4", 16384, 3)
    assert p.model.hf_repo == load_profile("cloudrun-l4-12b-qat").model.hf_repo  # the rest from the base
    listed = invoke("profiles", "list", "--json")
    assert any(x["name"] == "my-l4" and not x["shipped"] for x in json.loads(listed.stdout))


def test_new_from_a_config_profile_copies_it_and_values_keep_their_types(tmp_path):
    assert invoke("profiles", "new", "first", "--from", "gce-g2-4-12b-qat", "--set", "spot=true").exit_code == 0
    r = invoke("profiles", "new", "second", "--from", "first", "--set", "zone=us-central1-a",
               "--set", 'vllm.extra_args=["--async-scheduling"]', "--set", "vllm.gpu_memory_utilization=0.9",
               "--set", "image=vllm/vllm-openai:v0.26.0-cu129", "--set", 'description=a "quoted" word')
    assert r.exit_code == 0, r.output
    p = load_profile("second")
    assert p.spot is True and p.zone == "us-central1-a" and p.vllm.extra_args == ["--async-scheduling"]
    assert p.vllm.gpu_memory_utilization == 0.9 and p.image == "vllm/vllm-openai:v0.26.0-cu129"
    assert p.description == 'a "quoted" word' and p.machine_type == "g2-standard-4"


@pytest.mark.parametrize("args, says", [
    (["big", "--from", "cloudrun-l4-12b-qat", "--set", "model.hf_repo=google/gemma-4-31B-it"], "does not fit"),
    (["x", "--from", "cloudrun-l4-12b-qat", "--set", "vllm.foo=1"], "invalid at 'vllm.foo'"),
    (["x", "--from", "cloudrun-l4-12b-qat", "--set", "vllm.max_model_len=-5"], "invalid at 'vllm.max_model_len'"),
    (["x", "--from", "cloudrun-l4-12b-qat", "--set", "oops"], "key=value"),
    (["x", "--from", "cloudrun-l4-12b-qat", "--set", "name=y"], "cannot change 'name'"),
    (["Bad_Name", "--from", "cloudrun-l4-12b-qat"], "lowercase letters"),
    (["cloudrun-l4-12b-qat", "--from", "cloudrun-l4-12b-qat"], "already exists"),
    (["x", "--from", "no-such-profile"], "Unknown profile 'no-such-profile'"),
])
def test_bad_new_profiles_are_one_sentence_and_write_nothing(tmp_path, args, says):
    config(tmp_path).write_text(USER_TEXT)
    r = invoke("profiles", "new", *args)
    assert r.exit_code != 0 and "Traceback" not in r.output
    err = r.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1 and says in err, err
    assert config(tmp_path).read_text() == USER_TEXT


def test_a_config_file_that_cannot_take_the_table_is_left_alone(tmp_path):
    text = 'profiles = { a = { base = "cloudrun-l4-12b-qat" } }\n'  # an inline table cannot be extended
    config(tmp_path).write_text(text)
    r = invoke("profiles", "new", "b", "--from", "cloudrun-l4-12b-qat")
    assert r.exit_code != 0 and "Cannot add [profiles.b]" in r.stderr
    assert config(tmp_path).read_text() == text
