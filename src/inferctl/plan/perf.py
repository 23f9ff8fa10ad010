"""How long one engine step takes: a roofline over weights, KV reads and FLOPs, plus fixed overheads.

One vLLM step runs every scheduled token through the model once. Its time is

    max(FLOPs / (peak x compute_efficiency x h / (h + h_half)), bytes / (bandwidth x bw_efficiency))
      + step_overhead + per_seq_overhead x sequences + per_token x tokens + tensor-parallel all-reduces
      + drafting

* bytes: the weights once per step (MoE: only the experts some token was routed to), the LM head
  (tied embeddings, read whenever a sequence samples), the KV every sequence attends to (sliding
  layers at most their window; KV-shared layers read their target's KV again) and the KV written.
* FLOPs: 2 x active linear parameters per token, the LM head per sampling sequence, attention
  4 x heads x head_dim per (query token, attended token) pair (QK^T and PV; sliding layers at most their
  window of pairs).
* attention runs at its own rate when ``attention_efficiency`` is set: peak x attention_efficiency x
  d / (d + attention_half_head_dim) for a layer of head dim d. Its kernels are not the model's matmuls:
  each (query, key) pair per head is a dot product and an accumulation of length d plus a softmax step
  whose cost does not shrink with d, so the rate depends on the head dim and not on the hidden size (the
  CPU build's paged attention kernel; on GPUs/TPUs flash attention runs near matmul speed, and 0, the
  default, charges attention at the matmul rate as before). Internally attention FLOPs are rescaled to
  matmul-equivalent FLOPs, so one compute term still meets the bandwidth term in the roofline.
* decode at small batch is bandwidth-bound (weights dominate); long prefills are compute-bound.
* speculative decoding: the verifier scores 1 + k tokens per sequence (k x more FLOPs, the same
  weight reads), the MTP assistant runs k small steps, n-gram lookup is nearly free; a step
  yields the expected accepted length ``1 + sum_i prod_{j<=i} a_j`` tokens per sequence.

The efficiency factors and overheads are :class:`PerfParams`: priors from the accelerator catalog,
or fitted to a measured run by :mod:`inferctl.plan.calibrate`.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from inferctl.catalog.models import kv_heads_per_rank
from inferctl.plan.config import Resolved

# Default per-position acceptance when none is given: Gemma 4 MTP assistants on chat traffic
# (vLLM's SpecDecoding logs show ~0.7-0.8 on the first position, decaying), n-gram on random prompts
# (a benchmark's synthetic text rarely repeats, so little is accepted).
DEFAULT_ACCEPTANCE = {"mtp": [0.8, 0.7, 0.62, 0.55, 0.5, 0.45, 0.4, 0.36], "ngram": [0.3, 0.2, 0.15, 0.1, 0.08],
                      "draft_model": [0.7, 0.6, 0.5, 0.42, 0.36, 0.3]}  # fmt: skip


class PerfParams(BaseModel):
    """The hardware profile's fitted (or prior) efficiency factors and overheads."""

    bw_efficiency: float = Field(gt=0, le=1.5, description="Achieved fraction of peak memory bandwidth.")
    compute_efficiency: float = Field(gt=0, le=1.5, description="Achieved fraction of peak FLOP/s.")
    step_overhead_ms: float = Field(ge=0, description="Fixed cost per engine step, ms.")
    per_seq_overhead_ms: float = Field(default=0.0, ge=0, description="Per sequence in a step (sampling, I/O), ms.")
    request_overhead_ms: float = Field(
        default=0.0, ge=0, description="Per request before it is scheduled (HTTP, tokenization), ms."
    )
    per_token_us: float = Field(
        default=0.0, ge=0, description="Per scheduled token, microseconds: work that scales with tokens but not "
        "with model size (input preparation, CPU attention kernels); near 0 on GPUs, large on the CPU build."
    )

    compute_half_hidden: float = Field(
        default=0.0, ge=0, description="Hidden size at which matmul efficiency reaches half of compute_efficiency: "
        "the achieved FLOP rate is peak x compute_efficiency x h / (h + this). Small matrices run far below peak "
        "(per-row and per-element work that does not shrink with the matrix: loads, bf16 conversion, norms, "
        "activations); 0 = efficiency independent of size. Only a fit on two or more model sizes can set it."
    )

    attention_efficiency: float = Field(
        default=0.0, ge=0, le=1.5, description="Achieved fraction of peak FLOP/s in the attention kernel's score "
        "and value products (QK^T, PV) at large head dims; 0 = attention runs at the matmul rate of the model's "
        "hidden size (the GPU/TPU priors). The CPU build's attention kernel is not a matmul: its speed follows "
        "the head dim and the number of (query, key) pairs, not the hidden size. Fitted on two or more sizes."
    )
    attention_half_head_dim: float = Field(
        default=0.0, ge=0, description="Head dim at which the attention rate reaches half of attention_efficiency: "
        "per (query, key) pair and head the kernel does 4 x head_dim FLOPs plus softmax work that does not "
        "shrink with the head dim (max, exp, rescaling), i.e. this many head-dim units of fixed cost. Used only "
        "with attention_efficiency > 0."
    )

    def effective_compute_efficiency(self, hidden_size: int) -> float:
        """compute_efficiency at a model's hidden size (the saturating curve)."""
        h0 = self.compute_half_hidden
        return self.compute_efficiency * (hidden_size / (hidden_size + h0) if h0 > 0 else 1.0)

    def attention_cost_factor(self, head_dim: int, hidden_size: int) -> float:
        """Attention FLOPs of a layer with ``head_dim`` in matmul-equivalent FLOPs (matmul rate / attention rate).

        1.0 exactly when ``attention_efficiency`` is 0 (attention at the matmul rate: predictions unchanged).
        """
        if self.attention_efficiency <= 0:
            return 1.0
        d0 = self.attention_half_head_dim
        rate = self.attention_efficiency * (head_dim / (head_dim + d0) if d0 > 0 else 1.0)
        return self.effective_compute_efficiency(hidden_size) / rate

    @classmethod
    def prior(cls, r: Resolved) -> PerfParams:
        """The accelerator catalog's uncalibrated priors (what every fit starts from and is pulled towards)."""
        a = r.accelerator
        return cls(bw_efficiency=a.bw_efficiency, compute_efficiency=a.compute_efficiency,
                   step_overhead_ms=a.step_overhead_ms, per_seq_overhead_ms=0.02 if a.kind != "cpu" else 0.5,
                   request_overhead_ms=1.0 if a.kind != "cpu" else 5.0,
                   per_token_us=0.5 if a.kind != "cpu" else 20.0)  # fmt: skip


    @classmethod
    def catalog(cls, r: Resolved) -> PerfParams:
        """What the accelerator catalog ships: its fitted parameters where it has them, else the priors."""
        prior = cls.prior(r)
        cal = r.accelerator.calibration
        return cls.model_validate({**prior.model_dump(), **cal.params}) if cal else prior


def acceptance_length(acceptance: list[float], k: int) -> float:
    """Expected tokens per step per sequence: 1 (the bonus/target token) + expected accepted drafts."""
    total, p = 1.0, 1.0
    for i in range(k):
        p *= acceptance[i] if i < len(acceptance) else (acceptance[-1] if acceptance else 0.0)
        total += p
    return total


class StepModel:
    """Step-time function for one resolved configuration and one set of PerfParams.

    Per-device quantities (divided by TP) are precomputed so a step costs a few multiplications:
    the scheduler simulation evaluates it hundreds of thousands of times per grid.
    """

    def __init__(self, r: Resolved, params: PerfParams) -> None:
        m, acc, tp = r.model, r.accelerator, r.tp
        self.params = params
        self.tp = tp
        fmt = r.config.quant
        bpp = m.linear_bytes_per_param(fmt)
        dense_linear = m.linear_params(active=True) - (
            m.top_k_experts * 3 * m.hidden_size * m.moe_intermediate_size * m.num_layers if m.num_experts else 0
        )
        self.dense_weight_bytes = dense_linear * bpp / tp
        self.expert_bytes_per_layer = 3 * m.hidden_size * m.moe_intermediate_size * bpp / tp
        self.num_experts, self.top_k, self.layers = m.num_experts, m.top_k_experts, m.num_layers
        self.lm_head_bytes = m.vocab_size * m.hidden_size * 2.0 / tp
        self.flops_per_token = 2.0 * m.linear_params(active=True) / tp
        self.lm_head_flops = 2.0 * m.vocab_size * m.hidden_size / tp
        kv_b = r.kv_dtype_bytes
        self.read_full = self.read_sliding = self.attn_full = self.attn_sliding = 0.0
        self.write_per_token = 0.0
        heads = max(1, m.num_heads // tp)
        for layer in m.layers:
            read = 2 * kv_heads_per_rank(layer.num_kv_heads, tp) * layer.head_dim * kv_b
            # per (query, key) pair; in matmul-equivalent FLOPs when attention has its own rate
            flops = 4.0 * heads * layer.head_dim * params.attention_cost_factor(layer.head_dim, m.hidden_size)
            if layer.attention == "full":
                self.read_full += read
                self.attn_full += flops
            else:
                self.read_sliding += read
                self.attn_sliding += flops
            if not layer.kv_shared:
                self.write_per_token += read
        self.window = min((layer.sliding_window or 0) for layer in m.layers if layer.attention == "sliding") if any(
            layer.attention == "sliding" for layer in m.layers) else 0
        self.act_bytes_per_token = 8.0 * m.hidden_size * m.num_layers / tp  # residual stream in and out, bf16
        self._per_token_bytes = self.write_per_token + self.act_bytes_per_token
        self._step_s = params.step_overhead_ms / 1000
        self._seq_s = params.per_seq_overhead_ms / 1000
        self._token_s = params.per_token_us * 1e-6
        self.peak = acc.peak_flops(fmt) * params.effective_compute_efficiency(m.hidden_size)
        self.bw = acc.bandwidth * params.bw_efficiency
        # Tensor parallelism: two all-reduces of the hidden state per layer, ring algorithm.
        self.comm_bytes_per_token = 0.0 if tp == 1 else 2 * m.num_layers * m.hidden_size * 2.0 * 2 * (tp - 1) / tp
        self.comm_latency = 0.0 if tp == 1 else 2 * m.num_layers * (8e-6 if acc.link_gbps >= 200 else 20e-6)
        self.link = acc.link_gbps * 1e9
        # Speculative decoding.
        spec = r.config.speculative
        self.spec_k = spec.num_speculative_tokens if spec else 0
        acc_rates = (spec.acceptance or DEFAULT_ACCEPTANCE.get(spec.method, [0.5])) if spec else []
        self.tokens_per_step = acceptance_length(acc_rates, self.spec_k) if spec else 1.0
        self.draft_weight_bytes = self.draft_flops_per_token = 0.0
        self.draft_fixed = 0.0
        if spec and spec.method in ("mtp", "draft_model") and r.drafter is not None:
            d = r.drafter
            self.draft_weight_bytes = d.linear_params() * 2.0 / tp
            # centroid-masked head: a fraction of the vocabulary is scored (gemma4_mtp.py)
            self.draft_flops_per_token = 2.0 * d.linear_params() / tp + 0.1 * self.lm_head_flops
            self.draft_fixed = 0.25 * params.step_overhead_ms / 1000  # a small graph launch per draft step
        elif spec:  # n-gram / suffix lookup on the host
            self.draft_fixed = 0.05 / 1000

    def expert_fraction(self, tokens: float) -> float:
        """Fraction of a MoE layer's experts some token in the step was routed to (uniform routing)."""
        if not self.num_experts or tokens <= 0:
            return 0.0
        return 1.0 - (1.0 - self.top_k / self.num_experts) ** tokens

    def step_time(self, decode_seqs: int, ctx_full: float, ctx_sliding: float,
                  prefill_tokens: float = 0.0, prefill_attn_full: float = 0.0, prefill_attn_sliding: float = 0.0,
                  prefill_seqs: int = 0, sampling_prefills: int = 0) -> float:
        """Seconds for one step.

        ``ctx_full`` / ``ctx_sliding``: summed context the decode sequences attend to (sliding: each capped at
        the window). ``prefill_attn_*``: summed (query token x attended token) pairs of the prefill chunks.
        ``sampling_prefills``: prefill chunks that complete their prompt (they sample a token).
        """
        k1 = 1 + self.spec_k
        tokens = decode_seqs * k1 + prefill_tokens
        if tokens <= 0:
            return 0.0
        samplers = decode_seqs * k1 + sampling_prefills
        flops = tokens * self.flops_per_token + samplers * self.lm_head_flops
        flops += k1 * (self.attn_full * ctx_full + self.attn_sliding * ctx_sliding)
        flops += self.attn_full * prefill_attn_full + self.attn_sliding * prefill_attn_sliding
        weights = self.dense_weight_bytes
        if self.num_experts:
            weights += self.expert_bytes_per_layer * self.layers * self.num_experts * self.expert_fraction(tokens)
        kv_read = self.read_full * ctx_full + self.read_sliding * ctx_sliding
        # A prefill chunk re-reads its earlier context once per layer (flash attention streams it).
        if prefill_tokens:
            kv_read += (self.read_full * prefill_attn_full + self.read_sliding * prefill_attn_sliding) / prefill_tokens
        nbytes = weights + (self.lm_head_bytes if samplers else 0.0) + kv_read
        nbytes += tokens * self._per_token_bytes
        t = max(flops / self.peak, nbytes / self.bw)
        t += self._step_s + self._seq_s * (decode_seqs + prefill_seqs)
        t += self._token_s * tokens
        if self.tp > 1:
            t += tokens * self.comm_bytes_per_token / self.link + self.comm_latency
        if self.spec_k and decode_seqs:
            draft = max(decode_seqs * self.draft_flops_per_token / self.peak, self.draft_weight_bytes / self.bw)
            t += self.spec_k * (draft + self.draft_fixed)
        return t
