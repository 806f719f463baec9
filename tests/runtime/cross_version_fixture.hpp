// The training state behind tests/runtime/fixtures/*: a checkpoint and a safetensors file
// written by each LibTorch build (Debian's 1.13 and PyPI's 2.x), which every build must load,
// so that a model trained with one evaluates with the other. write_cross_version_fixtures.cpp
// writes them; cross_version_test.cpp rebuilds the same state and compares.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <nlohmann/json.hpp>

#include <mlh/runtime/checkpoint.hpp>

namespace mlh::test {

struct CompatNetImpl : torch::nn::Module {
  CompatNetImpl() {
    fc = register_module("fc", torch::nn::Linear(3, 2));
    head = register_module("head", torch::nn::Linear(2, 1));
    count = register_buffer("count", at::zeros({1}, at::kLong));
    scale = register_buffer("scale", at::zeros({2}, at::kBFloat16));
  }
  torch::nn::Linear fc{nullptr}, head{nullptr};
  at::Tensor count, scale;
};
TORCH_MODULE(CompatNet);

// Exact values in every build: parameters and buffers set by hand, no random initialisation.
inline void set_fixture_weights(CompatNet& net) {
  at::NoGradGuard no_grad;
  net->fc->weight.copy_(at::arange(6, at::kFloat).view({2, 3}) * 0.125 - 0.25);
  net->fc->bias.copy_(at::tensor({0.5f, -0.75f}));
  net->head->weight.copy_(at::tensor({0.375f, -0.625f}).view({1, 2}));
  net->head->bias.fill_(0.0625);
  net->count.fill_(42);
  net->scale.copy_(at::tensor({1.5f, -2.0f}).to(at::kBFloat16));
}

// Two LibTorch optimizers, each over two parameters (1.13 and 2.x key several parameters'
// states differently): Adam (protonet, ppo) and AdamW (trm).
struct FixtureOptimizers {
  torch::optim::Adam adam;
  torch::optim::AdamW adamw;
  explicit FixtureOptimizers(CompatNet& net)
      : adam(net->fc->parameters(), torch::optim::AdamOptions(0.01)),
        adamw(net->head->parameters(), torch::optim::AdamWOptions(0.02).weight_decay(0.1)) {}

  // Gradients that do not depend on LibTorch's kernels, so the optimizer states they leave
  // are the same wherever the recipe runs (up to the optimizers' float rounding).
  void steps(CompatNet& net, int count) {
    for (int i = 0; i < count; ++i) {
      adam.zero_grad();
      adamw.zero_grad();
      net->fc->weight.mutable_grad() = at::full({2, 3}, 0.5f + static_cast<float>(i));
      net->fc->bias.mutable_grad() = at::tensor({-1.0f, 2.0f});
      net->head->weight.mutable_grad() = at::tensor({0.25f, -3.0f}).view({1, 2}) * static_cast<float>(i + 1);
      net->head->bias.mutable_grad() = at::full({1}, 1.5f);
      adam.step();
      adamw.step();
    }
  }
};

// The extra tensors and values a checkpoint carries besides modules and optimizers.
inline std::map<std::string, at::Tensor> fixture_tensors() {
  return {{"ints", at::arange(5, at::kLong)}, {"halves", at::tensor({0.25f, 4.0f}).to(at::kHalf)}};
}
inline nlohmann::json fixture_values() { return {{"step", 7}, {"name", "cross-version fixture"}}; }

constexpr int kFixtureSteps = 2;
constexpr int64_t kFixtureStep = 7;

}  // namespace mlh::test
