"""Prompts of an exact token length, built with the server's own tokenizer.

How (no local tokenizer, no hub download):

1. **Alphabet.** Tokenize candidate words one by one with /tokenize and keep those that are one
   token; then check that random sequences of them tokenize to exactly one token per word (drop
   words that merge with neighbours). Leading-space words are additive in SentencePiece and
   byte-level BPE alike; the check makes that an observation, not an assumption.
2. **Prompt** = one fixed anchor word (the alphabet's first) + optional shared prefix
   (``--shared-prefix N`` tokens, the same for every request) + a head of random words unique to
   the request + a body shared within the cell. The anchor makes the text's start the same as in
   the template measurement: chat templates may trim the leading space of the first word (Gemma's
   does), which changes its token count by word; with a fixed first word it is measured once. A different
   head at the start makes every KV block hash differ, so the prefix cache cannot turn a cell into
   cache hits; sharing the body keeps building a prompt cheap enough for the hot path.
3. **Template overhead.** Chat: the server adds template tokens, measured once with /tokenize on
   messages and subtracted, so the prefill the server sees equals the cell's context. Completions:
   special tokens (BOS) are measured the same way. The prefill actually seen is still recorded
   per request from ``usage.prompt_tokens``.
4. **Verification.** A few prompts per cell are tokenized in full (chat: through the template
   too); a mismatch is an error.

Everything is seeded: the same seed, cell and request index give the same prompt.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import random
from dataclasses import dataclass, field
from typing import Any, Literal

from inferctl.bench.tokenizers import LocalTokenizer, ServerTokenizer, Tokenizer
from inferctl.errors import EndpointError, InferctlError
from inferctl.server.client import VLLMClient

Api = Literal["chat", "completions"]

HEAD_TOKENS = 16
# Enough single-token spaced words for unique heads (16^16 combinations); tiny vocabularies have ~20.
MIN_SPACED_WORDS = 16
# Fewest distinct one-token words a prompt head may draw from: 8^16 heads, still unique per request.
MIN_WORDS = 8

# Common English words: most are one token in every modern vocabulary. Letters help tokenizers
# (and the test fake) that split words into characters.
_WORDS = """
the of and to in is was for on that with as by at from his her an it are be this which or have had not
but all were they one their there been has when who will more no if out so said what up its about into
than them can only other new some could time these two may then do first any my now such like our over
man me even most made after also did many before must through back years where much your way well down
should because each just those people how too little state good very make world still own see men work
long get here between both life being under never day same another know while last might us great old
year off come since against go came right used take three states himself few house use during without
again place around however home small found thought went say part once general high upon school every
does got united left number course war until always away something fact though water less public put
think almost hand enough far took head yet government system better set told nothing night end why
called didn find look asked later knew point next program city business give group toward young days let
room president side social given present several order national possible rather second face per among
form important often things looked early white case john become large big need four within felt along
children saw best church ever least power development light thing seemed family interest want members
mind country area others done turned although open god service certain kind problem began different door
thus help sense means whole matter perhaps itself york times law human line above name example action
company hands local show whether five history gave today either act feet across taken past quite
anything seen having death week experience body word half field
"""
_CANDIDATES = _WORDS.split()
_LETTERS = list("abcdefghijklmnopqrstuvwxyz")


class WorkloadError(InferctlError):
    pass


@dataclass
class Alphabet:
    """Words that each tokenize to exactly one token, also in sequence."""

    words: list[str]
    sep: str = ""  # words carry their own leading space


@dataclass
class PromptSet:
    """Everything needed to build any request of one cell; picklable for worker processes."""

    api: Api
    model: str
    words: list[str]
    content_tokens: int  # tokens of the user text (anchor + prefix + head + body)
    target_prefill: int  # tokens the server should see (content + template/special)
    max_tokens: int
    ignore_eos: bool
    seed: int
    cell: str
    attempt: int
    prefix: str = ""
    prefix_tokens: int = 0
    body: str = ""
    head_tokens: int = HEAD_TOKENS
    extra: dict[str, Any] = field(default_factory=dict)
    anchor: str = ""

    def text(self, index: int) -> str:
        """The user text of request ``index`` (deterministic, unique per seed/cell/attempt/index)."""
        # blake2b instead of random.Random(seed): ~20x cheaper, and this runs once per request.
        digest = hashlib.blake2b(f"{self.seed}/{self.cell}/{self.attempt}/{index}".encode(),
                                 digest_size=max(1, 2 * self.head_tokens)).digest()
        words, n = self.words, len(self.words)
        head = "".join(words[int.from_bytes(digest[2 * k:2 * k + 2], "little") % n]
                       for k in range(self.head_tokens))
        return self.anchor + self.prefix + head + self.body

    def payload(self, index: int) -> dict[str, Any]:
        return self.payload_with(self.text(index))

    def body_bytes(self, index: int) -> bytes:
        """The request body; only the text is encoded per request (the rest is cached)."""
        cache = self.__dict__.get("_frame")
        if cache is None:
            marker = "\u0000TEXT\u0000"
            frame = json.dumps(self.payload_with(marker), separators=(",", ":"))
            before, after = frame.split(json.dumps(marker), 1)
            cache = self.__dict__["_frame"] = (before.encode(), after.encode())
        return cache[0] + json.dumps(self.text(index)).encode() + cache[1]

    def payload_with(self, text: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "stream": True, "stream_options": {"include_usage": True},
                                "max_tokens": self.max_tokens, "temperature": 0.0}
        if self.ignore_eos:
            body["ignore_eos"] = True
        if self.api == "chat":
            body["messages"] = [{"role": "user", "content": text}]
        else:
            body["prompt"] = text
        body.update(self.extra)
        return body

    @property
    def path(self) -> str:
        return "/v1/chat/completions" if self.api == "chat" else "/v1/completions"


async def _gather_limited(coros: list, limit: int = 16) -> list:
    sem = asyncio.Semaphore(limit)

    async def one(c):
        async with sem:
            return await c

    return await asyncio.gather(*(one(c) for c in coros))


async def build_alphabet(tok: Tokenizer, seed: int = 0) -> Alphabet:
    """Find single-token words that stay one token each in sequence (see the module docstring)."""
    cands = [" " + w for w in dict.fromkeys(_CANDIDATES)] + _LETTERS
    counts = await _gather_limited([tok.tokenize(c) for c in cands])
    words = distinct_single_tokens(cands, counts)
    spaced = [w for w in words if w.startswith(" ")]
    # Prefer one family: mixing bare letters with spaced words invites merges ("a" + " the").
    words = spaced if len(spaced) >= MIN_SPACED_WORDS else [w for w in words if not w.startswith(" ")]
    rng = random.Random(seed)
    for _ in range(6):
        if len(words) < MIN_WORDS:
            break
        seq = rng.choices(words, k=512)
        if len(await tok.tokenize("".join(seq))) == len(seq):
            return Alphabet(words=words)
        # Drop the words of every 32-word window that does not add up.
        bad: set[str] = set()
        windows = [seq[i:i + 32] for i in range(0, len(seq), 32)]
        got = await _gather_limited([tok.tokenize("".join(w)) for w in windows])
        for w, toks in zip(windows, got, strict=True):
            if len(toks) != len(w):
                bad.update(w)
        if not bad or len(bad) >= len(words) - 8:
            break
        words = [w for w in words if w not in bad]
    if len(words) < MIN_WORDS:
        raise WorkloadError(
            f"Cannot build unique prompts: the server's tokenizer has only {len(words)} of the "
            f"{len(cands)} candidate words as distinct single tokens (at least {MIN_WORDS} are needed; the others "
            "are unknown, shared or split), so every prompt would be the same tokens and the prefix cache would "
            "serve them; serve the model with its real tokenizer."
        )
    raise WorkloadError(
        "Cannot build exact-length prompts: the server's tokenizer merges every word list tried; "
        "report the model name so a word list can be added."
    )


def distinct_single_tokens(cands: list[str], tokenized: list[list[int]]) -> list[str]:
    """The candidates that are one token each, with an id no other candidate has.

    A tokenizer that lacks a word still answers one token for it: ``<unk>``. Every such word shares
    that id, so prompts built from them would all be the same tokens (seen on a GPU: prefix-cache hit
    rates of 0.89-0.95 on prompts meant to be unique). An id shared by several words is therefore
    dropped with all its words: which of them (if any) the id really spells cannot be known.
    """
    single = [(c, toks[0]) for c, toks in zip(cands, tokenized, strict=True) if len(toks) == 1]
    owners: dict[int, int] = {}
    for _, tid in single:
        owners[tid] = owners.get(tid, 0) + 1
    return [c for c, tid in single if owners[tid] == 1]


@dataclass
class Overheads:
    """Tokens the server adds around the user text."""

    chat: int
    completions: int
    # False when /tokenize could not apply a chat template (the model has none, or the server cannot
    # say): chat prefill is then not calibrated. Recorded in meta.json and shown, never silent.
    chat_template: bool = True
    chat_error: str = ""


async def measure_overheads(tok: Tokenizer, alphabet: Alphabet) -> Overheads:
    """Chat template tokens and completions special tokens, measured with the tokenizer."""
    sample = "".join(alphabet.words[:8])
    plain = len(await tok.tokenize(sample))
    special = len(await tok.tokenize(sample, add_special_tokens=True))
    try:
        chat = len(await tok.tokenize_chat([{"role": "user", "content": sample}]))
    except InferctlError as exc:
        return Overheads(chat=0, completions=max(0, special - plain), chat_template=False,
                         chat_error=str(exc)[:300])
    return Overheads(chat=max(0, chat - plain), completions=max(0, special - plain))


@dataclass
class Workload:
    """Shared state for building every cell's PromptSet in one run."""

    api: Api
    model: str
    alphabet: Alphabet
    overheads: Overheads
    output_tokens: int
    ignore_eos: bool = True
    seed: int = 0
    shared_prefix: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # Where lengths come from. None: an approximation (no tokenizer), calibrated from usage; prompts are
    # then not verified, and meta.json says so (``tokenizer`` below).
    tokenizer: Tokenizer | None = None
    tokens_per_word: float = 1.0
    approximation: str = ""

    @property
    def exact(self) -> bool:
        return self.tokenizer is not None

    @property
    def overhead(self) -> int:
        return self.overheads.chat if self.api == "chat" else self.overheads.completions

    def min_context(self) -> int:
        """The smallest prefill this API can produce (template + one word)."""
        return self.overhead + 1

    def prompt_set(self, cell: str, attempt: int, context: int) -> PromptSet:
        """The prompts of one cell: the server prefills ``context`` tokens (or the minimum possible)."""
        content = max(1, context - self.overhead)
        words = content if self.exact else max(1, round(content / self.tokens_per_word))
        anchor = self.alphabet.words[0]  # the first word of the overhead sample too
        free = words - 1
        rng = random.Random(f"{self.seed}/prefix")
        shared = self.shared_prefix if self.exact else round(self.shared_prefix / self.tokens_per_word)
        prefix_n = min(shared, max(0, free - 1))
        prefix = "".join(rng.choices(self.alphabet.words, k=prefix_n))
        head = min(HEAD_TOKENS, free - prefix_n)
        body_n = free - prefix_n - head
        brng = random.Random(f"{self.seed}/{cell}/{attempt}/body")
        body = "".join(brng.choices(self.alphabet.words, k=body_n))
        return PromptSet(
            api=self.api, model=self.model, words=self.alphabet.words, content_tokens=content,
            target_prefill=content + self.overhead, max_tokens=self.output_tokens, ignore_eos=self.ignore_eos,
            seed=self.seed, cell=cell, attempt=attempt, prefix=prefix, prefix_tokens=prefix_n, body=body,
            head_tokens=head, extra=dict(self.extra), anchor=anchor,
        )


async def verify(tok: Tokenizer | VLLMClient, ps: PromptSet, samples: int = 3, *,
                 chat_template: bool = True) -> None:  # fmt: skip
    """Tokenize a few prompts in full (chat: with the template too); raise when one is off the plan."""
    if isinstance(tok, VLLMClient):
        tok = ServerTokenizer(tok, ps.model)
    for i in range(samples):
        n = len(await tok.tokenize(ps.text(i)))
        if n != ps.content_tokens:
            raise WorkloadError(
                f"Prompt {i} of cell {ps.cell} tokenized to {n} tokens, not {ps.content_tokens}; "
                "the word list is not additive for this tokenizer."
            )
        if ps.api == "chat" and chat_template:
            m = len(await tok.tokenize_chat([{"role": "user", "content": ps.text(i)}]))
            if m != ps.target_prefill:
                raise WorkloadError(
                    f"Chat prompt {i} of cell {ps.cell} is {m} tokens with the chat template, not "
                    f"{ps.target_prefill}; the template's overhead is not constant for this model."
                )


async def prepare(
    client: VLLMClient, model: str, *, api: Api, output_tokens: int, ignore_eos: bool = True, seed: int = 0,
    shared_prefix: int = 0, extra: dict[str, Any] | None = None, tokenizer: str | None = None,
) -> Workload:
    """Calibrate the alphabet and template overheads (a few hundred tokenizer calls).

    ``tokenizer``: a directory with tokenizer files, else the server's /tokenize; a server without one
    gets the usage-calibrated approximation (:func:`approximate`).
    """
    tok: Tokenizer
    if tokenizer:
        tok = LocalTokenizer(tokenizer)
    else:
        tok = ServerTokenizer(client, model)
        try:
            await tok.tokenize(" the")
        except EndpointError as exc:
            if exc.status is None or exc.status in (401, 403):
                raise
            return await approximate(client, model, api=api, output_tokens=output_tokens, ignore_eos=ignore_eos,
                                     seed=seed, shared_prefix=shared_prefix, extra=extra, why=str(exc))
    alphabet = await build_alphabet(tok, seed)
    overheads = await measure_overheads(tok, alphabet)
    return Workload(api=api, model=model, alphabet=alphabet, overheads=overheads, output_tokens=output_tokens,
                    ignore_eos=ignore_eos, seed=seed, shared_prefix=shared_prefix, extra=dict(extra or {}),
                    tokenizer=tok)


PROBE_WORDS = (32, 288)


async def approximate(
    client: VLLMClient, model: str, *, api: Api, output_tokens: int, ignore_eos: bool, seed: int,
    shared_prefix: int, extra: dict[str, Any] | None, why: str,
) -> Workload:
    """Prompt lengths without a tokenizer: two probe requests and the server's own ``usage``.

    Two prompts of 32 and 288 words (one output token each) are sent; their ``usage.prompt_tokens``
    give tokens per word (the slope) and the template/special tokens (the intercept). Prompts are then
    built with that many words; each request still records the prefill the server saw, so reports
    show the true lengths. Without usage in the answers, one token per word and no overhead are
    assumed, and the run says so.
    """
    words = [" " + w for w in dict.fromkeys(_CANDIDATES)]
    rng = random.Random(f"{seed}/probe")
    seen: list[tuple[int, int]] = []
    for n in PROBE_WORDS:
        text = "".join(rng.choices(words, k=n))
        if api == "chat":
            r = await client.chat([{"role": "user", "content": text}], model=model, max_tokens=1, extra=extra)
        else:
            r = await client.complete(text, model=model, max_tokens=1, extra=extra)
        if r.status == "ok" and r.prompt_tokens:
            seen.append((n, r.prompt_tokens))
    if len(seen) == 2 and seen[1][1] > seen[0][1]:
        (n1, p1), (n2, p2) = seen
        per_word = (p2 - p1) / (n2 - n1)
        overhead = max(0, round(p1 - per_word * n1))
        how = (f"approximate: no tokenizer ({why}); {per_word:.3f} tokens per word and {overhead} template "
               "tokens, calibrated from usage.prompt_tokens of two probe requests")
    else:
        per_word, overhead = 1.0, 0
        how = (f"approximate: no tokenizer ({why}) and no usage in the answers: one token per word assumed; "
               "pass --tokenizer DIR for exact lengths")
    ov = Overheads(chat=overhead, completions=overhead, chat_template=False, chat_error="no tokenizer")
    return Workload(api=api, model=model, alphabet=Alphabet(words=words), overheads=ov, output_tokens=output_tokens,
                    ignore_eos=ignore_eos, seed=seed, shared_prefix=shared_prefix, extra=dict(extra or {}),
                    tokenizer=None, tokens_per_word=per_word, approximation=how)
