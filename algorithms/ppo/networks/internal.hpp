// Shared pieces of the PPO networks (not part of the interface).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <ATen/Tensor.h>
#include <torch/nn/modules/batchnorm.h>

#include "networks/networks.hpp"

namespace ppo::detail {

// Orthogonal weight (rows orthonormal when out <= in, columns otherwise; conv weights as
// [out, in*kh*kw]) times `gain`, bias (when defined) 0.
void orthogonal_init(at::Tensor& weight, at::Tensor& bias, double gain);

// Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) unless `x` is [batch, observation_shape...].
void check_observations(const at::Tensor& x, const NetworkSpec& spec);

// BatchNorm2d's forward; a recomputation (gradient checkpointing) runs with momentum 0 and
// leaves num_batches_tracked alone, so the running statistics change once per step.
at::Tensor batch_norm(torch::nn::BatchNorm2dImpl& bn, const at::Tensor& x, bool training, bool recompute);

std::shared_ptr<ActorCritic> make_mlp(const NetworkSpec& spec);
std::shared_ptr<ActorCritic> make_recursive(const NetworkSpec& spec);
std::shared_ptr<ActorCritic> make_resnet(const NetworkSpec& spec);
std::shared_ptr<ActorCritic> make_python(const NetworkSpec& spec);

}  // namespace ppo::detail
