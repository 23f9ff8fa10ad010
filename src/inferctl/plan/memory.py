"""Will it fit: weights per device, the reserve vLLM keeps, the KV memory left, and what it holds.

vLLM's budget per device is ``memory x gpu_memory_utilization``; from it come the weights, the peak
activation of the profiling run, non-torch memory (NCCL, allocator) and, since v0.21, the CUDA-graph
estimate; the rest is KV cache (``Available KV cache memory``). The KV sizing given that memory is
exact (:mod:`inferctl.plan.kvcache`); the reserve is a model, sized from the same quantities vLLM
profiles with (documented in docs/planner.md, with its error). On the CPU build the KV space is set
directly (``VLLM_CPU_KVCACHE_SPACE``) and the weights live in host memory.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.catalog.accelerators import GIB
from inferctl.plan.config import Resolved, resolve
from inferctl.plan.kvcache import KVLayout, group_summary, kv_layout
from inferctl.profiles.serving import ServingConfig


class Reserve(BaseModel):
    """Memory vLLM keeps per device besides weights and KV, GiB."""

    activations_gib: float = Field(description="Peak of the profiling forward pass (max_num_batched_tokens).")
    sampler_gib: float = Field(description="Logits and sampling buffers for max_num_seqs sequences.")
    cuda_graphs_gib: float = Field(description="Captured CUDA graphs (0 on TPU and CPU).")
    non_torch_gib: float = Field(description="NCCL buffers and allocator overhead.")
    total_gib: float = Field(description="Sum of the above.")


class MemoryPlan(BaseModel):
    """Memory per device and the KV cache it leaves, for one serving configuration."""

    model: str
    accelerator: str
    tp: int
    replicas: int
    quant: str
    kv_dtype: str
    max_model_len: int
    max_num_seqs: int
    max_num_batched_tokens: int
    block_size: int
    device_memory_gib: float = Field(description="Memory per device.")
    budget_gib: float = Field(description="Memory vLLM may use per device (memory x utilization).")
    weights_gib: float = Field(description="Weights per device (including an MTP assistant).")
    reserve: Reserve
    kv_memory_gib: float = Field(description="KV-cache memory per device (vLLM's 'Available KV cache memory').")
    kv: KVLayout = Field(description="The KV-cache layout vLLM would build.")
    kv_groups: str = Field(description="KV groups in words.")
    fits: bool = Field(description="Weights fit and at least one request of max_model_len fits in the KV cache.")
    reason: str | None = Field(default=None, description="Why it does not fit.")
    max_model_len_that_fits: int | None = Field(
        default=None, description="Longest max_model_len with room for one request (None: weights do not fit)."
    )


def _reserve(r: Resolved) -> Reserve:
    m, acc = r.model, r.accelerator
    if acc.kind == "cpu":
        return Reserve(activations_gib=0, sampler_gib=0, cuda_graphs_gib=0, non_torch_gib=0, total_gib=0)
    widest = max(max(layer.intermediate_size for layer in m.layers), m.moe_intermediate_size * m.top_k_experts)
    # Profiling forward pass: the widest MLP activation (gate + up) plus a few hidden-size buffers, bf16,
    # for max_num_batched_tokens tokens; the MLP is split over TP ranks.
    act = r.max_num_batched_tokens * (2 * widest / r.tp + 8 * m.hidden_size) * 2
    # Sampler profiling: fp32 logits over the vocabulary for every sequence, about 3 live copies
    # (logits, probabilities, sorted for top-p/top-k).
    sampler = r.max_num_seqs * m.vocab_size * 4 * 3
    graphs = 0.0 if acc.kind == "tpu" else (0.3 + 0.012 * m.num_layers) * GIB
    non_torch = (0.15 if r.tp == 1 else 0.55) * GIB + 0.25 * GIB  # NCCL / allocator; llm-d empirical
    parts = [act / GIB, sampler / GIB, graphs / GIB, non_torch / GIB]
    return Reserve(
        activations_gib=round(parts[0], 3), sampler_gib=round(parts[1], 3), cuda_graphs_gib=round(parts[2], 3),
        non_torch_gib=round(parts[3], 3), total_gib=round(sum(parts), 3),
    )  # fmt: skip


def weights_per_device(r: Resolved) -> float:
    """Weight bytes per device: the model in its format over TP (+ the MTP assistant in bf16)."""
    m = r.model
    total = m.weight_bytes(r.config.quant)
    if r.config.language_model_only:
        total -= 2.0 * m.encoder_params
    if r.drafter is not None:
        total += r.drafter.weight_bytes("bf16")
    return total / r.tp


def _layout(r: Resolved, kv_bytes: float, max_len: int) -> KVLayout:
    return kv_layout(
        r.model,
        kv_memory_bytes=kv_bytes,
        max_model_len=max_len,
        max_num_batched_tokens=r.max_num_batched_tokens,
        block_size=r.block_size,
        tp=r.tp,
        dtype_bytes=r.kv_dtype_bytes,
        async_scheduling=r.async_scheduling,
        hybrid=r.config.hybrid_kv_cache,
    )


def _longest_fitting_len(r: Resolved, kv_bytes: float) -> int | None:
    """Binary search for the longest max_model_len with max_concurrency >= 1 (vLLM's estimate_max_model_len)."""
    if kv_bytes <= 0:
        return None
    lo, hi = 0, r.model.max_position_embeddings
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _layout(r, kv_bytes, mid).max_concurrency >= 1:
            lo = mid
        else:
            hi = mid - 1
    return lo or None


def plan_resolved(r: Resolved) -> MemoryPlan:
    """The memory plan of a resolved configuration."""
    acc, cfg = r.accelerator, r.config
    weights = weights_per_device(r)
    reserve = _reserve(r)
    if acc.kv_budget_is_memory or cfg.kv_cache_memory_gib is not None:
        kv_gib = cfg.kv_cache_memory_gib if cfg.kv_cache_memory_gib is not None else acc.memory_gib
        budget = acc.memory_gib if acc.kind != "cpu" else kv_gib
        # With an explicit KV size vLLM still needs the weights to fit on a device.
        weights_fit = acc.kind == "cpu" or weights / GIB + reserve.total_gib + kv_gib <= acc.memory_gib
    else:
        budget = acc.memory_gib * cfg.gpu_mem_util
        kv_gib = budget - weights / GIB - reserve.total_gib
        weights_fit = kv_gib > 0
    kv_bytes = max(0.0, kv_gib) * GIB
    layout = _layout(r, kv_bytes, r.max_model_len)
    fits = weights_fit and layout.max_concurrency >= 1
    reason = None
    if not weights_fit:
        reason = (
            f"weights ({weights / GIB:.2f} GiB) and reserve ({reserve.total_gib:.2f} GiB) exceed the "
            f"{budget:.2f} GiB vLLM may use per device"
        )
    elif not fits:
        reason = (
            f"the KV cache ({kv_gib:.2f} GiB) cannot hold one request of {r.max_model_len:,} tokens "
            f"({layout.blocks_per_request:,} blocks needed, {layout.num_blocks:,} available)"
        )
    return MemoryPlan(
        model=r.model.name,
        accelerator=acc.name,
        tp=r.tp,
        replicas=r.replicas,
        quant=cfg.quant,
        kv_dtype=cfg.kv_dtype,
        max_model_len=r.max_model_len,
        max_num_seqs=r.max_num_seqs,
        max_num_batched_tokens=r.max_num_batched_tokens,
        block_size=r.block_size,
        device_memory_gib=acc.memory_gib,
        budget_gib=round(budget, 3),
        weights_gib=round(weights / GIB, 3),
        reserve=reserve,
        kv_memory_gib=round(max(0.0, kv_gib), 3),
        kv=layout,
        kv_groups=group_summary(layout),
        fits=fits,
        reason=reason,
        max_model_len_that_fits=_longest_fitting_len(r, kv_bytes) if weights_fit else None,
    )


def plan_memory(cfg: ServingConfig) -> MemoryPlan:
    """Resolve a ServingConfig and plan its memory."""
    return plan_resolved(resolve(cfg))
