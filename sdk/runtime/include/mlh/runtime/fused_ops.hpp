// Fused CPU kernels for the element-wise work of a transformer block (RMSNorm with its residual
// add, SwiGLU's gate, rotary embeddings), differentiable once.
//
// Why: in eager LibTorch each of these is several ATen ops, each a pass over the activations
// (RMSNorm of a residual sum: add, cast, square, mean, rsqrt, multiply, cast, and as many
// backward), while torch.compile fuses them into one loop. On a CPU those passes, not the
// matmuls, set the speed of a small model's training step. Each op here reads its inputs once
// and writes its outputs once, forward and backward, computing in float whatever the storage
// (float32 or bfloat16, as under CPU autocast), with the results of the ATen ops they replace
// up to float rounding (the tests compare them). Other devices and dtypes take ATen's ops.
#pragma once

#include <array>

#include <ATen/ATen.h>

namespace mlh::rt {

// RMS normalization over the last dimension, without a weight, of x + residual (residual may
// be undefined): s * rsqrt(mean(s * s) + eps), s = x + residual, in float, returned in the
// inputs' common dtype.
at::Tensor add_rms_norm(const at::Tensor& x, const at::Tensor& residual, double eps);

// SwiGLU's gate: silu(gate) * up, where gate and up are the first and second halves of
// gate_up's last dimension (one linear layer's output): [..., 2n] -> [..., n].
at::Tensor silu_mul(const at::Tensor& gate_up);

// Attention's inputs from one qkv projection: qkv [batch, seq, 3 * heads * head_dim] split
// into q, k and v of [batch, heads, seq, head_dim] (contiguous), q and k rotated by the rotary
// embedding's cos and sin tables [seq, head_dim] (the half-rotation convention: the first and
// second halves of head_dim pair up). With cos undefined, no rotation.
std::array<at::Tensor, 3> split_heads_rotary(const at::Tensor& qkv, int64_t heads, const at::Tensor& cos,
                                             const at::Tensor& sin);

// Whether the fused kernels above serve this tensor (a float32 or bfloat16 CPU tensor; one
// that is not contiguous is copied first); otherwise they run ATen's ops.
bool fused_ops_apply(const at::Tensor& t);

}  // namespace mlh::rt
