// N environments stepped together with gymnasium's autoreset semantics, as env/VectorEnv,
// plus what exact resumption needs: the whole pool's state (each env's RNG, its running
// episode, the current observations and, where the env exposes it, its internal state) as
// JSON for checkpoints. Envs whose state cannot be captured (see capture_env_state) start a
// fresh episode on restore.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "env/env.hpp"
#include "env/vector_env.hpp"

namespace ppo {

class EnvPool {
 public:
  // Env i is seeded with seed + i.
  EnvPool(const EnvFactory& make, int num_envs, uint64_t seed);

  int num_envs() const { return static_cast<int>(envs_.size()); }
  Env& env(int i) { return *envs_[i]; }
  std::vector<int64_t> observation_shape() const { return envs_[0]->observation_shape(); }
  int64_t observation_size() const { return obs_size_; }
  int num_actions() const { return num_actions_; }

  void reset();
  // Steps env i with actions[i]; envs whose episode ended reset themselves (their final
  // observation is kept, finished episodes are appended to finished()).
  void step(const int* actions);

  const float* observations() const { return observations_.data(); }
  const float* rewards() const { return rewards_.data(); }
  const uint8_t* terminated() const { return terminated_.data(); }
  const uint8_t* truncated() const { return truncated_.data(); }
  const float* final_observation(int i) const { return final_observations_.data() + i * obs_size_; }
  const uint8_t* action_masks() const { return masks_.data(); }
  std::vector<EpisodeRecord>& finished() { return finished_; }

  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);

 private:
  std::vector<std::unique_ptr<Env>> envs_;
  std::vector<std::mt19937_64> rngs_;
  std::vector<float> observations_, final_observations_, rewards_;
  std::vector<uint8_t> terminated_, truncated_, masks_;
  std::vector<double> running_return_;
  std::vector<int64_t> running_length_;
  std::vector<EpisodeRecord> finished_;
  int64_t obs_size_ = 0;
  int num_actions_ = 0;
};

}  // namespace ppo
