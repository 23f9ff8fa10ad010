"""The tiny Gemma 4 checkpoint: deterministic, loadable by transformers, built atomically."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inferctl.local import tinymodel


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("INFERCTL_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tiny") / "model"
    tinymodel.build_tiny_model(path)
    return path


def _contents(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())}


def test_build_is_byte_for_byte_deterministic(built, tmp_path):
    again = tmp_path / "again"
    tinymodel.build_tiny_model(again)
    assert _contents(again) == _contents(built)


def test_manifest_records_version_and_hashes(built):
    manifest = json.loads((built / tinymodel.MANIFEST).read_text())
    assert manifest["version"] == tinymodel.VERSION
    assert set(manifest["sha256"]) == {p.name for p in built.iterdir()} - {tinymodel.MANIFEST}


def test_ensure_builds_once_under_the_cache_dir(home):
    path = tinymodel.ensure_tiny_model()
    assert path == home / "cache" / "models" / f"tiny-gemma4-v{tinymodel.VERSION}"
    stamp = (path / "model.safetensors").stat().st_mtime_ns
    assert tinymodel.ensure_tiny_model() == path
    assert (path / "model.safetensors").stat().st_mtime_ns == stamp  # cached, not rebuilt
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp dirs left behind


def test_a_killed_build_leaves_no_model(home, monkeypatch):
    def half_build(dest: Path) -> None:
        (dest / "config.json").write_text("{}")
        raise KeyboardInterrupt  # as if the user hit Ctrl-C mid-build

    monkeypatch.setattr(tinymodel, "build_tiny_model", half_build)
    with pytest.raises(KeyboardInterrupt):
        tinymodel.ensure_tiny_model()
    models = home / "cache" / "models"
    assert not tinymodel.tiny_model_dir().exists()
    assert list(models.iterdir()) == []


def test_an_incomplete_directory_is_rebuilt(home):
    path = tinymodel.tiny_model_dir()
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")  # e.g. copied by hand, no manifest
    assert tinymodel.ensure_tiny_model() == path
    assert (path / tinymodel.MANIFEST).is_file()


def test_config_is_gemma4_text_with_sliding_and_full_layers(built):
    from transformers import AutoConfig

    cfg = AutoConfig.from_pretrained(built)
    assert cfg.model_type == "gemma4_text"
    assert cfg.architectures == ["Gemma4ForCausalLM"]
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size) == (64, 4, 512)
    assert set(cfg.layer_types) == {"sliding_attention", "full_attention"}
    assert cfg.layer_types[-1] == "full_attention"
    assert cfg.sliding_window == 128
    full = cfg.layer_types.index("full_attention")
    sliding = cfg.layer_types.index("sliding_attention")
    # Gemma 4's full-attention layers have a larger head and fewer KV heads (global_head_dim etc.)
    assert cfg.per_layer_config[full].head_dim == 64
    assert cfg.per_layer_config[full].num_key_value_heads == 1
    assert cfg.per_layer_config[sliding].head_dim == 32
    assert cfg.per_layer_config[sliding].num_key_value_heads == 2


def test_tokenizer_has_gemma_special_tokens(built):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(built)
    assert len(tok) == 512
    assert (tok.pad_token, tok.eos_token, tok.bos_token) == ("<pad>", "<eos>", "<bos>")
    assert (tok.pad_token_id, tok.eos_token_id, tok.bos_token_id) == (0, 1, 2)
    ids = tok("Hello world").input_ids
    assert ids[0] == tok.bos_token_id
    assert tok.decode(ids, skip_special_tokens=True) == "Hello world"  # byte-level: lossless


def test_chat_template_renders_gemma_turns(built):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(built)
    text = tok.apply_chat_template(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Bye"},
        ],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert text == (
        "<bos><start_of_turn>user\nBe brief.\n\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello.<end_of_turn>\n"
        "<start_of_turn>user\nBye<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    ids = tok(text, add_special_tokens=False).input_ids
    assert ids.count(tinymodel.START_OF_TURN_ID) == 4  # the markers are single special tokens


def test_weights_match_transformers_gemma4_exactly(built):
    """Every parameter transformers' Gemma4ForCausalLM expects is in the file, nothing else."""
    import torch
    from safetensors import safe_open
    from transformers import AutoConfig, Gemma4ForCausalLM

    cfg = AutoConfig.from_pretrained(built)
    with torch.device("meta"):
        model = Gemma4ForCausalLM(cfg)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied
    with safe_open(built / "model.safetensors", framework="pt") as f:
        found = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}  # noqa: SIM118
    assert found == expected
