// PPO's actor-critic networks, one interface: observations in, action logits and state
// values out.
//   mlp        separate actor and critic MLPs (64-64 tanh by default), vector observations
//   recursive  board planes -> conv stem -> tokens + learned positional embedding -> one
//              shared attention block applied num_recursive_steps times -> mean pool ->
//              policy and value heads
//   resnet     AlphaZero-style residual tower (blocks x channels) with policy and value heads
// All use orthogonal initialisation as the PPO references do: gain sqrt(2) for hidden
// layers, 0.01 for the policy output, 1 for the value output; biases 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ATen/Tensor.h>
#include <torch/nn/module.h>

namespace ppo {

struct NetworkSpec {
  std::string kind = "mlp";                 // "mlp", "recursive" or "resnet"
  std::vector<int64_t> observation_shape;   // {features} for mlp; {planes, size, size} else
  int64_t num_actions = 2;
  // mlp
  std::vector<int64_t> mlp_hidden{64, 64};
  // recursive
  int64_t hidden_dim = 256;
  int64_t num_heads = 4;
  int64_t num_recursive_steps = 3;
  // resnet
  int64_t blocks = 30;
  int64_t channels = 192;
  // Recompute activations in backward (recursive: each recursion step; resnet: each block).
  bool gradient_checkpointing = false;
};

struct PolicyOutput {
  at::Tensor logits;  // [batch, num_actions]
  at::Tensor value;   // [batch]
};

class ActorCritic : public torch::nn::Module {
 public:
  // observations: [batch, observation_shape...], float32.
  virtual PolicyOutput forward(const at::Tensor& observations) = 0;
  // The spec it was built from (saved next to checkpoints, so eval/play rebuild the same net).
  virtual const NetworkSpec& spec() const = 0;
};

// Builds the network `spec` names. Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the
// field for an unknown kind or a shape the kind cannot take.
std::shared_ptr<ActorCritic> make_network(const NetworkSpec& spec);

}  // namespace ppo
