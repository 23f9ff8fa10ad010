"""A tiny checkpoint with the real Gemma 4 text architecture, built locally in about a second.

There is no model hub on the machines inferctl is developed and demoed on, so the local engine
serves a checkpoint we build ourselves. It is small (about 0.3 M parameters) but it is *really*
Gemma 4 as far as vLLM is concerned: ``model_type: gemma4_text``, architecture
``Gemma4ForCausalLM`` (vLLM's ``model_executor/models/gemma4.py``), a hybrid of sliding-window and
full-attention layers, a larger ``global_head_dim`` and fewer ``num_global_key_value_heads`` on the
full layers with ``attention_k_eq_v`` (as in 26B-A4B / 31B), final logit soft-capping, tied
embeddings and the two RoPE flavours. So vLLM walks the same code paths (hybrid KV cache manager,
per-layer head dims, K=V loading) as for the big models; only the numbers are small.

What the checkpoint is made of, and why it is deterministic on any machine:

* weights: ``numpy.random.default_rng(SEED)`` normals (PCG64 + ziggurat, stable across numpy
  versions), written as bf16 safetensors by hand (numpy has no bf16; the format is a JSON header
  plus raw little-endian bytes). No torch import, which keeps the build to about a second.
* tokenizer: a byte-level BPE trained with ``tokenizers`` on a corpus generated here from a fixed
  word list and a seeded ``random.Random`` (stable across Python versions) plus the Zen of Python.
  Nothing is read from the machine, so two machines build the same bytes.
* a Gemma-style chat template (``<start_of_turn>user ... <end_of_turn>``) and the special tokens
  Gemma uses at the same ids (pad 0, eos 1, bos 2, unk 3).

The model is written to ``cache_dir()/models/tiny-gemma4-v<VERSION>`` atomically: it is built in a
temporary sibling directory and renamed into place, so a killed build never leaves half a model.
Bump ``VERSION`` whenever the recipe changes; old versions are left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import struct
import tempfile
from pathlib import Path

VERSION = 3
SEED = 20260422
SERVED_MODEL_NAME = "tiny-gemma4"
MANIFEST = "inferctl-tinymodel.json"

# Embedding scale. With the usual 0.02 the (unit-RMS, post-normed) sublayer outputs swamp the
# residual stream and greedy output is uniform noise: n-gram speculative decoding then finds almost
# nothing to propose. At 0.1 the tied embedding makes the model *sometimes* repeat its last token
# ("be be be be") between varied stretches, like a real small LM, so spec-decode drafts are both
# proposed and accepted. (0.25 only ever repeats one token.)
EMBED_STD = 0.1

SPECIAL_TOKENS = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>"]
PAD_ID, EOS_ID, BOS_ID, UNK_ID, START_OF_TURN_ID, END_OF_TURN_ID = range(len(SPECIAL_TOKENS))

# The Gemma 3/4 chat format: a system message is folded into the first user turn, the assistant
# role is called "model", and generation starts after "<start_of_turn>model\n".
CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{%- if messages[0]['role'] == 'system' -%}"
    "{%- if messages[0]['content'] is string -%}"
    "{%- set first_user_prefix = messages[0]['content'] + '\n\n' -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = messages[0]['content'][0]['text'] + '\n\n' -%}"
    "{%- endif -%}"
    "{%- set loop_messages = messages[1:] -%}"
    "{%- else -%}"
    "{%- set first_user_prefix = '' -%}"
    "{%- set loop_messages = messages -%}"
    "{%- endif -%}"
    "{%- for message in loop_messages -%}"
    "{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}"
    "{%- endif -%}"
    "{%- if message['role'] == 'assistant' -%}{%- set role = 'model' -%}"
    "{%- else -%}{%- set role = message['role'] -%}{%- endif -%}"
    "{{ '<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else '') }}"
    "{%- if message['content'] is string -%}"
    "{{ message['content'] | trim }}"
    "{%- else -%}"
    "{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'text' -%}{{ item['text'] | trim }}{%- endif -%}"
    "{%- endfor -%}"
    "{%- endif -%}"
    "{{ '<end_of_turn>\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\n' }}{%- endif -%}"
)

# Shapes: hidden 64, 4 query heads of 32 on sliding layers; the full-attention layer has head_dim 64
# and a single KV head shared by K and V, like the big Gemma 4 checkpoints (scaled down). Head dims
# must be ones vLLM's CPU attention kernel supports (32, 64, 80, 96, ... 256, 512): with 16 the
# server starts and answers /health, then dies on the first request.
TEXT_CONFIG: dict = {
    "architectures": ["Gemma4ForCausalLM"],
    "model_type": "gemma4_text",
    "vocab_size": 512,
    "hidden_size": 64,
    "intermediate_size": 256,
    "num_hidden_layers": 4,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "global_head_dim": 64,
    "num_global_key_value_heads": 1,
    "attention_k_eq_v": True,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention", "full_attention"],
    "rope_parameters": {
        "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0},
    },
    "final_logit_softcapping": 30.0,
    "hidden_activation": "gelu_pytorch_tanh",
    "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-06,
    "attention_bias": False,
    "attention_dropout": 0.0,
    "tie_word_embeddings": True,
    "hidden_size_per_layer_input": 0,
    "vocab_size_per_layer_input": 512,
    "num_kv_shared_layers": 0,
    "enable_moe_block": False,
    "use_double_wide_mlp": False,
    "initializer_range": 0.02,
    "pad_token_id": PAD_ID,
    "eos_token_id": EOS_ID,
    "bos_token_id": BOS_ID,
    "dtype": "bfloat16",
    "use_cache": True,
}

_WORD_LIST = (
    "the a an of to in on for with by from and or but not is are was be been has have had will can may "
    "model models serving server request requests token tokens prompt prompts cache memory batch batches "
    "latency throughput queue time first output input context window sliding full attention layer layers "
    "head heads key value engine process port health metrics log logs status start stop run runs running "
    "user users assistant answer question hello world please thank you what why how when where which "
    "gemma vllm cpu gpu tpu cloud price cost plan capacity bench benchmark sweep report compare deploy "
    "fast slow small large tiny big more less one two three four five ten hundred thousand million "
    "python code test tests data file files line lines number numbers text word words sentence story "
    "today morning night day week year people machine learning language inference speculative decoding"
)
_WORDS = _WORD_LIST.split()

_TEMPLATES = (
    "{A} {b} {c} {d}.",
    "How {b} is the {c} {d}?",
    "The {b} {c} {d} {e} in {n} {f}.",
    "{A} {b}, {c} {d} {e}!",
    "Please {b} the {c} for {n} {d}.",
    "Why does {b} {c} {d} {e}?",
    "def {b}_{c}({d}): return {n}",
    "{A} {b} {c}: {n} {d} per {e}, {m} {f}.",
)


def _corpus() -> list[str]:
    """Deterministic training text: generated sentences plus the Zen of Python and chat markers."""
    import codecs
    import io
    from contextlib import redirect_stdout

    rng = random.Random(SEED)
    lines = []
    for _ in range(4000):
        template = rng.choice(_TEMPLATES)
        words = {k: rng.choice(_WORDS) for k in "bcdef"}
        words["A"] = rng.choice(_WORDS).capitalize()
        lines.append(template.format(n=rng.randint(0, 2048), m=rng.randint(0, 99), **words))
    # `import this` prints the Zen; its rot13 source string is in every CPython since 2.2.
    with redirect_stdout(io.StringIO()):
        import this  # noqa: F401
    lines += codecs.decode(this.s, "rot13").splitlines()
    lines += ["<start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\nHi there.<end_of_turn>\n"] * 50
    return lines


def _train_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=TEXT_CONFIG["vocab_size"],
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    # add_special_tokens=True prepends <bos>, as Gemma tokenizers do; chat templates add it themselves.
    tok.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B", special_tokens=[("<bos>", BOS_ID)]
    )
    return tok


def _param_shapes(cfg: dict) -> dict[str, tuple[int, ...]]:
    """Parameter names and shapes of transformers' Gemma4ForCausalLM for this config (tied head)."""
    h, inter = cfg["hidden_size"], cfg["intermediate_size"]
    heads = cfg["num_attention_heads"]
    shapes: dict[str, tuple[int, ...]] = {"model.embed_tokens.weight": (cfg["vocab_size"], h)}
    for i, kind in enumerate(cfg["layer_types"]):
        full = kind == "full_attention"
        head_dim = cfg["global_head_dim"] if full else cfg["head_dim"]
        kv_heads = cfg["num_global_key_value_heads"] if full and cfg["attention_k_eq_v"] else (
            cfg["num_key_value_heads"]
        )
        p = f"model.layers.{i}."
        shapes[p + "layer_scalar"] = (1,)
        shapes[p + "self_attn.q_proj.weight"] = (heads * head_dim, h)
        shapes[p + "self_attn.q_norm.weight"] = (head_dim,)
        shapes[p + "self_attn.k_norm.weight"] = (head_dim,)
        shapes[p + "self_attn.k_proj.weight"] = (kv_heads * head_dim, h)
        if not (full and cfg["attention_k_eq_v"]):  # k_eq_v layers ship K only; V reuses it
            shapes[p + "self_attn.v_proj.weight"] = (kv_heads * head_dim, h)
        shapes[p + "self_attn.o_proj.weight"] = (h, heads * head_dim)
        shapes[p + "mlp.gate_proj.weight"] = (inter, h)
        shapes[p + "mlp.up_proj.weight"] = (inter, h)
        shapes[p + "mlp.down_proj.weight"] = (h, inter)
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            shapes[p + norm + ".weight"] = (h,)
    shapes["model.norm.weight"] = (h,)
    return shapes


def _weights(cfg: dict) -> dict[str, object]:
    """Random weights (fixed seed): normals for matrices, ones for norms and layer scalars."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    out = {}
    for name, shape in _param_shapes(cfg).items():
        if len(shape) == 1:  # Gemma 4 RMSNorm multiplies by weight (not 1 + weight): ones = identity
            out[name] = np.ones(shape, dtype=np.float32)
        else:
            std = EMBED_STD if name == "model.embed_tokens.weight" else cfg["initializer_range"]
            out[name] = rng.standard_normal(shape, dtype=np.float32) * std
    return out


def _bf16_bytes(array) -> bytes:
    """float32 -> bfloat16 bytes, round-to-nearest-even (what torch does), little-endian."""
    import numpy as np

    bits = np.ascontiguousarray(array, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def _write_safetensors(path: Path, tensors: dict[str, object]) -> None:
    """The safetensors format: u64 header size, JSON header, then the tensors' raw bytes."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        data = _bf16_bytes(tensors[name])
        shape = list(tensors[name].shape)  # type: ignore[attr-defined]
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the spec asks for 8-byte alignment of the data section
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for blob in blobs:
            f.write(blob)


def _write_json(path: Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def variant_config(**config_overrides: object) -> dict:
    """TEXT_CONFIG with ``config_overrides`` applied (sizes, layer pattern, window, KV heads...).

    ``num_hidden_layers`` follows ``layer_types`` when only the latter is given. Head dims must stay
    ones vLLM's CPU attention kernel supports (32, 64, 80, 96, ... 256, 512).
    """
    cfg = {**TEXT_CONFIG, **config_overrides}
    if "layer_types" in config_overrides and "num_hidden_layers" not in config_overrides:
        cfg["num_hidden_layers"] = len(cfg["layer_types"])
    if len(cfg["layer_types"]) != cfg["num_hidden_layers"]:
        raise ValueError(f"layer_types has {len(cfg['layer_types'])} entries for {cfg['num_hidden_layers']} layers")
    return cfg


def build_tiny_model(dest: Path, **config_overrides: object) -> None:
    """Write the tiny checkpoint into ``dest`` (an empty or missing directory). Not atomic itself.

    With ``config_overrides`` (keys of TEXT_CONFIG, e.g. ``hidden_size=256, layer_types=[...]``) the
    checkpoint is a variant of another size or layer pattern: same recipe (seeded weights for the new
    shapes, same tokenizer and chat template), so vLLM walks the same Gemma 4 code paths. The manifest
    then records the overrides. Without them the output is byte-for-byte the stock tiny model.
    """
    cfg = variant_config(**config_overrides)
    dest.mkdir(parents=True, exist_ok=True)
    _write_json(dest / "config.json", cfg)
    _write_json(
        dest / "generation_config.json",
        # Chat turns end with <end_of_turn>; plain completions with <eos>.
        {"bos_token_id": BOS_ID, "eos_token_id": [EOS_ID, END_OF_TURN_ID], "pad_token_id": PAD_ID},
    )
    _write_safetensors(dest / "model.safetensors", _weights(cfg))
    _train_tokenizer().save(str(dest / "tokenizer.json"))
    special = {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"}
    _write_json(
        dest / "tokenizer_config.json",
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            **special,
            "additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"],
            "model_max_length": cfg["max_position_embeddings"],
            "padding_side": "left",
            "chat_template": CHAT_TEMPLATE,
        },
    )
    _write_json(dest / "special_tokens_map.json", special)
    files = sorted(p.name for p in dest.iterdir())
    _write_json(
        dest / MANIFEST,
        {
            "name": SERVED_MODEL_NAME,
            "version": VERSION,
            "seed": SEED,
            **({"config_overrides": config_overrides} if config_overrides else {}),
            "sha256": {n: hashlib.sha256((dest / n).read_bytes()).hexdigest() for n in files},
        },
    )


def tiny_model_dir() -> Path:
    """Where the tiny model of this VERSION lives (it may not be built yet)."""
    from inferctl.config import cache_dir

    return cache_dir() / "models" / f"tiny-gemma4-v{VERSION}"


def _complete(path: Path) -> bool:
    return (path / MANIFEST).is_file() and (path / "model.safetensors").is_file()


def ensure_tiny_model() -> Path:
    """The tiny Gemma 4 checkpoint's directory, built on first use (about a second) and cached.

    Safe against concurrent callers and killed builds: each build happens in its own temporary
    directory that is renamed into place; the loser of a race throws its copy away.
    """
    final = tiny_model_dir()
    if _complete(final):
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.exists():  # present but incomplete: not ours to trust (hand-edited, or pre-rename crash)
        shutil.rmtree(final, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))
    try:
        build_tiny_model(tmp)
        try:
            os.rename(tmp, final)
        except OSError:
            if not _complete(final):  # someone else won the race with a good copy: keep theirs
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final
