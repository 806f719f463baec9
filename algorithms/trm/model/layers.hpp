// The reference's building blocks (HRM/TRM models/layers.py): LeCun truncated-normal linear
// and embedding layers, weightless RMSNorm, SwiGLU, rotary position embeddings, attention,
// the post-norm block and the reasoning module ("net") that TRM applies recursively.
//
// Names of parameters and buffers follow the reference's state_dict (qkv_proj, o_proj,
// gate_up_proj, down_proj, mlp_t, self_attn, layers.<i>, embedding_weight) so that a
// converted PyTorch checkpoint maps one to one.
//
// Precision: parameters are float32; under autocast (bf16) the linear layers and matmuls run
// in bf16 while RMSNorm, RoPE and the attention softmax run in float32, as the reference.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/pimpl.h>

#include "model/model_config.hpp"

namespace trm {

// In place, the JAX/flax truncated normal the reference uses (common.trunc_normal_init_):
// a normal cut at [lower, upper] standard deviations and rescaled so that the result's
// standard deviation is `std` (PyTorch's trunc_normal_ would give less). std 0 zeroes.
void trunc_normal_(at::Tensor& tensor, double std, double lower = -2.0, double upper = 2.0);

// SwiGLU's intermediate size: round(expansion * hidden * 2/3) rounded up to a multiple of 256.
int64_t swiglu_intermediate(int64_t hidden, double expansion);

// y = x W^T (+ b). Weight trunc-normal std 1/sqrt(in_features), bias 0.
class CastedLinearImpl : public torch::nn::Module {
 public:
  CastedLinearImpl(int64_t in_features, int64_t out_features, bool bias = false);
  at::Tensor forward(const at::Tensor& x);
  at::Tensor weight, bias;  // bias undefined without one
};
TORCH_MODULE(CastedLinear);

// Rows of embedding_weight [num, dim], trunc-normal std init_std.
class CastedEmbeddingImpl : public torch::nn::Module {
 public:
  CastedEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, double init_std);
  at::Tensor forward(const at::Tensor& ids);
  at::Tensor embedding_weight;
};
TORCH_MODULE(CastedEmbedding);

// down_proj(silu(gate) * up) with [gate, up] = gate_up_proj(x) (one fused weight, as the
// reference's state_dict): one matmul, then the gate in one fused pass (mlh::rt::silu_mul).
class SwiGLUImpl : public torch::nn::Module {
 public:
  SwiGLUImpl(int64_t hidden, double expansion);
  at::Tensor forward(const at::Tensor& x);
  int64_t intermediate() const { return intermediate_; }
  CastedLinear gate_up_proj{nullptr}, down_proj{nullptr};

 private:
  int64_t intermediate_;
};
TORCH_MODULE(SwiGLU);

// cos/sin tables [max_positions, dim] of RoPE with the rotate_half layout: frequencies
// base^(-2i/dim) repeated over both halves. Buffers, so that they follow the module's device.
class RotaryEmbeddingImpl : public torch::nn::Module {
 public:
  RotaryEmbeddingImpl(int64_t dim, int64_t max_positions, double base);
  at::Tensor cos_cached, sin_cached;
};
TORCH_MODULE(RotaryEmbedding);

// Multi-head self-attention: fused qkv_proj (no bias), split into heads with RoPE on q and k
// when cos is defined (one fused pass, mlh::rt::split_heads_rotary), softmax(q k^T /
// sqrt(head_dim)) (masked above the diagonal when causal), o_proj.
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(int64_t hidden, int64_t num_heads, bool causal);
  at::Tensor forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);
  CastedLinear qkv_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t num_heads_, head_dim_;
  bool causal_;
};
TORCH_MODULE(Attention);

// Post-norm block: h = rms_norm(h + attn(h)); h = rms_norm(h + mlp(h)), each norm with its
// residual add in one fused pass (mlh::rt::add_rms_norm: in float32, no weight).
// mlp_t variant, as the reference: on the transposed states [B, hidden, S'] (S' = seq_len +
// prefix), t = rms_norm(t + mlp_t(t)) with the SwiGLU (and so the norm) over the sequence
// axis, transposed back; then the same hidden-axis MLP step.
class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelConfig& config);
  at::Tensor forward(const at::Tensor& h, const at::Tensor& cos, const at::Tensor& sin);
  Attention self_attn{nullptr};  // null in the mlp_t variant
  SwiGLU mlp_t{nullptr};         // null in the attention variant
  SwiGLU mlp{nullptr};

 private:
  double eps_;
};
TORCH_MODULE(Block);

// The reasoning module ("net"): h = h + injection, then each of the l_layers blocks.
class ReasoningModuleImpl : public torch::nn::Module {
 public:
  explicit ReasoningModuleImpl(const ModelConfig& config);
  at::Tensor forward(const at::Tensor& h, const at::Tensor& injection, const at::Tensor& cos, const at::Tensor& sin);
  torch::nn::ModuleList layers{nullptr};

 private:
  std::vector<Block> blocks_;
};
TORCH_MODULE(ReasoningModule);

}  // namespace trm
