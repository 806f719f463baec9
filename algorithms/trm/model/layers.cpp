// The reference's layers in LibTorch (see layers.hpp).
#include "model/layers.hpp"

#include <cmath>

#include <ATen/ATen.h>
#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/cpu_linear.hpp>
#include <mlh/runtime/fused_attention.hpp>
#include <mlh/runtime/fused_ops.hpp>

namespace trm {

void trunc_normal_(at::Tensor& tensor, double std, double lower, double upper) {
  at::NoGradGuard no_grad;
  if (std == 0) {
    tensor.zero_();
    return;
  }
  // Inverse-CDF sampling of the truncated normal, then the variance correction of JAX's
  // truncated_normal initializer (the truncation shrinks the std by this factor).
  const double sqrt2 = std::sqrt(2.0);
  const double a = std::erf(lower / sqrt2), b = std::erf(upper / sqrt2), z = (b - a) / 2;
  const double c = 1.0 / std::sqrt(2 * M_PI);
  const double pdf_u = c * std::exp(-0.5 * lower * lower), pdf_l = c * std::exp(-0.5 * upper * upper);
  const double comp_std =
      std / std::sqrt(1 - (upper * pdf_u - lower * pdf_l) / z - ((pdf_u - pdf_l) / z) * ((pdf_u - pdf_l) / z));
  tensor.uniform_(a, b);
  tensor.erfinv_();
  tensor.mul_(sqrt2 * comp_std);
  tensor.clamp_(lower * comp_std, upper * comp_std);
}

int64_t swiglu_intermediate(int64_t hidden, double expansion) {
  const auto inter = static_cast<int64_t>(std::nearbyint(expansion * static_cast<double>(hidden) * 2.0 / 3.0));
  return (inter + 255) / 256 * 256;
}

CastedLinearImpl::CastedLinearImpl(int64_t in_features, int64_t out_features, bool with_bias) {
  at::Tensor w = at::empty({out_features, in_features});
  trunc_normal_(w, 1.0 / std::sqrt(static_cast<double>(in_features)));
  weight = register_parameter("weight", w);
  if (with_bias) bias = register_parameter("bias", at::zeros({out_features}));
}

at::Tensor CastedLinearImpl::forward(const at::Tensor& x) {
  // The reference casts the weights to the input's dtype; a no-op in float32 and under
  // autocast, where linear casts both itself...
  auto dtype = x.scalar_type();
  // ...except under no-grad: LibTorch 1.13's autocast caches its cast of a weight whatever
  // the grad mode, so the no-grad H-cycles would leave a cast without a graph in the cache,
  // which the grad cycle then reuses and the weight gets no gradient. Casting here keeps the
  // no-grad casts out of the cache.
  const auto device = x.device().type();
  if (!at::GradMode::is_enabled() && mlh::rt::compat::autocast_enabled(device) && at::isFloatingType(dtype))
    dtype = mlh::rt::compat::autocast_dtype(device);
  if (!bias.defined()) return mlh::rt::linear(x, weight.to(dtype));  // our GEMM in float32 on an AVX-512 CPU
  return at::linear(x, weight.to(dtype), bias.to(dtype));
}

CastedEmbeddingImpl::CastedEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, double init_std) {
  at::Tensor w = at::empty({num_embeddings, embedding_dim});
  trunc_normal_(w, init_std);
  embedding_weight = register_parameter("embedding_weight", w);
}

at::Tensor CastedEmbeddingImpl::forward(const at::Tensor& ids) { return at::embedding(embedding_weight, ids.to(at::kLong)); }

SwiGLUImpl::SwiGLUImpl(int64_t hidden, double expansion) : intermediate_(swiglu_intermediate(hidden, expansion)) {
  gate_up_proj = register_module("gate_up_proj", CastedLinear(hidden, 2 * intermediate_, false));
  down_proj = register_module("down_proj", CastedLinear(intermediate_, hidden, false));
}

at::Tensor SwiGLUImpl::forward(const at::Tensor& x) {
  return down_proj->forward(mlh::rt::silu_mul(gate_up_proj->forward(x)));
}

RotaryEmbeddingImpl::RotaryEmbeddingImpl(int64_t dim, int64_t max_positions, double base) {
  const at::Tensor inv_freq = 1.0 / at::pow(base, at::arange(0, dim, 2, at::kFloat) / static_cast<double>(dim));
  const at::Tensor t = at::arange(max_positions, at::kFloat);
  const at::Tensor freqs = at::outer(t, inv_freq);
  const at::Tensor emb = at::cat({freqs, freqs}, -1);
  cos_cached = register_buffer("cos_cached", emb.cos());
  sin_cached = register_buffer("sin_cached", emb.sin());
}

AttentionImpl::AttentionImpl(int64_t hidden, int64_t num_heads, bool causal)
    : num_heads_(num_heads), head_dim_(hidden / num_heads), causal_(causal) {
  qkv_proj = register_module("qkv_proj", CastedLinear(hidden, 3 * num_heads * head_dim_, false));
  o_proj = register_module("o_proj", CastedLinear(num_heads * head_dim_, hidden, false));
}

at::Tensor AttentionImpl::forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  // split_heads_rotary, attention, the heads merged back: one kernel in float32 on a CPU.
  return o_proj->forward(mlh::rt::attention_from_qkv(qkv_proj->forward(x), num_heads_, cos, sin, causal_));
}

BlockImpl::BlockImpl(const ModelConfig& config) : eps_(config.rms_norm_eps) {
  if (config.mlp_t)
    mlp_t = register_module("mlp_t", SwiGLU(total_seq_len(config), config.expansion));
  else
    self_attn = register_module("self_attn", Attention(config.hidden, config.num_heads, config.causal));
  mlp = register_module("mlp", SwiGLU(config.hidden, config.expansion));
}

at::Tensor BlockImpl::forward(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  at::Tensor h;
  if (mlp_t) {
    const at::Tensor t = x.transpose(1, 2);  // [B, hidden, S']
    h = mlh::rt::add_rms_norm(t, mlp_t->forward(t), eps_).transpose(1, 2);
  } else {
    h = mlh::rt::add_rms_norm(x, self_attn->forward(x, cos, sin), eps_);
  }
  return mlh::rt::add_rms_norm(h, mlp->forward(h), eps_);
}

ReasoningModuleImpl::ReasoningModuleImpl(const ModelConfig& config) {
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < config.l_layers; ++i) {
    blocks_.emplace_back(config);
    layers->push_back(blocks_.back());
  }
}

at::Tensor ReasoningModuleImpl::forward(const at::Tensor& h, const at::Tensor& injection, const at::Tensor& cos,
                                        const at::Tensor& sin) {
  at::Tensor out = h + injection;
  for (auto& block : blocks_) out = block->forward(out, cos, sin);
  return out;
}

}  // namespace trm
