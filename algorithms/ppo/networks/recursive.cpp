// The recursive actor-critic: conv stem -> tokens + positional embedding -> one pre-norm
// transformer block applied num_recursive_steps times (shared weights) -> mean pool -> heads.
#include <cmath>
#include <vector>

#include <ATen/ATen.h>
#include <mlh/runtime/grad_checkpoint.hpp>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "networks/internal.hpp"
#include "networks/networks.hpp"

namespace ppo::detail {
namespace {

class RecursiveActorCritic : public ActorCritic {
 public:
  explicit RecursiveActorCritic(const NetworkSpec& spec) : spec_(spec) {
    namespace nn = torch::nn;
    const int64_t c = spec.observation_shape[0], tokens = spec.observation_shape[1] * spec.observation_shape[2];
    const int64_t d = spec.hidden_dim;
    const double relu_gain = std::sqrt(2.0);
    stem_ = register_module("stem", nn::Conv2d(nn::Conv2dOptions(c, d, 3).padding(1)));
    orthogonal_init(stem_->weight, stem_->bias, relu_gain);
    {
      at::NoGradGuard no_grad;
      position_ = register_parameter("position", at::randn({tokens, d}) * 0.02);
    }
    norm1_ = register_module("norm1", nn::LayerNorm(nn::LayerNormOptions({d})));
    norm2_ = register_module("norm2", nn::LayerNorm(nn::LayerNormOptions({d})));
    qkv_ = register_module("qkv", nn::Linear(d, 3 * d));
    out_ = register_module("attn_out", nn::Linear(d, d));
    fc1_ = register_module("mlp_in", nn::Linear(d, 4 * d));
    fc2_ = register_module("mlp_out", nn::Linear(4 * d, d));
    norm_final_ = register_module("norm_final", nn::LayerNorm(nn::LayerNormOptions({d})));
    policy_ = register_module("policy", nn::Linear(d, spec.num_actions));
    value_ = register_module("value", nn::Linear(d, 1));
    orthogonal_init(qkv_->weight, qkv_->bias, 1.0);
    orthogonal_init(out_->weight, out_->bias, 1.0);
    orthogonal_init(fc1_->weight, fc1_->bias, relu_gain);
    orthogonal_init(fc2_->weight, fc2_->bias, 1.0);
    orthogonal_init(policy_->weight, policy_->bias, 0.01);
    orthogonal_init(value_->weight, value_->bias, 1.0);
  }

  PolicyOutput forward_normalized(const at::Tensor& observations) override {
    check_observations(observations, spec_);
    at::Tensor x = at::relu(stem_->forward(observations));  // [B, D, H, W]
    x = x.flatten(2).transpose(1, 2) + position_;            // [B, T, D]
    for (int64_t step = 0; step < spec_.num_recursive_steps; ++step)
      x = mlh::rt::maybe_checkpoint(
          spec_.gradient_checkpointing, [this](const at::Tensor& in) { return block(in); }, x);
    x = norm_final_->forward(x).mean(1);  // [B, D]
    return {policy_->forward(x), value_->forward(x).squeeze(1)};
  }

  const NetworkSpec& spec() const override { return spec_; }

 private:
  // x + Attn(LN1(x)), then + MLP(LN2(x)).
  at::Tensor block(const at::Tensor& x) {
    const int64_t b = x.size(0), t = x.size(1), d = x.size(2), heads = spec_.num_heads, dh = d / heads;
    at::Tensor qkv = qkv_->forward(norm1_->forward(x)).view({b, t, 3, heads, dh}).permute({2, 0, 3, 1, 4});
    at::Tensor q = qkv[0], k = qkv[1], v = qkv[2];  // [B, heads, T, dh]
    at::Tensor attention = at::softmax(at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(dh))), -1);
    at::Tensor mixed = at::matmul(attention, v).transpose(1, 2).reshape({b, t, d});
    at::Tensor h = x + out_->forward(mixed);
    return h + fc2_->forward(at::gelu(fc1_->forward(norm2_->forward(h))));
  }

  NetworkSpec spec_;
  torch::nn::Conv2d stem_{nullptr};
  at::Tensor position_;
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr}, norm_final_{nullptr};
  torch::nn::Linear qkv_{nullptr}, out_{nullptr}, fc1_{nullptr}, fc2_{nullptr}, policy_{nullptr}, value_{nullptr};
};

}  // namespace

std::shared_ptr<ActorCritic> make_recursive(const NetworkSpec& spec) {
  return std::make_shared<RecursiveActorCritic>(spec);
}

}  // namespace ppo::detail
