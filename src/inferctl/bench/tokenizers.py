"""Where exact prompt lengths come from: the server's /tokenize, or a tokenizer on disk.

vLLM serves ``/tokenize`` (text and chat messages, template applied), so its prompts can be built to the
token. Other OpenAI-compatible servers (``transformers serve``, llama.cpp, SGLang, TGI, Ollama, hosted
APIs) do not; for them ``--tokenizer DIR`` names the model's tokenizer files (tokenizer.json and
tokenizer_config.json with its chat template), loaded with transformers' own ``AutoTokenizer`` so the
counts are the ones the server's copy of the same files gives. Without either, the workload falls back
to an approximation calibrated from the server's ``usage`` (bench/workload.py) and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from inferctl.errors import ConfigError
from inferctl.server.client import VLLMClient


class Tokenizer(Protocol):
    description: str

    async def tokenize(self, text: str, *, add_special_tokens: bool = False) -> list[int]: ...

    async def tokenize_chat(self, messages: list[dict[str, Any]]) -> list[int]: ...


class ServerTokenizer:
    """The server's own /tokenize (vLLM)."""

    description = "the server's /tokenize"

    def __init__(self, client: VLLMClient, model: str) -> None:
        self.client, self.model = client, model

    async def tokenize(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        return await self.client.tokenize(text, model=self.model, add_special_tokens=add_special_tokens)

    async def tokenize_chat(self, messages: list[dict[str, Any]]) -> list[int]:
        return await self.client.tokenize_chat(messages, model=self.model)


class LocalTokenizer:
    """A tokenizer directory loaded with transformers (``--tokenizer DIR``)."""

    def __init__(self, path: str | Path) -> None:
        p = Path(path).expanduser()
        if not p.is_dir() or not any((p / f).exists() for f in ("tokenizer.json", "tokenizer_config.json",
                                                                  "tokenizer.model")):
            raise ConfigError(f"--tokenizer {path}: not a directory with tokenizer files (tokenizer.json, "
                              "tokenizer_config.json or tokenizer.model).")
        try:
            from transformers import AutoTokenizer
        except ImportError:
            raise ConfigError("--tokenizer needs transformers installed (pip install transformers).") from None
        try:
            self._tok = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--tokenizer {path}: transformers could not load it ({str(exc).splitlines()[0]}).") \
                from None
        self.description = f"local tokenizer {p}"

    async def tokenize(self, text: str, *, add_special_tokens: bool = False) -> list[int]:
        return list(self._tok.encode(text, add_special_tokens=add_special_tokens))

    async def tokenize_chat(self, messages: list[dict[str, Any]]) -> list[int]:
        if not getattr(self._tok, "chat_template", None):
            raise ConfigError("the tokenizer has no chat template")
        ids = self._tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        if isinstance(ids, dict) or hasattr(ids, "keys"):  # transformers 5 returns a BatchEncoding
            ids = ids["input_ids"]
        return list(ids)
