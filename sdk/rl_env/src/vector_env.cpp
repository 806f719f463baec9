#include "mlh/rl/vector_env.hpp"

#include <algorithm>
#include <sstream>
#include <stdexcept>
#include <string>

namespace mlh::rl {

VectorEnv::VectorEnv(const EnvFactory& make, int num_envs, uint64_t seed) {
  if (num_envs < 1) throw std::invalid_argument("VectorEnv: num_envs must be >= 1");
  envs_.reserve(num_envs);
  rngs_.reserve(num_envs);
  for (int i = 0; i < num_envs; ++i) {
    envs_.push_back(make());
    if (!envs_.back()) throw std::invalid_argument("VectorEnv: the factory returned no env");
    rngs_.emplace_back(seed + static_cast<uint64_t>(i));
  }
  const int64_t obs = envs_[0]->observation_size();
  const int actions = envs_[0]->num_actions();
  obs_size_ = obs;
  num_actions_ = actions;
  bounds_ = envs_[0]->action_bounds();
  for (const auto& e : envs_) {
    const mlh::ActionBounds b = e->action_bounds();
    if (e->observation_size() != obs || e->num_actions() != actions || b.low != bounds_.low || b.high != bounds_.high)
      throw std::invalid_argument("VectorEnv: envs disagree on observation size or actions");
  }
  if ((actions > 0) == (bounds_.size() > 0))
    throw std::invalid_argument("VectorEnv: an env must have either discrete actions or continuous ones");
  clipped_action_.assign(static_cast<size_t>(num_envs) * bounds_.size(), 0.0f);
  for (const auto& e : envs_) remote_.push_back(dynamic_cast<RemoteEnv*>(e.get()));
  if (std::find(remote_.begin(), remote_.end(), nullptr) != remote_.end()) remote_.clear();
  observations_.assign(static_cast<size_t>(num_envs * obs), 0.0f);
  final_observations_.assign(static_cast<size_t>(num_envs * obs), 0.0f);
  rewards_.assign(num_envs, 0.0f);
  terminated_.assign(num_envs, 0);
  truncated_.assign(num_envs, 0);
  masks_.assign(static_cast<size_t>(num_envs) * actions, 1);
  running_return_.assign(num_envs, 0.0);
  running_length_.assign(num_envs, 0);
  finished_.reserve(static_cast<size_t>(num_envs) * 4);
}

int VectorEnv::num_envs() const { return static_cast<int>(envs_.size()); }
const Environment& VectorEnv::env(int i) const { return *envs_.at(i); }
Environment& VectorEnv::env(int i) { return *envs_.at(i); }
std::vector<int64_t> VectorEnv::observation_shape() const { return envs_[0]->observation_shape(); }
int64_t VectorEnv::observation_size() const { return obs_size_; }
int VectorEnv::num_actions() const { return num_actions_; }
const mlh::ActionBounds& VectorEnv::action_bounds() const { return bounds_; }

void VectorEnv::reset() {
  const int64_t obs = observation_size();
  const int actions = num_actions();
  for (int i = 0; i < num_envs(); ++i) {
    envs_[i]->reset(rngs_[i], observations_.data() + i * obs);
    envs_[i]->action_mask(masks_.data() + static_cast<size_t>(i) * actions);
    running_return_[i] = 0.0;
    running_length_[i] = 0;
  }
  std::fill(rewards_.begin(), rewards_.end(), 0.0f);
  std::fill(terminated_.begin(), terminated_.end(), uint8_t{0});
  std::fill(truncated_.begin(), truncated_.end(), uint8_t{0});
}

void VectorEnv::step(const int* actions) {
  if (!remote_.empty()) {
    for (int i = 0; i < num_envs(); ++i) remote_[i]->begin_step(actions[i]);
    return end_remote_steps();
  }
  for (int i = 0; i < num_envs(); ++i) {
    float* o = observations_.data() + i * obs_size_;
    after_step(i, envs_[i]->step(actions[i], o), o);
  }
}

void VectorEnv::step_continuous(const float* actions) {
  const int dim = bounds_.size();
  // Gymnasium's ClipAction: the policy's sample may fall outside the bounds.
  for (int i = 0; i < num_envs(); ++i)
    for (int d = 0; d < dim; ++d)
      clipped_action_[i * dim + d] = std::clamp(actions[i * dim + d], bounds_.low[d], bounds_.high[d]);
  if (!remote_.empty()) {
    for (int i = 0; i < num_envs(); ++i) remote_[i]->begin_step_continuous(clipped_action_.data() + i * dim);
    return end_remote_steps();
  }
  for (int i = 0; i < num_envs(); ++i) {
    float* o = observations_.data() + i * obs_size_;
    after_step(i, envs_[i]->step_continuous(clipped_action_.data() + i * dim, o), o);
  }
}

void VectorEnv::end_remote_steps() {
  for (int i = 0; i < num_envs(); ++i) {
    float* o = observations_.data() + i * obs_size_;
    after_step(i, remote_[i]->end_step(o), o);
  }
}

void VectorEnv::after_step(int i, const StepResult& r, float* o) {
  rewards_[i] = r.reward;
  terminated_[i] = r.terminated ? 1 : 0;
  truncated_[i] = r.truncated ? 1 : 0;
  running_return_[i] += r.reward;
  ++running_length_[i];
  if (r.terminated || r.truncated) {
    std::copy(o, o + obs_size_, final_observations_.data() + i * obs_size_);
    EpisodeRecord rec;
    rec.env_index = i;
    rec.episode_return = running_return_[i];
    rec.length = running_length_[i];
    rec.solved = r.solved;
    rec.truncated = r.truncated;
    finished_.push_back(rec);
    running_return_[i] = 0.0;
    running_length_[i] = 0;
    envs_[i]->reset(rngs_[i], o);
  }
  envs_[i]->action_mask(masks_.data() + static_cast<size_t>(i) * num_actions_);
}

const std::vector<float>& VectorEnv::observations() const { return observations_; }
const std::vector<float>& VectorEnv::rewards() const { return rewards_; }
const std::vector<uint8_t>& VectorEnv::terminated() const { return terminated_; }
const std::vector<uint8_t>& VectorEnv::truncated() const { return truncated_; }
const float* VectorEnv::final_observation(int i) const {
  return final_observations_.data() + static_cast<int64_t>(i) * observation_size();
}
const std::vector<uint8_t>& VectorEnv::action_masks() const { return masks_; }
std::vector<EpisodeRecord>& VectorEnv::finished_episodes() { return finished_; }

nlohmann::json VectorEnv::state() const {
  nlohmann::json envs = nlohmann::json::array();
  for (int i = 0; i < num_envs(); ++i) {
    std::ostringstream rng;
    rng << rngs_[i];
    nlohmann::json e = {{"rng", rng.str()}, {"return", running_return_[i]}, {"length", running_length_[i]}};
    const std::vector<double> snapshot = envs_[i]->snapshot();
    if (!snapshot.empty()) {
      e["snapshot"] = snapshot;
      e["observation"] = std::vector<float>(observations_.begin() + i * obs_size_,
                                            observations_.begin() + (i + 1) * obs_size_);
    }
    envs.push_back(e);
  }
  return envs;
}

void VectorEnv::load_state(const nlohmann::json& state) {
  if (!state.is_array() || static_cast<int>(state.size()) != num_envs())
    throw std::invalid_argument("the saved environment state does not fit " + std::to_string(num_envs()) + " envs");
  for (int i = 0; i < num_envs(); ++i) {
    const nlohmann::json& e = state[i];
    std::istringstream rng(e.at("rng").get<std::string>());
    rng >> rngs_[i];
    float* observation = observations_.data() + i * obs_size_;
    if (e.contains("snapshot")) {
      envs_[i]->restore(e["snapshot"].get<std::vector<double>>());
      const auto saved = e.at("observation").get<std::vector<float>>();
      if (static_cast<int64_t>(saved.size()) != obs_size_)
        throw std::invalid_argument("the saved observation does not fit the environment");
      std::copy(saved.begin(), saved.end(), observation);
      running_return_[i] = e.at("return").get<double>();
      running_length_[i] = e.at("length").get<int64_t>();
    } else {
      envs_[i]->reset(rngs_[i], observation);
      running_return_[i] = 0.0;
      running_length_[i] = 0;
    }
    envs_[i]->action_mask(masks_.data() + static_cast<size_t>(i) * num_actions_);
  }
}

}  // namespace mlh::rl
