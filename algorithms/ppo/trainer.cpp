#include "trainer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/device_transfer.hpp>
#include <mlh/runtime/seed.hpp>

#include "gae.hpp"

namespace ppo {

using nlohmann::json;

UpdateOptions update_options(const Config& cfg) {
  UpdateOptions u;
  u.loss = {cfg.clip_coef, cfg.clip_vloss, cfg.ent_coef, cfg.vf_coef, cfg.norm_adv};
  u.update_epochs = cfg.update_epochs;
  u.num_minibatches = cfg.num_minibatches;
  u.max_grad_norm = cfg.max_grad_norm;
  u.target_kl = cfg.target_kl;
  return u;
}

NetworkSpec network_spec(const Config& cfg, const mlh::rt::RuntimePlan& plan, const std::vector<int64_t>& obs_shape,
                         int num_actions, int action_dim) {
  NetworkSpec s;
  s.kind = cfg.network_kind();
  if (s.kind == "auto") s.kind = obs_shape.size() == 1 ? "mlp" : "recursive";  // a library env's
  s.observation_shape = obs_shape;
  s.continuous_actions = action_dim > 0;
  s.num_actions = s.continuous_actions ? action_dim : num_actions;
  s.normalize_observations = cfg.normalize_observations;
  s.mlp_hidden = cfg.network.mlp_hidden;
  s.hidden_dim = cfg.network.hidden_dim;
  s.num_heads = cfg.network.num_heads;
  s.num_recursive_steps = cfg.network.num_recursive_steps;
  const ResnetTower tower = plan.preset && *plan.preset == "full" ? kFullTower : kReducedTower;
  s.blocks = cfg.network.blocks > 0 ? cfg.network.blocks : tower.blocks;
  s.channels = cfg.network.channels > 0 ? cfg.network.channels : tower.channels;
  s.module = cfg.network.module;
  s.kwargs = cfg.network.kwargs;
  // A Python module's forward is one opaque call: nothing to recompute piecewise.
  s.gradient_checkpointing = s.kind != "mlp" && s.kind != "python" && plan.gradient_checkpointing;
  return s;
}

int sample_action(const float* logits, const uint8_t* mask, int n, std::mt19937_64& rng, float* logprob) {
  bool any = false;
  for (int a = 0; a < n && mask; ++a) any = any || mask[a];
  if (!any) mask = nullptr;
  double mx = -std::numeric_limits<double>::infinity();
  for (int a = 0; a < n; ++a)
    if (!mask || mask[a]) mx = std::max(mx, static_cast<double>(logits[a]));
  double p[64];
  double sum = 0;
  for (int a = 0; a < n; ++a) {
    p[a] = (!mask || mask[a]) ? std::exp(logits[a] - mx) : 0.0;
    sum += p[a];
  }
  const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53 * sum;
  double c = 0;
  int chosen = -1;
  for (int a = 0; a < n; ++a) {
    if (p[a] == 0) continue;
    chosen = a;
    c += p[a];
    if (u < c) break;
  }
  *logprob = static_cast<float>(logits[chosen] - mx - std::log(sum));
  return chosen;
}

int greedy_action(const float* logits, const uint8_t* mask, int n) {
  int best = -1;
  for (int a = 0; a < n; ++a)
    if ((!mask || mask[a]) && (best < 0 || logits[a] > logits[best])) best = a;
  if (best < 0)
    for (int a = 0; a < n; ++a)
      if (best < 0 || logits[a] > logits[best]) best = a;
  return best;
}

float sample_gaussian(const float* mean, const float* log_std, int dim, std::mt19937_64& rng, float* action) {
  // Box-Muller from two 53-bit uniforms: the same numbers on every platform (std's normal
  // distributions are implementation-defined and keep state a checkpoint would not hold).
  constexpr double kTwoPi = 6.283185307179586;
  double logprob = 0;
  for (int d = 0; d < dim; ++d) {
    const double u1 = static_cast<double>(rng() >> 11) * 0x1.0p-53, u2 = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const double z = std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(kTwoPi * u2);
    action[d] = static_cast<float>(mean[d] + std::exp(static_cast<double>(log_std[d])) * z);
    // The log probability of the float action, as the update will compute it.
    const double zf = (static_cast<double>(action[d]) - mean[d]) * std::exp(-static_cast<double>(log_std[d]));
    logprob += -0.5 * zf * zf - log_std[d] - 0.5 * std::log(kTwoPi);
  }
  return static_cast<float>(logprob);
}

RewardScaler::RewardScaler(int num_envs, double gamma) : gamma_(gamma), returns_(num_envs, 0.0) {}

void RewardScaler::scale(float* rewards, const uint8_t* terminated) {
  // The statistics take in this step's discounted returns, one per env.
  const double n = static_cast<double>(returns_.size());
  double bm = 0, bv = 0;
  for (size_t i = 0; i < returns_.size(); ++i) {
    returns_[i] = returns_[i] * gamma_ * (terminated[i] ? 0.0 : 1.0) + rewards[i];
    bm += returns_[i];
  }
  bm /= n;
  for (double r : returns_) bv += (r - bm) * (r - bm);
  stats_.update(bm, bv / n, n);
  // Gymnasium's epsilon 1e-8, and CleanRL's clip of the scaled reward to +-10.
  const double scale = 1.0 / std::sqrt(stats_.var + 1e-8);
  for (size_t i = 0; i < returns_.size(); ++i)
    rewards[i] = static_cast<float>(std::clamp(rewards[i] * scale, -10.0, 10.0));
}

nlohmann::json RewardScaler::state() const {
  return {{"returns", returns_}, {"mean", stats_.mean}, {"var", stats_.var}, {"count", stats_.count}};
}

void RewardScaler::load_state(const nlohmann::json& s) {
  const auto returns = s.at("returns").get<std::vector<double>>();
  if (returns.size() != returns_.size())
    throw std::invalid_argument("the saved reward statistics are for " + std::to_string(returns.size()) + " envs, not " +
                                std::to_string(returns_.size()));
  returns_ = returns;
  stats_.mean = s.at("mean").get<double>();
  stats_.var = s.at("var").get<double>();
  stats_.count = s.at("count").get<double>();
}

Trainer::Trainer(const Config& cfg, const mlh::rt::RuntimePlan& plan, const Task& task, bool fast_update)
    : cfg_(cfg),
      plan_(plan),
      task_(task),
      envs_(task.make_env, static_cast<int>(cfg.num_envs), cfg.seed * 1000003ULL + 17),
      T_(cfg.num_steps),
      N_(cfg.num_envs),
      obs_size_(envs_.observation_size()),
      A_(envs_.num_actions() > 0 ? envs_.num_actions() : envs_.action_bounds().size()),
      continuous_(envs_.num_actions() == 0),
      rng_(cfg.seed ^ 0x9e3779b97f4a7c15ULL) {
  if (A_ > 64) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "more than 64 actions");
  const NetworkSpec spec =
      network_spec(cfg, plan, envs_.observation_shape(), envs_.num_actions(), envs_.action_bounds().size());
  net_ = make_network(spec);
  net_->to(plan.device);
  net_->set_pinned_transfers(plan.pinned_memory);
  // The convolutional networks (recursive's stem, resnet's tower) in NHWC; inputs follow.
  if (plan.channels_last && spec.kind != "mlp") mlh::rt::to_channels_last(*net_);
  // The CartPole MLP stays fp32 whatever the plan: it is tiny and overhead-bound (casts would
  // cost more than they save) and its inference runs in plain float C++.
  autocast_ = spec.kind != "mlp" && plan.precision != mlh::rt::Precision::kFp32;
  use_masks_ = cfg.mask_invalid_moves && task.action_masks && !continuous_;
  if (cfg.normalize_rewards) reward_scaler_.emplace(static_cast<int>(N_), cfg.gamma);
  UpdateOptions u = update_options(cfg);
  u.precision = plan.precision;
  u.autocast = autocast_;
  updater_ = std::make_unique<PpoUpdater>(net_, cfg.lr, u, plan.device, fast_update);
  updater_->use_graph(mlh::rt::plan_step_graph(plan.cuda_graphs, plan.device, nullptr));

  const size_t tn = static_cast<size_t>(T_ * N_);
  obs_.assign(tn * obs_size_, 0.f);
  logprobs_.assign(tn, 0.f);
  values_.assign(tn, 0.f);
  rewards_.assign(tn, 0.f);
  final_values_.assign(tn, 0.f);
  advantages_.assign(tn, 0.f);
  returns_.assign(tn, 0.f);
  actions_.assign(continuous_ ? 0 : tn, 0);
  continuous_actions_.assign(continuous_ ? tn * A_ : 0, 0.f);
  step_continuous_.assign(continuous_ ? N_ * A_ : 0, 0.f);
  ends_.assign(tn, 0);
  truncated_.assign(tn, 0);
  masks_.assign(continuous_ ? 0 : tn * A_, 1);
  next_values_.assign(N_, 0.f);
  logits_.assign(N_ * A_, 0.f);
  step_values_.assign(N_, 0.f);
  step_actions_.assign(N_, 0);
  scratch_obs_.assign(N_ * obs_size_, 0.f);
  scratch_values_.assign(N_, 0.f);
  scratch_logits_.assign(N_ * A_, 0.f);
  envs_.reset();
}

double Trainer::average_return() const {
  if (recent_returns_.empty()) return std::nan("");
  double s = 0;
  for (double r : recent_returns_) s += r;
  return s / static_cast<double>(recent_returns_.size());
}

void Trainer::collect() {
  const bool was_training = net_->is_training();
  net_->eval();  // BatchNorm (resnet) uses running statistics while acting
  const int64_t O = obs_size_;
  iteration_episodes_.clear();
  if (continuous_) {
    const at::Tensor log_std = net_->log_std().detach().to(at::kCPU, at::kFloat).contiguous();
    log_std_.assign(log_std.data_ptr<float>(), log_std.data_ptr<float>() + A_);
  }
  for (int64_t t = 0; t < T_; ++t) {
    const int64_t base = t * N_;
    // The rollout keeps the observations as the network takes them (normalized with the
    // statistics of their time, which this step's observations join first).
    float* o = obs_.data() + base * O;
    net_->normalize(envs_.observations().data(), N_, o, /*update=*/true);
    net_->infer_normalized(o, N_, logits_.data(), values_.data() + base);
    if (continuous_) {
      for (int64_t i = 0; i < N_; ++i)
        logprobs_[base + i] = sample_gaussian(logits_.data() + i * A_, log_std_.data(), A_, rng_,
                                              step_continuous_.data() + i * A_);
      std::copy_n(step_continuous_.data(), N_ * A_, continuous_actions_.data() + base * A_);
      envs_.step_continuous(step_continuous_.data());
    } else {
      uint8_t* m = masks_.data() + base * A_;
      if (use_masks_) std::copy_n(envs_.action_masks().data(), N_ * A_, m);
      for (int64_t i = 0; i < N_; ++i) {
        const int a = sample_action(logits_.data() + i * A_, use_masks_ ? m + i * A_ : nullptr, A_, rng_,
                                    logprobs_.data() + base + i);
        step_actions_[i] = a;
        actions_[base + i] = a;
      }
      envs_.step(step_actions_.data());
    }
    const float* r = envs_.rewards().data();
    const uint8_t* term = envs_.terminated().data();
    const uint8_t* trunc = envs_.truncated().data();
    std::copy_n(r, N_, rewards_.data() + base);
    if (reward_scaler_) reward_scaler_->scale(rewards_.data() + base, term);
    int64_t k = 0;
    for (int64_t i = 0; i < N_; ++i) {
      ends_[base + i] = term[i] || trunc[i];
      truncated_[base + i] = trunc[i];
      final_values_[base + i] = 0.f;
      if (trunc[i]) std::copy_n(envs_.final_observation(static_cast<int>(i)), O, scratch_obs_.data() + (k++) * O);
    }
    if (k > 0) {  // V(final observation) of the truncated episodes, for their bootstrap
      net_->infer(scratch_obs_.data(), k, scratch_logits_.data(), scratch_values_.data());
      int64_t j = 0;
      for (int64_t i = 0; i < N_; ++i)
        if (trunc[i]) final_values_[base + i] = scratch_values_[j++];
    }
    global_step_ += N_;
    auto& finished = envs_.finished_episodes();
    for (const EpisodeRecord& e : finished) {
      recent_returns_.push_back(e.episode_return);
      recent_solved_.push_back(e.solved);
      if (recent_returns_.size() > 100) recent_returns_.pop_front();
      if (recent_solved_.size() > 100) recent_solved_.pop_front();
      iteration_episodes_.push_back(e);
    }
    episodes_finished_ += static_cast<int64_t>(finished.size());
    finished.clear();
  }
  net_->infer(envs_.observations().data(), N_, logits_.data(), next_values_.data());
  bootstrap_truncated(rewards_.data(), truncated_.data(), final_values_.data(), T_, N_, cfg_.gamma);
  compute_gae(rewards_.data(), values_.data(), ends_.data(), next_values_.data(), T_, N_, cfg_.gamma,
              cfg_.gae_lambda, advantages_.data(), returns_.data());
  explained_variance_ = explained_variance(values_.data(), returns_.data(), T_ * N_);
  net_->train(was_training);
}

UpdateStats Trainer::update() {
  ++iteration_;
  if (cfg_.anneal_lr) updater_->set_lr(annealed_lr(cfg_.lr, iteration_, cfg_.num_iterations()));
  const int64_t B = T_ * N_;
  std::vector<int64_t> shape{B};
  for (int64_t d : envs_.observation_shape()) shape.push_back(d);
  // The rollout's buffers to the device (no copy on the CPU; pinned and without blocking on
  // CUDA when the plan pins batches).
  auto to_dev = [&](void* data, at::IntArrayRef sizes, at::ScalarType type) {
    return mlh::rt::to_device(at::from_blob(data, sizes, type), plan_.device, plan_.pinned_memory);
  };
  Batch b;
  b.obs = to_dev(obs_.data(), shape, at::kFloat);
  b.actions = continuous_ ? to_dev(continuous_actions_.data(), {B, A_}, at::kFloat)
                          : to_dev(actions_.data(), {B}, at::kLong);
  b.logprobs = to_dev(logprobs_.data(), {B}, at::kFloat);
  b.advantages = to_dev(advantages_.data(), {B}, at::kFloat);
  b.returns = to_dev(returns_.data(), {B}, at::kFloat);
  b.values = to_dev(values_.data(), {B}, at::kFloat);
  if (use_masks_) b.masks = to_dev(masks_.data(), {B, A_}, at::kByte).to(at::kBool);
  net_->train();
  return updater_->update(b, rng_);
}

IterationStats Trainer::iterate() {
  collect();
  IterationStats s;
  s.update = update();
  s.explained_variance = explained_variance_;
  s.episodes = iteration_episodes_;
  return s;
}

mlh::rt::TrainingState Trainer::state() {
  mlh::rt::TrainingState s;
  s.add("model", *net_).add("optimizer", updater_->optimizer());
  s.tensors = mlh::rt::capture_rng_state().to_tensors();
  std::ostringstream rng;
  rng << rng_;
  s.values = {{"iteration", iteration_},
              {"global_step", global_step_},
              {"episodes", episodes_finished_},
              {"sampler_rng", rng.str()},
              {"envs", envs_.state()},
              {"recent_returns", std::vector<double>(recent_returns_.begin(), recent_returns_.end())},
              {"recent_solved", std::vector<int>(recent_solved_.begin(), recent_solved_.end())},
              {"network", to_json(net_->spec())},
              {"scaler", updater_->scaler().state()}};
  if (task_.save_state) s.values["task"] = task_.save_state();
  if (reward_scaler_) s.values["reward_scaler"] = reward_scaler_->state();
  return s;
}

void Trainer::restore(mlh::rt::TrainingState& loaded, bool own_streams) {
  updater_->parameters().rebind();
  const json& v = loaded.values;
  iteration_ = v.at("iteration").get<int64_t>();
  global_step_ = v.at("global_step").get<int64_t>();
  episodes_finished_ = v.at("episodes").get<int64_t>();
  if (own_streams) {
    std::istringstream rng(v.at("sampler_rng").get<std::string>());
    rng >> rng_;
    try {
      envs_.load_state(v.at("envs"));
      // After the environments: one restored without a snapshot draws a fresh puzzle.
      if (task_.load_state && v.contains("task")) task_.load_state(v.at("task"));
      // A run that starts normalizing rewards on --resume starts their statistics afresh.
      if (reward_scaler_ && v.contains("reward_scaler")) reward_scaler_->load_state(v.at("reward_scaler"));
    } catch (const std::invalid_argument& e) {
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, std::string("checkpoint: ") + e.what());
    }
  }
  const auto rr = v.at("recent_returns").get<std::vector<double>>();
  recent_returns_.assign(rr.begin(), rr.end());
  const auto rs = v.at("recent_solved").get<std::vector<int>>();
  recent_solved_.assign(rs.begin(), rs.end());
  updater_->scaler().load_state(v.at("scaler"));
  if (own_streams) mlh::rt::restore_rng_state(mlh::rt::RngState::from_tensors(loaded.tensors));
}

}  // namespace ppo
