// The PPO update (CleanRL's ppo.py semantics): several epochs over the rollout in shuffled
// minibatches; clipped surrogate objective, clipped value loss, entropy bonus, per-minibatch
// advantage normalisation; Adam (eps 1e-5) with gradient-norm clipping and linear LR
// annealing; optional early stop of the epochs when approx_kl exceeds target_kl.
//
// Speed: the network's parameters are moved into one flat buffer (the modules keep their
// parameters, now views into it) with one flat gradient buffer, and Adam steps that single
// tensor: a step is a handful of vectorised ops whatever the number of layers, and the
// gradient norm is one reduction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <optional>
#include <random>

#include <ATen/Tensor.h>
#include <mlh/runtime/grad_scaler.hpp>
#include <mlh/runtime/graph_safe_adam.hpp>
#include <mlh/runtime/precision.hpp>
#include <mlh/runtime/step_graph.hpp>
#include <torch/optim/adam.h>

#include "flat_parameters.hpp"
#include "networks/networks.hpp"
#include "ppo_loss.hpp"

namespace ppo {

// Logits with invalid actions (mask 0) set to -1e8: probability 0, entropy term 0.
at::Tensor mask_logits(const at::Tensor& logits, const at::Tensor& masks);

struct LossTerms {
  at::Tensor loss, pg_loss, v_loss, entropy;  // loss has the graph; the others are detached
  at::Tensor approx_kl, old_approx_kl, clipfrac;
};

// One minibatch's loss. logits [B, A] (already masked), new_values [B], actions int64 [B],
// the rest [B] float from the rollout.
LossTerms ppo_loss(const at::Tensor& logits, const at::Tensor& new_values, const at::Tensor& actions,
                   const at::Tensor& old_logprobs, const at::Tensor& advantages, const at::Tensor& returns,
                   const at::Tensor& old_values, const LossOptions& options);
// The same from the actions' new log probabilities [B] and the policy's entropy [B], whatever
// the distribution (ppo_loss above: categorical; continuous actions: gaussian_log_prob).
LossTerms ppo_loss_of(const at::Tensor& new_logprob, const at::Tensor& entropy, const at::Tensor& new_values,
                      const at::Tensor& old_logprobs, const at::Tensor& advantages, const at::Tensor& returns,
                      const at::Tensor& old_values, const LossOptions& options);

// A diagonal Gaussian's log probability of `actions` [B, D] (summed over D), from its mean
// [B, D] and log standard deviation [D]; and its entropy [B] (CleanRL's Normal(...).sum(1)).
at::Tensor gaussian_log_prob(const at::Tensor& mean, const at::Tensor& log_std, const at::Tensor& actions);
at::Tensor gaussian_entropy(const at::Tensor& log_std, int64_t batch);

// CleanRL: frac = 1 - (iteration - 1) / num_iterations; lr * frac. iteration is 1-based.
double annealed_lr(double lr, int64_t iteration, int64_t num_iterations);

// 1 - Var(y - pred) / Var(y) (NaN when Var(y) is 0).
double explained_variance(const float* pred, const float* y, int64_t n);

// The rollout as the update reads it, all [batch, ...] on the training device: observations
// as the network takes them (normalized where it normalizes), actions int64 [B] (discrete) or
// float [B, D] (continuous), masks bool [B, A] or undefined.
struct Batch {
  at::Tensor obs, actions, logprobs, advantages, returns, values, masks;
};

// The update's settings: like the loss's, from the run's config (update_options in trainer.hpp).
struct UpdateOptions {
  LossOptions loss;
  int64_t update_epochs{}, num_minibatches{};
  double max_grad_norm{};
  std::optional<double> target_kl;
  mlh::rt::Precision precision = mlh::rt::Precision::kFp32;
  bool autocast = false;  // run the forward pass under the plan's precision
};

struct UpdateStats {
  double pg_loss = 0, v_loss = 0, entropy = 0, approx_kl = 0, old_approx_kl = 0, clipfrac = 0;
  double grad_norm = 0;
  int64_t minibatches = 0;
  bool early_stop = false;
};

class FastMlpStep;
}  // namespace ppo
namespace mlh::rt {
class Distributed;
}
namespace ppo {

class PpoUpdater {
 public:
  // use_fast: take the plain-C++ minibatch step (mlp_fast.hpp) where the network allows it.
  PpoUpdater(std::shared_ptr<ActorCritic> net, double lr, const UpdateOptions& options, at::Device device,
             bool use_fast = true);
  ~PpoUpdater();
  bool fast() const { return fast_ != nullptr; }
  void set_lr(double lr);
  double lr();
  // Distributed: the flat gradient is averaged over the ranks before every step, and the
  // early stop on target_kl uses the ranks' mean KL so that all stop at the same epoch
  // (several ranks run the minibatches eagerly).
  void share_with(mlh::rt::Distributed& dist) { dist_ = &dist; }
  // Runs the epochs over `batch`; `rng` shuffles.
  UpdateStats update(const Batch& batch, std::mt19937_64& rng);

  // Each minibatch's step (forward, loss, backward, clipping, Adam) as a replayed graph from
  // the graph's capture on (the plan's: plan_step_graph; tests: a CPU recorder's). fp16's
  // loss scaling, several ranks and the CPU MLP's plain-C++ update keep the eager step.
  void use_graph(mlh::rt::StepGraph graph);
  const mlh::rt::StepGraph& graph() const { return graph_; }
  void graph_log(std::function<void(const std::string&)> log) { graph_.set_log(std::move(log)); }

  torch::optim::Adam& optimizer() { return *optimizer_; }
  mlh::rt::GradScaler& scaler() { return scaler_; }
  FlatParameters& parameters() { return *flat_; }

 private:
  std::shared_ptr<ActorCritic> net_;
  UpdateOptions options_;
  at::Device device_;
  std::unique_ptr<FlatParameters> flat_;
  std::unique_ptr<torch::optim::Adam> optimizer_;
  mlh::rt::GradScaler scaler_;
  std::unique_ptr<FastMlpStep> fast_;
  mlh::rt::Distributed* dist_ = nullptr;
  std::vector<int64_t> perm_;
  std::vector<float> mb_obs_, mb_logprobs_, mb_adv_, mb_returns_, mb_values_;
  std::vector<int64_t> mb_actions_;
  // The graph's minibatch (copied in before each replay), its statistics, its Adam.
  mlh::rt::StepGraph graph_{nullptr, nullptr};
  Batch graph_batch_;
  at::Tensor graph_stats_;
  std::optional<mlh::rt::GraphSafeAdam> graph_adam_;
  UpdateStats update_fast(const Batch& batch, std::mt19937_64& rng);
  // One minibatch's step; its statistics [approx_kl, old_approx_kl, pg_loss, v_loss, entropy,
  // clipfrac, grad_norm] as one tensor on the device. in_graph: Adam with its state on the
  // device, no loss scaling or all-reduce (the graph's body).
  at::Tensor minibatch_step(const Batch& mb, bool in_graph);
  // The step of `mb` as a replay where the graph is on, else eagerly.
  at::Tensor graphed_minibatch(const Batch& mb);
};

}  // namespace ppo
