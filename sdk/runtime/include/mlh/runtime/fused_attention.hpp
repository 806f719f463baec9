// Attention over short sequences on a CPU in float32, differentiable once, and the choice
// between it and LibTorch's kernels.
//
// Why: at a small transformer's shapes (TRM's 81 positions, head_dim 32) LibTorch's CPU
// attention runs far below the CPU's matmul rate: the fused at::scaled_dot_product_attention
// at about a third of it, and plain batched matmuls lose as much to the softmax's separate
// passes over the scores. Here each (batch, head) pair's q, k, v and scores stay in the core's
// caches from the first product to the last, and the backward recomputes the probabilities
// from each row's saved log-sum-exp instead of keeping them.
#pragma once

#include <cstdint>

#include <ATen/ATen.h>

namespace mlh::rt {

// The longest sequence short_attention takes: its scratch holds two [seq, seq] float matrices
// per thread (the probabilities and their gradient), which stay within a core's L2 up to here;
// longer sequences take LibTorch's blocked kernels.
inline constexpr int64_t kShortAttentionMaxSequence = 256;

// softmax(q k^T / sqrt(head_dim)) v over [..., seq, head_dim] float32 CPU tensors of one
// shape, with positions after the query's masked out when `causal`. Throws unless
// short_attention_applies.
at::Tensor short_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal);
bool short_attention_applies(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v);

// Attention over [batch, heads, seq, head_dim]: short_attention where it applies, otherwise
// LibTorch's (compat::scaled_dot_product_attention).
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal);

// Attention straight from one qkv projection [batch, seq, 3 * heads * head_dim]: what
// split_heads_rotary(qkv, heads, cos, sin), then attention(q, k, v, causal), then the heads
// merged back give, [batch, seq, heads * head_dim], the same values. Where
// attention_from_qkv_applies (a float32 CPU qkv, at most kShortAttentionMaxSequence positions,
// rotary tables [seq, head_dim] or none), one kernel: each batch element's task reads its rows
// of qkv in order, rotates q and k into its scratch and writes its rows of the merged output,
// so q, k, v and the output in heads' order never go through memory (nor, in the backward,
// their gradients: dq and dk are rotated back into qkv's gradient). On a 2-core EPYC that made
// TRM small's float32 step about 3% faster where the two cores run at their slower level, and
// no slower at the faster one (docs/benchmarks.md). Elsewhere the three steps.
at::Tensor attention_from_qkv(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos, const at::Tensor& sin,
                              bool causal);
bool attention_from_qkv_applies(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace mlh::rt
