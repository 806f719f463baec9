#include "env_pool.hpp"

#include <algorithm>
#include <sstream>

#include <mlh/plugin.hpp>

#include "env/cartpole.hpp"

namespace ppo {

using nlohmann::json;

EnvPool::EnvPool(const EnvFactory& make, int num_envs, uint64_t seed) {
  if (num_envs < 1) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "num_envs must be >= 1");
  for (int i = 0; i < num_envs; ++i) {
    envs_.push_back(make());
    rngs_.emplace_back(seed + static_cast<uint64_t>(i));
  }
  obs_size_ = envs_[0]->observation_size();
  num_actions_ = envs_[0]->num_actions();
  observations_.assign(static_cast<size_t>(num_envs * obs_size_), 0.0f);
  final_observations_ = observations_;
  rewards_.assign(num_envs, 0.0f);
  terminated_.assign(num_envs, 0);
  truncated_.assign(num_envs, 0);
  masks_.assign(static_cast<size_t>(num_envs) * num_actions_, 1);
  running_return_.assign(num_envs, 0.0);
  running_length_.assign(num_envs, 0);
  finished_.reserve(static_cast<size_t>(num_envs) * 8);
}

void EnvPool::reset() {
  for (int i = 0; i < num_envs(); ++i) {
    envs_[i]->reset(rngs_[i], observations_.data() + i * obs_size_);
    envs_[i]->action_mask(masks_.data() + static_cast<size_t>(i) * num_actions_);
    running_return_[i] = 0.0;
    running_length_[i] = 0;
  }
}

void EnvPool::step(const int* actions) {
  for (int i = 0; i < num_envs(); ++i) {
    float* o = observations_.data() + i * obs_size_;
    const StepResult r = envs_[i]->step(actions[i], o);
    rewards_[i] = r.reward;
    terminated_[i] = r.terminated;
    truncated_[i] = r.truncated;
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
}

json EnvPool::state() const {
  json envs = json::array();
  for (int i = 0; i < num_envs(); ++i) {
    std::ostringstream rng;
    rng << rngs_[i];
    json e = {{"rng", rng.str()}, {"return", running_return_[i]}, {"length", running_length_[i]}};
    if (const auto* cp = dynamic_cast<const CartPole*>(envs_[i].get())) {
      e["cartpole"] = {{"state", cp->state()}, {"steps", cp->steps()}};
      e["observation"] = std::vector<float>(observations_.begin() + i * obs_size_,
                                            observations_.begin() + (i + 1) * obs_size_);
    }
    envs.push_back(e);
  }
  return envs;
}

void EnvPool::load_state(const json& state) {
  if (!state.is_array() || static_cast<int>(state.size()) != num_envs())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint: the environment state does not fit num_envs");
  for (int i = 0; i < num_envs(); ++i) {
    const json& e = state[i];
    std::istringstream rng(e.at("rng").get<std::string>());
    rng >> rngs_[i];
    auto* cp = dynamic_cast<CartPole*>(envs_[i].get());
    if (cp && e.contains("cartpole")) {
      cp->set_state(e["cartpole"]["state"].get<std::array<double, 4>>(), e["cartpole"]["steps"].get<int>());
      const auto obs = e.at("observation").get<std::vector<float>>();
      std::copy(obs.begin(), obs.end(), observations_.begin() + i * obs_size_);
      running_return_[i] = e.at("return").get<double>();
      running_length_[i] = e.at("length").get<int64_t>();
    } else {  // state not capturable: a fresh episode from the restored RNG
      envs_[i]->reset(rngs_[i], observations_.data() + i * obs_size_);
      running_return_[i] = 0.0;
      running_length_[i] = 0;
    }
    envs_[i]->action_mask(masks_.data() + static_cast<size_t>(i) * num_actions_);
  }
}

}  // namespace ppo
