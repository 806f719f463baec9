// One PPO training run's state and its two phases, CleanRL's ppo.py loop:
//   collect()  num_steps steps of num_envs environments with the current policy (plain-C++
//              inference and sampling for the MLP, no autograd), then GAE over the rollout;
//   update()   the PPO epochs over the rollout (ppo_update.hpp), after the LR annealing.
// Plus its checkpoint state: network, Adam, iteration, global step, every RNG (torch's, the
// sampler's, each environment's), the environments' episodes, the task's shared state (the
// puzzles' curricula) and the running episode statistics, so that a resumed run continues
// exactly where an uninterrupted one would (environment libraries: where they implement
// snapshot()).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <mlh/runtime/apply_plan.hpp>
#include <mlh/runtime/checkpoint.hpp>
#include <nlohmann/json.hpp>

#include "config.hpp"
#include "env/env.hpp"
#include "networks/networks.hpp"
#include "ppo_update.hpp"
#include "running_stats.hpp"

namespace ppo {

struct TrainingLevels;  // tasks.hpp

// What the trainer needs of an environment family beyond Env: the factory, and for puzzles
// the curriculum's metrics and the user's levels it trains on.
struct Task {
  EnvFactory make_env;
  std::vector<int64_t> observation_shape;
  int num_actions = 0;                 // discrete actions (0 for continuous ones)
  mlh::ActionBounds action_bounds;     // continuous actions (empty for discrete ones)
  bool action_masks = false;  // the envs' action_mask() can say no (puzzles; libraries with one)
  std::function<std::map<std::string, double>()> metrics;  // e.g. curriculum level
  std::shared_ptr<TrainingLevels> levels;                  // null unless puzzle.train_levels
  // The state the environments share (the puzzles' sources: curricula, streams, the levels'
  // solve window) for the checkpoint, and putting it back (std::invalid_argument when it does
  // not fit); unset where the environments hold all of it.
  std::function<nlohmann::json()> save_state;
  std::function<void(const nlohmann::json&)> load_state;
};

// The network the config asks for on this task (resnet size from the plan's preset when unset).
// The update's settings from the config (precision and autocast stay fp32 / off: the plan's).
UpdateOptions update_options(const Config& cfg);

// `action_dim` > 0: continuous actions of that many values (num_actions is then 0).
NetworkSpec network_spec(const Config& cfg, const mlh::rt::RuntimePlan& plan, const std::vector<int64_t>& obs_shape,
                         int num_actions, int action_dim);

// Samples an action from logits (masked where mask[a] == 0) with rng; writes its log
// probability. Falls back to all actions when the mask allows none.
int sample_action(const float* logits, const uint8_t* mask, int num_actions, std::mt19937_64& rng, float* logprob);
// The most probable allowed action.
int greedy_action(const float* logits, const uint8_t* mask, int num_actions);
// A continuous action drawn from the Gaussian of `mean` [dim] and `log_std` [dim] with rng
// (unclipped: the environment's vector clips it); returns its log probability.
float sample_gaussian(const float* mean, const float* log_std, int dim, std::mt19937_64& rng, float* action);
// Running statistics of the discounted return that rewards are divided by (Gymnasium's
// NormalizeReward, config normalize_rewards), with their checkpoint state.
class RewardScaler {
 public:
  RewardScaler(int num_envs, double gamma);
  // Scales the rewards of one vector step in place, after adding each env's discounted
  // return to the statistics (a return restarts where its episode terminated, as Gymnasium's).
  void scale(float* rewards, const uint8_t* terminated);
  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);

 private:
  double gamma_;
  std::vector<double> returns_;
  RunningMeanStd stats_;
};

struct IterationStats {
  UpdateStats update;
  double explained_variance = 0;
  std::vector<EpisodeRecord> episodes;  // finished during this iteration's collection
};

class Trainer {
 public:
  // fast_update false: the autograd update even where the mlp's plain-C++ step applies
  // (mlp_fast.hpp; the benchmark compares the two).
  Trainer(const Config& cfg, const mlh::rt::RuntimePlan& plan, const Task& task, bool fast_update = true);

  // Collect + update; iteration() counts them.
  IterationStats iterate();
  // The two phases (iterate = collect + update).
  void collect();
  UpdateStats update();

  int64_t iteration() const { return iteration_; }
  int64_t global_step() const { return global_step_; }
  ActorCritic& net() { return *net_; }
  std::shared_ptr<ActorCritic> net_ptr() { return net_; }
  PpoUpdater& updater() { return *updater_; }
  VectorEnv& envs() { return envs_; }
  const Config& config() const { return cfg_; }
  const std::deque<double>& recent_returns() const { return recent_returns_; }  // last 100
  const std::deque<uint8_t>& recent_solved() const { return recent_solved_; }   // last 100
  double average_return() const;  // over recent_returns(), NaN when none
  int64_t episodes_finished() const { return episodes_finished_; }
  bool use_masks() const { return use_masks_; }

  // Checkpoint state (call load_state's result handling: restore()).
  mlh::rt::TrainingState state();
  // After a checkpoint was loaded into state(): restores everything else from its values.
  // own_streams false (distributed ranks other than 0, whose checkpoint holds rank 0's
  // environments and random streams): keep this rank's own environments and generators.
  void restore(mlh::rt::TrainingState& loaded, bool own_streams = true);

 private:
  Config cfg_;
  mlh::rt::RuntimePlan plan_;
  Task task_;
  VectorEnv envs_;
  std::shared_ptr<ActorCritic> net_;
  std::unique_ptr<PpoUpdater> updater_;
  bool use_masks_ = false, autocast_ = false;
  int64_t T_, N_, obs_size_;
  int A_;  // discrete: the actions; continuous: the values of one action
  bool continuous_ = false;
  std::optional<RewardScaler> reward_scaler_;
  std::mt19937_64 rng_;
  int64_t iteration_ = 0, global_step_ = 0, episodes_finished_ = 0;
  std::deque<double> recent_returns_;
  std::deque<uint8_t> recent_solved_;
  std::vector<EpisodeRecord> iteration_episodes_;
  // rollout, [T][N] (obs [T][N][obs_size], masks [T][N][A])
  std::vector<float> obs_, logprobs_, values_, rewards_, final_values_, advantages_, returns_;
  std::vector<int64_t> actions_;
  std::vector<float> continuous_actions_, step_continuous_, log_std_;  // [T][N][A], [N][A], [A]
  std::vector<uint8_t> ends_, truncated_, masks_;
  std::vector<float> next_values_, logits_, step_values_, scratch_obs_, scratch_values_, scratch_logits_;
  std::vector<int> step_actions_;
  double explained_variance_ = 0;
};

}  // namespace ppo
