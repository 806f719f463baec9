// PPO's actor-critic networks, one interface: observations in, action logits and state
// values out.
//   mlp        separate actor and critic MLPs (64-64 tanh by default), vector observations
//   recursive  board planes -> conv stem -> tokens + learned positional embedding -> one
//              shared attention block applied num_recursive_steps times -> mean pool ->
//              policy and value heads
//   resnet     AlphaZero-style residual tower (blocks x channels) with policy and value heads
// All use orthogonal initialisation as the PPO references do: gain sqrt(2) for hidden
// layers, 0.01 for the policy output, 1 for the value output; biases 0.
//
// Details per kind (parameter names in brackets are their keys in named_parameters()):
//   mlp        actor: features -> mlp_hidden... (tanh) -> num_actions   [actor.<i>.weight/bias]
//              critic: features -> mlp_hidden... (tanh) -> 1            [critic.<i>.weight/bias]
//              infer() runs in plain C++ over the weights (no autograd, no dispatcher): the
//              collection path, several times faster than forward() at small batches.
//   recursive  stem: 3x3 conv (padding 1) planes -> hidden_dim, ReLU; H*W tokens plus a learned
//              positional embedding [H*W, hidden_dim]; one PRE-NORM transformer block
//                x = x + Attn(LN1(x)); x = x + MLP(LN2(x))   (MLP hidden_dim -> 4 hidden_dim,
//              GELU, -> hidden_dim; attention num_heads heads, no dropout), applied
//              num_recursive_steps times with the same weights; final LayerNorm; mean over
//              tokens; linear policy and value heads. Gains: sqrt(2) for the stem and the MLP's
//              first layer (followed by a nonlinearity), 1 for the attention projections and the
//              MLP's second layer (linear maps into the residual stream); positional embedding
//              N(0, 0.02); LayerNorms weight 1, bias 0.
//   resnet     stem: 3x3 conv planes -> channels, BN, ReLU; `blocks` residual blocks
//              (conv-BN-ReLU-conv-BN + skip, ReLU); policy head 1x1 conv -> 2, BN, ReLU,
//              flatten, linear -> num_actions; value head 1x1 conv -> 1, BN, ReLU, flatten,
//              linear -> value_hidden, ReLU, linear -> 1. Convolutions have no bias (BN
//              follows). BatchNorm makes the output depend on train()/eval() mode.
//   python     the user's torch.nn.Module (python.cpp, through mlh/runtime/python_module.hpp),
//              built with observation_shape, num_actions and the spec's kwargs; forward(obs)
//              returns (logits or action means [batch, num_actions], values [batch] or
//              [batch, 1]). Its parameters keep their Python names and its own initialisation.
// Continuous actions (spec.continuous_actions, CleanRL's ppo_continuous_action): the policy
// output is the mean of a diagonal Gaussian over num_actions values, with a state-independent
// log standard deviation [actor_logstd, num_actions, starting at 0] beside it.
// Observation normalization (spec.normalize_observations, Gymnasium's NormalizeObservation and
// CleanRL's clip): forward() and infer() take raw observations and feed the network
// clip((x - mean) / sqrt(var + 1e-8), -10, 10), with the running mean and variance of the
// observations seen in training kept as buffers [obs_mean, obs_var, obs_count] beside the
// weights (saved, loaded and exported with them).
// Gradient checkpointing (spec.gradient_checkpointing) applies when grad mode is on: each
// recursion step / each residual block runs under mlh::rt::checkpoint and is recomputed in the
// backward pass. A recomputed BatchNorm runs with momentum 0 (same batch statistics, so the
// same gradients, and the running statistics are updated once per step, as without).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Tensor.h>
#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

namespace ppo {

// What the config, the task and the plan decide has no default here: network_spec (trainer.hpp)
// is the one place a spec gets it, with the config table's defaults (a default here once said a
// 30 x 192 tower where the reduced preset gives 20 x 128), and network_spec_from_json reads a
// trained run's. value_hidden is the residual tower's own, in no config.
struct NetworkSpec {
  std::string kind;                        // "mlp", "recursive", "resnet" or "python"
  std::vector<int64_t> observation_shape;  // {features} for mlp; {planes, size, size} else
  int64_t num_actions;  // discrete: the actions; continuous: the values of one action
  bool continuous_actions;
  bool normalize_observations;
  // mlp
  std::vector<int64_t> mlp_hidden;
  // recursive
  int64_t hidden_dim;
  int64_t num_heads;
  int64_t num_recursive_steps;
  // resnet
  int64_t blocks;
  int64_t channels;
  int64_t value_hidden = 256;  // the value head's hidden layer
  // python: the user's module ("path/to/file.py:Class") and its keyword arguments
  std::string module;
  nlohmann::json kwargs;
  // Recompute activations in backward (recursive: each recursion step; resnet: each block).
  bool gradient_checkpointing;
};

struct PolicyOutput {
  at::Tensor logits;  // [batch, num_actions]: discrete actions' logits, or the Gaussian's mean
  at::Tensor value;   // [batch]
};

class ActorCritic : public torch::nn::Module {
 public:
  // observations: [batch, observation_shape...], float32, raw (normalized here where the
  // spec says so).
  PolicyOutput forward(const at::Tensor& observations);
  // The same on observations already normalized (the rollout's); each kind implements it.
  virtual PolicyOutput forward_normalized(const at::Tensor& observations) = 0;
  // The spec it was built from (saved next to checkpoints, so eval/play rebuild the same net).
  virtual const NetworkSpec& spec() const = 0;

  // Inference for rollout collection: `batch` raw observations (float32, row-major, the spec's
  // observation shape each) -> logits [batch * num_actions] and values [batch]. No autograd
  // graph, no parameter changes (apart from BatchNorm running statistics in train mode: call
  // eval() first for the resnet if that matters). Normalizes, then infer_normalized().
  void infer(const float* observations, int64_t batch, float* logits, float* values);
  // The same on normalized observations. The default is infer_torch(); the mlp overrides it
  // with plain C++ loops (equal to forward() within 1e-5).
  virtual void infer_normalized(const float* observations, int64_t batch, float* logits, float* values);
  // forward_normalized() under at::InferenceMode on the network's device, copying the outputs
  // to the buffers.
  void infer_torch(const float* observations, int64_t batch, float* logits, float* values);

  // Continuous actions: the log standard deviation [num_actions] (a parameter); undefined
  // for discrete ones.
  const at::Tensor& log_std() const { return log_std_; }
  // Observation normalization: writes `batch` raw observations normalized to `out` (a copy
  // where the spec does not normalize); `update` first adds them to the running statistics
  // (training's collection does, evaluation does not).
  void normalize(const float* raw, int64_t batch, float* out, bool update);
  // Whether infer copies observations to a CUDA device through page-locked memory, without
  // blocking (the plan's pinned_memory).
  void set_pinned_transfers(bool pinned) { pinned_transfers_ = pinned; }

  // Number of floats in one observation (the product of observation_shape).
  int64_t observation_size() const;
  int64_t parameter_count() const;

 protected:
  // Registers what the spec adds to every kind (the log std, the normalization buffers);
  // make_network calls it once the kind's own modules are registered.
  friend std::shared_ptr<ActorCritic> make_network(const NetworkSpec& spec);
  void add_spec_extras();

 private:
  bool pinned_transfers_ = false;
  at::Tensor log_std_;
  at::Tensor obs_mean_, obs_var_, obs_count_;  // float64 buffers
  // Plain copies of the buffers for normalize(), refreshed when a load replaces them.
  std::vector<double> mean_, var_;
  double count_ = 0;
  std::vector<std::pair<const void*, int64_t>> stats_keys_;
  std::vector<float> normalized_;  // infer's scratch
  void read_statistics();
  at::Tensor normalize(const at::Tensor& raw) const;
};

// Builds the network `spec` names. Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the
// field for an unknown kind or a shape the kind cannot take.
std::shared_ptr<ActorCritic> make_network(const NetworkSpec& spec);

// The checks make_network runs (throws as it does).
void validate_network_spec(const NetworkSpec& spec);

// The spec as JSON (every field) and back. A key every network.json has held since the first
// run is required; the four added later (continuous_actions, normalize_observations, module,
// kwargs) take, when missing, what the runs written before them meant (false, false, "", {}).
// A missing or wrongly typed key is an mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming it. The
// result is not validated: make_network does that.
nlohmann::json to_json(const NetworkSpec& spec);
NetworkSpec network_spec_from_json(const nlohmann::json& json);

}  // namespace ppo
