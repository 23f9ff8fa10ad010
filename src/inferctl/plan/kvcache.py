"""vLLM's hybrid KV-cache sizing, reproduced: groups, pages, blocks, capacity in tokens and concurrency.

This follows vLLM 0.32/0.33 ``v1/core/kv_cache_utils.py`` and ``v1/kv_cache_interface.py`` step by step
(reference/vllm.md §5.1), for the layer-outermost KV layout every Gemma 4 backend uses (``Using LBHNC KV
cache layout``):

1. Every layer that owns KV gets a spec: full attention or sliding window, KV heads per TP rank
   (``max(1, heads // tp)``), head size, dtype, block size. ``page = heads x block x 2 x head x dtype``.
   KV-shared layers (Gemma 3n/4 E-models) and MTP assistants own no KV.
2. One spec for all layers -> one group. Otherwise (hybrid) pages are unified: a layer with a smaller
   page multiplies its block size by ``max_page / page`` (or pads its page when that does not divide).
3. Layers are bucketed by spec; the group size is the smallest bucket (or the largest, when it is
   under 1.5x the smallest), each bucket splits into ``cdiv(n, group_size)`` groups; short groups are
   padding, which wastes memory (vLLM warns ``Add N padding layers``).
4. ``bytes_per_block`` = the largest group's sum of pages; ``num_blocks = kv_memory // bytes_per_block``.
5. A request at ``max_model_len`` needs, per group, ``cdiv(max_model_len, block)`` blocks (full
   attention) or ``cdiv(min(window - 1 + in_flight, max_model_len), block) + 1`` (sliding window;
   ``in_flight = max_num_batched_tokens x (2 with async scheduling else 1)``).
6. ``max_concurrency = num_blocks / sum over groups``; vLLM prints ``int(max_concurrency x max_model_len)``
   as the "KV cache size" in tokens.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from pydantic import BaseModel, Field

from inferctl.catalog import ModelSpec
from inferctl.catalog.models import kv_heads_per_rank


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class KVGroup(BaseModel):
    """One KV-cache group: layers sharing a block table."""

    attention: Literal["full", "sliding"] = Field(description="Attention type of the group's layers.")
    sliding_window: int | None = Field(default=None, description="Window of a sliding group.")
    layers: list[int] = Field(description="Layer indices in the group.")
    padding_layers: int = Field(default=0, description="Empty slots padded to the group size.")
    block_size: int = Field(description="Tokens per block for this group (after page unification).")
    page_bytes: int = Field(description="Bytes of one block of one layer.")
    blocks_per_request: int = Field(description="Blocks a request at max_model_len takes in this group.")


class KVLayout(BaseModel):
    """How vLLM would lay out the KV cache, and what it can hold."""

    groups: list[KVGroup] = Field(description="KV-cache groups.")
    bytes_per_block: int = Field(description="Bytes of one block across a group's layers (the pool's unit).")
    num_blocks: int = Field(description="Blocks in the pool.")
    blocks_per_request: int = Field(description="Blocks a request of max_model_len needs across all groups.")
    max_concurrency: float = Field(description="Requests of max_model_len that fit at once (vLLM's figure).")
    kv_cache_tokens: int = Field(description="vLLM's logged 'KV cache size' in tokens = concurrency x max len.")
    max_model_len: int
    in_flight_tokens: int = Field(description="Tokens a sliding layer keeps beyond its window while in flight.")
    padding_layers: int = Field(description="Padding layers added to even out groups.")
    bytes_per_token_full: float = Field(description="KV bytes per context token in full-attention layers.")
    bytes_per_token_sliding: float = Field(
        description="KV bytes per token in sliding layers (only the window plus in-flight tokens are kept)."
    )


def _layer_specs(
    model: ModelSpec, tp: int, dtype_bytes: float, block_size: int, hybrid: bool
) -> list[tuple[int, tuple]]:
    """(layer index, spec key) for every layer that owns KV; spec = (kind, window, heads, head, dtype)."""
    out = []
    for layer in model.kv_layers():
        kind = layer.attention if hybrid else "full"  # hybrid manager off: sliding allocated as full
        window = layer.sliding_window if kind == "sliding" else None
        out.append((layer.index, (kind, window, kv_heads_per_rank(layer.num_kv_heads, tp), layer.head_dim)))
    return out


def _page(spec: tuple, block_size: int, dtype_bytes: float) -> int:
    _, _, heads, head = spec
    return int(heads * block_size * 2 * head * dtype_bytes)


def _blocks_per_request(kind: str, window: int | None, block: int, max_len: int, in_flight: int) -> int:
    if kind == "full":
        return cdiv(max_len, block)
    return cdiv(min(window - 1 + in_flight, max_len), block) + 1


def kv_layout(
    model: ModelSpec,
    *,
    kv_memory_bytes: float,
    max_model_len: int,
    max_num_batched_tokens: int,
    block_size: int = 16,
    tp: int = 1,
    dtype_bytes: float = 2.0,
    async_scheduling: bool = True,
    hybrid: bool = True,
) -> KVLayout:
    """Size the KV cache the way vLLM does, given the KV memory per device."""
    specs = _layer_specs(model, tp, dtype_bytes, block_size, hybrid)
    in_flight = max_num_batched_tokens * (2 if async_scheduling else 1)
    per_token = {"full": 0.0, "sliding": 0.0}
    for layer in model.kv_layers():
        per_token[layer.attention] += layer.kv_bytes_per_token(dtype_bytes, tp)
    if not specs:  # attention-free, or every layer shares another model's KV
        return KVLayout(groups=[], bytes_per_block=0, num_blocks=1, blocks_per_request=0, max_concurrency=0.0,
                        kv_cache_tokens=0, max_model_len=max_model_len, in_flight_tokens=in_flight,
                        padding_layers=0, bytes_per_token_full=0.0, bytes_per_token_sliding=0.0)  # fmt: skip

    # Step 2: pages and block sizes, unified when hybrid.
    kinds = {(s[0], s[1]) for _, s in specs}
    pages = {s: _page(s, block_size, dtype_bytes) for _, s in specs}
    blocks = dict.fromkeys(pages, block_size)
    if len(kinds) > 1 and len(set(pages.values())) > 1:
        top = max(pages.values())
        for s, p in pages.items():
            if top % p == 0:
                blocks[s] = block_size * (top // p)
            pages[s] = top  # divisible: bigger block, same bytes; otherwise a padded page

    # Step 3: buckets by (attention kind, window) -> groups of equal size.
    buckets: dict[tuple, list[int]] = {}
    for index, s in specs:
        buckets.setdefault(s if len(kinds) > 1 else ("uniform",), []).append(index)
    spec_of = dict(specs)
    if len(kinds) == 1:
        # Uniform type: one group of every layer (UniformTypeKVCacheSpecs), pages summed per block.
        layers = [i for i, _ in specs]
        kind, window = next(iter(kinds))
        block = block_size
        group = KVGroup(
            attention=kind, sliding_window=window, layers=layers, block_size=block,
            page_bytes=sum(_page(spec_of[i], block, dtype_bytes) for i in layers),
            blocks_per_request=_blocks_per_request(kind, window, block, max_model_len, in_flight),
        )  # fmt: skip
        groups, padding = [group], 0
        bytes_per_block = group.page_bytes
    else:
        # vLLM buckets layers whose specs are equal (same kind, window, heads, head size).
        sizes = [len(v) for v in buckets.values()]
        group_size = min(sizes)
        if max(sizes) < group_size * 1.5:
            group_size = max(sizes)
        groups, padding = [], 0
        for s, layers in buckets.items():
            n_groups = cdiv(len(layers), group_size)
            for g in range(n_groups):
                members = layers[g::n_groups]
                groups.append(KVGroup(
                    attention=s[0], sliding_window=s[1], layers=members,
                    padding_layers=group_size - len(members), block_size=blocks[s], page_bytes=pages[s],
                    blocks_per_request=_blocks_per_request(s[0], s[1], blocks[s], max_model_len, in_flight),
                ))  # fmt: skip
            padding += n_groups * group_size - len(layers)
        # Step 4: the pool's block holds one page per layer of the widest group.
        bytes_per_block = max(g.page_bytes * len(g.layers) for g in groups)

    num_blocks = int(kv_memory_bytes // bytes_per_block) if kv_memory_bytes > 0 else 0
    per_request = sum(g.blocks_per_request for g in groups)
    concurrency = num_blocks / per_request
    return KVLayout(
        groups=groups,
        bytes_per_block=bytes_per_block,
        num_blocks=num_blocks,
        blocks_per_request=per_request,
        max_concurrency=concurrency,
        kv_cache_tokens=int(concurrency * max_model_len),
        max_model_len=max_model_len,
        in_flight_tokens=in_flight,
        padding_layers=padding,
        bytes_per_token_full=per_token["full"],
        bytes_per_token_sliding=per_token["sliding"],
    )


def blocks_for(layout: KVLayout, context_tokens: int) -> int:
    """Blocks one request holding ``context_tokens`` of KV takes across all groups (what the scheduler uses)."""
    total = 0
    for g in layout.groups:
        if g.attention == "full":
            total += cdiv(context_tokens, g.block_size)
        else:
            kept = min(context_tokens, g.sliding_window - 1 + layout.in_flight_tokens)
            total += min(cdiv(context_tokens, g.block_size), cdiv(kept, g.block_size) + 1)
    return total


def group_summary(layout: KVLayout) -> str:
    """'5 x sliding(1024) x 8 layers, 1 x full x 8 layers' - for humans."""
    counts = Counter((g.attention, g.sliding_window, len(g.layers)) for g in layout.groups)
    parts = []
    for (kind, window, n), k in counts.items():
        label = f"sliding({window})" if kind == "sliding" else "full"
        parts.append(f"{k} x {label} x {n} layer{'s' if n != 1 else ''}")
    return ", ".join(parts)
