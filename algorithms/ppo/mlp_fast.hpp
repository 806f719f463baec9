// The PPO minibatch step for the mlp actor-critic in plain C++: forward, the PPO loss and its
// derivative (both from the one declaration in ppo_loss.hpp, which the autograd path uses
// too), the backward pass through the mlp, gradient-norm clipping and Adam, all over the flat
// parameter buffer without one LibTorch op. CartPole's network is so small that LibTorch's
// per-op overhead dominates its update; ppo's benchmark command times both paths on the same
// rollout and prints what this one gains (cartpole_update_fast vs cartpole_update_autograd).
// Adam's state lives in the torch::optim::Adam (exp_avg, exp_avg_sq, step), so checkpoints
// are the same either way.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/optim/adam.h>

#include "flat_parameters.hpp"
#include "networks/networks.hpp"
#include "ppo_loss.hpp"

namespace ppo {

struct FastLoss {
  double loss = 0, pg_loss = 0, v_loss = 0, entropy = 0, approx_kl = 0, old_approx_kl = 0, clipfrac = 0;
};

class FastMlpStep {
 public:
  // Null when `net` is not an mlp this path understands (parameters named
  // actor.<i>.weight/bias and critic.<i>.weight/bias, float32 on the CPU).
  static std::unique_ptr<FastMlpStep> create(ActorCritic& net, FlatParameters& flat);

  // Loss and gradient (written to the flat gradient buffer, replacing it) of B samples.
  FastLoss loss_and_grad(const float* obs, const int64_t* actions, const float* old_logprobs, const float* advantages,
                         const float* returns, const float* old_values, int64_t B, const LossOptions& o);
  // Clips the flat gradient to max_norm (returns the norm before) and steps Adam as
  // torch::optim::Adam (no weight decay, no amsgrad) with its options and state.
  double clip_and_adam(double max_norm, torch::optim::Adam& optimizer);

 private:
  struct Layer {
    float* w;   // [out, in] row-major, in the flat buffer
    float* b;   // [out]
    float* gw;  // gradients, in the flat gradient buffer
    float* gb;
    int64_t in, out;
    std::vector<float> wt;  // [in, out] transposed copy for the forward pass
  };
  FastMlpStep(FlatParameters& flat) : flat_(flat) {}
  // Forward of one trunk over B rows; acts[l] = activations after layer l ([B, out]).
  void forward(std::vector<Layer>& trunk, const float* x, int64_t B, std::vector<std::vector<float>>& acts);
  void backward(std::vector<Layer>& trunk, const float* x, int64_t B, std::vector<std::vector<float>>& acts,
                std::vector<float>& grad_out);

  FlatParameters& flat_;
  std::vector<Layer> actor_, critic_;
  int64_t obs_size_ = 0, num_actions_ = 0;
  std::vector<std::vector<float>> actor_acts_, critic_acts_;
  std::vector<float> dlogits_, dvalue_, scratch_a_, scratch_b_;
};

}  // namespace ppo
