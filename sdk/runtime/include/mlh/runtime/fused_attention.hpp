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

}  // namespace mlh::rt
