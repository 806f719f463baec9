// N environments stepped together, each resetting itself when its episode ends, as
// gymnasium's SyncVectorEnv with autoreset: after a step that ends an episode, the returned
// observation is the next episode's first one, and the final observation of the ended
// episode is kept in final_observation (needed to bootstrap a truncated episode).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "remote_env.hpp"

namespace mlh::rl {

// Statistics of one finished episode.
struct EpisodeRecord {
  int env_index = 0;
  double episode_return = 0.0;
  int64_t length = 0;
  bool solved = false;     // puzzles
  bool truncated = false;  // ended by the step limit
};

class VectorEnv {
 public:
  // Env i is seeded with seed + i (its own std::mt19937_64), so runs are reproducible.
  VectorEnv(const EnvFactory& make, int num_envs, uint64_t seed);

  int num_envs() const;
  const Environment& env(int i) const;
  Environment& env(int i);
  std::vector<int64_t> observation_shape() const;
  int64_t observation_size() const;
  int num_actions() const;  // 0 for continuous actions
  // Continuous actions: their bounds (empty for discrete ones).
  const mlh::ActionBounds& action_bounds() const;

  // Resets every env; observations() then holds num_envs x observation_size values.
  void reset();
  // Steps env i with actions[i]. Afterwards: observations() are the current (after
  // autoreset) observations; rewards(), terminated(), truncated() describe this step; for
  // every env with truncated()[i] set, final_observation(i) is the observation it was cut
  // off in. Finished episodes are appended to finished_episodes() (cleared by the caller).
  void step(const int* actions);
  // The same with continuous actions: num_envs x action_bounds().size() floats, each clipped
  // to its bounds before the env takes it (Gymnasium's ClipAction).
  void step_continuous(const float* actions);

  const std::vector<float>& observations() const;
  const std::vector<float>& rewards() const;
  const std::vector<uint8_t>& terminated() const;
  const std::vector<uint8_t>& truncated() const;
  const float* final_observation(int i) const;
  // num_envs x num_actions: each env's action_mask() for its current observation.
  const std::vector<uint8_t>& action_masks() const;
  std::vector<EpisodeRecord>& finished_episodes();

  // Everything exact resumption needs, for checkpoints: each env's RNG, its running
  // episode's return and length, its snapshot() and current observation. An env without a
  // snapshot starts a fresh episode from its restored RNG on load_state().
  nlohmann::json state() const;
  // Throws std::invalid_argument when `state` does not fit (another num_envs).
  void load_state(const nlohmann::json& state);

 private:
  std::vector<std::unique_ptr<Environment>> envs_;
  std::vector<std::mt19937_64> rngs_;
  std::vector<float> observations_, final_observations_, rewards_;
  std::vector<uint8_t> terminated_, truncated_, masks_;
  std::vector<double> running_return_;
  std::vector<int64_t> running_length_;
  std::vector<EpisodeRecord> finished_;
  int64_t obs_size_ = 0;  // cached: observation_shape() allocates
  int num_actions_ = 0;
  mlh::ActionBounds bounds_;
  std::vector<float> clipped_action_;  // num_envs x the action's values
  // Every env when all step in other processes (RemoteEnv), else empty.
  std::vector<RemoteEnv*> remote_;
  // Waits for each remote env's step, then records it as after_step does.
  void end_remote_steps();
  // Records env i's step r (its observation o) and resets it when the episode ended.
  void after_step(int i, const StepResult& r, float* o);
};

}  // namespace mlh::rl
