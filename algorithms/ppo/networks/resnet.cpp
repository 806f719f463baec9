// The resnet actor-critic: AlphaZero's residual tower with policy and value heads.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <mlh/runtime/grad_checkpoint.hpp>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "networks/internal.hpp"
#include "networks/networks.hpp"

namespace ppo::detail {
namespace {

namespace nn = torch::nn;

// A convolution without bias (batch norm follows), orthogonal gain sqrt(2) (ReLU follows).
nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel) {
  auto c = nn::Conv2d(nn::Conv2dOptions(in, out, kernel).padding(kernel / 2).bias(false));
  at::Tensor no_bias;
  orthogonal_init(c->weight, no_bias, std::sqrt(2.0));
  return c;
}

// conv-BN-ReLU-conv-BN + skip, ReLU; registered as "conv1", "bn1", "conv2", "bn2".
class ResidualBlock : public nn::Module {
 public:
  explicit ResidualBlock(int64_t channels)
      : conv1(register_module("conv1", conv(channels, channels, 3))),
        bn1(register_module("bn1", nn::BatchNorm2d(channels))),
        conv2(register_module("conv2", conv(channels, channels, 3))),
        bn2(register_module("bn2", nn::BatchNorm2d(channels))) {}

  // `recompute`: this call is gradient checkpointing's recomputation (see batch_norm).
  at::Tensor forward(const at::Tensor& x, bool recompute) {
    const bool training = is_training();
    at::Tensor h = at::relu(batch_norm(*bn1, conv1->forward(x), training, recompute));
    h = batch_norm(*bn2, conv2->forward(h), training, recompute);
    return at::relu(h + x);
  }

  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
};

class ResnetActorCritic : public ActorCritic {
 public:
  explicit ResnetActorCritic(const NetworkSpec& spec) : spec_(spec) {
    const int64_t planes = spec.observation_shape[0];
    const int64_t cells = spec.observation_shape[1] * spec.observation_shape[2];
    const int64_t ch = spec.channels;
    stem_ = register_module("stem", conv(planes, ch, 3));
    stem_bn_ = register_module("stem_bn", nn::BatchNorm2d(ch));
    for (int64_t i = 0; i < spec.blocks; ++i)
      blocks_.push_back(register_module("block" + std::to_string(i), std::make_shared<ResidualBlock>(ch)));
    policy_conv_ = register_module("policy_conv", conv(ch, 2, 1));
    policy_bn_ = register_module("policy_bn", nn::BatchNorm2d(2));
    policy_ = register_module("policy", nn::Linear(2 * cells, spec.num_actions));
    value_conv_ = register_module("value_conv", conv(ch, 1, 1));
    value_bn_ = register_module("value_bn", nn::BatchNorm2d(1));
    value_hidden_ = register_module("value_hidden", nn::Linear(cells, spec.value_hidden));
    value_ = register_module("value", nn::Linear(spec.value_hidden, 1));
    orthogonal_init(policy_->weight, policy_->bias, 0.01);
    orthogonal_init(value_hidden_->weight, value_hidden_->bias, std::sqrt(2.0));
    orthogonal_init(value_->weight, value_->bias, 1.0);
  }

  PolicyOutput forward_normalized(const at::Tensor& observations) override {
    check_observations(observations, spec_);
    const bool training = is_training();
    at::Tensor x = at::relu(batch_norm(*stem_bn_, stem_->forward(observations), training, false));
    for (auto& block : blocks_) {
      // The first call is the forward, later ones recomputations; the counter is shared by
      // every copy the checkpoint makes of the function.
      auto calls = std::make_shared<int>(0);
      ResidualBlock* b = block.get();
      x = mlh::rt::maybe_checkpoint(
          spec_.gradient_checkpointing,
          [b, calls](const at::Tensor& in) { return b->forward(in, (*calls)++ > 0); }, x);
    }
    at::Tensor p = at::relu(batch_norm(*policy_bn_, policy_conv_->forward(x), training, false)).flatten(1);
    at::Tensor v = at::relu(batch_norm(*value_bn_, value_conv_->forward(x), training, false)).flatten(1);
    v = value_->forward(at::relu(value_hidden_->forward(v)));
    return {policy_->forward(p), v.squeeze(1)};
  }

  const NetworkSpec& spec() const override { return spec_; }

 private:
  NetworkSpec spec_;
  nn::Conv2d stem_{nullptr}, policy_conv_{nullptr}, value_conv_{nullptr};
  nn::BatchNorm2d stem_bn_{nullptr}, policy_bn_{nullptr}, value_bn_{nullptr};
  std::vector<std::shared_ptr<ResidualBlock>> blocks_;
  nn::Linear policy_{nullptr}, value_hidden_{nullptr}, value_{nullptr};
};

}  // namespace

std::shared_ptr<ActorCritic> make_resnet(const NetworkSpec& spec) { return std::make_shared<ResnetActorCritic>(spec); }

}  // namespace ppo::detail
