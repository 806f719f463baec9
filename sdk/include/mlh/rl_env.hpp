// The reinforcement-learning environment interface in C++: mlh::Environment, the one class
// every environment implements (PPO's own CartPole and puzzles, and yours in a library), and
// MLH_RL_ENV(T), which exports a class as an environment library through the C ABI of
// mlh/mlh_rl_env.h, catching every exception at the boundary.
//
//   class GridWorld : public mlh::Environment {
//    public:
//     explicit GridWorld(const nlohmann::json& settings);  // library.settings, {} when unset
//     std::string name() const override { return "grid-world"; }
//     ...
//   };
//   MLH_RL_ENV(GridWorld, "grid-world")
//
// The host vectorizes it (many instances, autoreset, seeds, episode statistics): the author
// writes one environment. docs/plugin-guide.md, "Writing an environment", tells the rest.
#ifndef MLH_RL_ENV_HPP
#define MLH_RL_ENV_HPP

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "mlh_rl_env.h"
#include "plugin.hpp"

namespace mlh {

// The outcome of one step (mlh_rl_env_step says the same). `terminated`: the episode ended
// by the environment's own rules (the value after this step is 0). `truncated`: cut off by a
// time/step limit (the value is not 0; the learner bootstraps from it). At most one is true.
struct StepResult {
  float reward = 0.0f;
  bool terminated = false;
  bool truncated = false;
  bool solved = false;        // a goal reached (puzzles: this step solved the puzzle)
  bool invalid_move = false;  // the action changed nothing
};

// A continuous action space (Gymnasium's Box): an action is low.size() floats, action[i]
// within [low[i], high[i]] (+-infinity: unbounded). Empty for discrete actions.
struct ActionBounds {
  std::vector<float> low, high;
  int size() const { return static_cast<int>(low.size()); }
};

// An environment's actions are either discrete (num_actions() > 0: integers, step(int)) or
// continuous (action_bounds() not empty: floats, step_continuous()); it implements one kind.
class Environment {
 public:
  virtual ~Environment() = default;
  virtual std::string name() const = 0;
  // The observation is observation_size() floats laid out as this shape, row-major.
  virtual std::vector<int64_t> observation_shape() const = 0;
  int64_t observation_size() const {
    const std::vector<int64_t> shape = observation_shape();
    return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  }
  // Discrete actions: how many (0 for an environment of continuous actions).
  virtual int num_actions() const = 0;
  // Continuous actions: their bounds (empty for an environment of discrete actions).
  virtual ActionBounds action_bounds() const { return {}; }
  bool continuous_actions() const { return action_bounds().size() > 0; }
  // Starts an episode, drawing its randomness from `rng`; writes the first observation.
  virtual void reset(std::mt19937_64& rng, float* observation) = 0;
  // Takes discrete `action` in [0, num_actions()); writes the observation after it (the final
  // one when the episode ended: the caller resets).
  virtual StepResult step(int action, float* observation) = 0;
  // Takes a continuous action, action_bounds().size() floats within the bounds (callers clip);
  // otherwise as step(). Only environments of continuous actions override it.
  virtual StepResult step_continuous(const float* /*action*/, float* /*observation*/) {
    throw Error(MLH_ERR_INVALID_ARGUMENT, "environment '" + name() + "' takes discrete actions, not continuous ones");
  }
  // Which actions change the state now (1) and which would be invalid moves (0); all valid
  // unless overridden. Policies may mask with it; an environment never requires that.
  virtual void action_mask(uint8_t* mask) const { std::fill(mask, mask + num_actions(), uint8_t{1}); }
  // The state of the running episode as numbers, for checkpoints that resume exactly; empty
  // when the env cannot capture it (a restored run then starts a fresh episode).
  virtual std::vector<double> snapshot() const { return {}; }
  // Puts back what snapshot() returned.
  virtual void restore(const std::vector<double>& /*snapshot*/) {}
};

// The base of an environment of continuous actions: it has no discrete ones.
class ContinuousEnvironment : public Environment {
 public:
  int num_actions() const final { return 0; }
  StepResult step(int /*action*/, float* /*observation*/) final {
    throw Error(MLH_ERR_INVALID_ARGUMENT, "environment '" + name() + "' takes continuous actions, not discrete ones");
  }
  void action_mask(uint8_t* /*mask*/) const final {}
  ActionBounds action_bounds() const override = 0;
  StepResult step_continuous(const float* action, float* observation) override = 0;
};

namespace detail {

// One instance behind the C ABI: the environment and the stream its resets draw from,
// seeded by each reset's seed (the host draws the seeds from its own seeded streams).
template <class T>
struct RlEnvInstance {
  std::unique_ptr<T> env;
  std::mt19937_64 rng;
};

template <class T>
struct RlEnvTable {
  static RlEnvInstance<T>* self(mlh_rl_env* e) { return reinterpret_cast<RlEnvInstance<T>*>(e); }
  static const RlEnvInstance<T>* self(const mlh_rl_env* e) { return reinterpret_cast<const RlEnvInstance<T>*>(e); }

  static mlh_status create(const char* settings_json, mlh_rl_env** out, mlh_error* error) noexcept {
    return guard(error, [&] {
      const nlohmann::json settings = nlohmann::json::parse(settings_json ? settings_json : "{}");
      auto instance = std::make_unique<RlEnvInstance<T>>();
      if constexpr (std::is_constructible_v<T, const nlohmann::json&>) {
        instance->env = std::make_unique<T>(settings);
      } else {
        if (!settings.empty())
          throw Error(MLH_ERR_INVALID_ARGUMENT, "this environment takes no settings (got " + settings.dump() + ")");
        instance->env = std::make_unique<T>();
      }
      *out = reinterpret_cast<mlh_rl_env*>(instance.release());
    });
  }
  static void destroy(mlh_rl_env* e) noexcept { delete self(e); }
  static mlh_status describe(const mlh_rl_env* e, mlh_rl_env_spec* out, mlh_error* error) noexcept {
    return guard(error, [&] {
      const std::vector<int64_t> shape = self(e)->env->observation_shape();
      if (shape.empty() || shape.size() > MLH_RL_ENV_MAX_RANK)
        throw Error(MLH_ERR_INVALID_ARGUMENT, "observation_shape() must have 1 to 8 dimensions");
      out->observation_rank = static_cast<uint32_t>(shape.size());
      std::copy(shape.begin(), shape.end(), out->observation_shape);
      out->num_actions = self(e)->env->num_actions();
      if (MLH_HAS_FIELD(out, mlh_rl_env_spec, action_dim)) out->action_dim = self(e)->env->action_bounds().size();
    });
  }
  static mlh_status reset(mlh_rl_env* e, uint64_t seed, float* observation, mlh_error* error) noexcept {
    return guard(error, [&] {
      self(e)->rng.seed(seed);
      self(e)->env->reset(self(e)->rng, observation);
    });
  }
  static void write(const StepResult& r, mlh_rl_env_step* out) {
    out->reward = r.reward;
    out->terminated = r.terminated ? 1 : 0;
    out->truncated = r.truncated ? 1 : 0;
    out->solved = r.solved ? 1 : 0;
    out->invalid_move = r.invalid_move ? 1 : 0;
  }
  static mlh_status step(mlh_rl_env* e, int32_t action, float* observation, mlh_rl_env_step* out,
                         mlh_error* error) noexcept {
    return guard(error, [&] { write(self(e)->env->step(action, observation), out); });
  }
  static mlh_status action_bounds(const mlh_rl_env* e, float* low, float* high, mlh_error* error) noexcept {
    return guard(error, [&] {
      const ActionBounds b = self(e)->env->action_bounds();
      std::copy(b.low.begin(), b.low.end(), low);
      std::copy(b.high.begin(), b.high.end(), high);
    });
  }
  static mlh_status step_continuous(mlh_rl_env* e, const float* action, float* observation, mlh_rl_env_step* out,
                                    mlh_error* error) noexcept {
    return guard(error, [&] { write(self(e)->env->step_continuous(action, observation), out); });
  }
  static mlh_status action_mask(const mlh_rl_env* e, uint8_t* mask, mlh_error* error) noexcept {
    return guard(error, [&] { self(e)->env->action_mask(mask); });
  }
  static mlh_status snapshot(const mlh_rl_env* e, double* values, uint64_t capacity, uint64_t* size,
                             mlh_error* error) noexcept {
    return guard(error, [&] {
      const std::vector<double> s = self(e)->env->snapshot();
      *size = s.size();
      if (values) std::copy_n(s.begin(), std::min<uint64_t>(capacity, s.size()), values);
    });
  }
  static mlh_status restore(mlh_rl_env* e, const double* values, uint64_t size, mlh_error* error) noexcept {
    return guard(error, [&] { self(e)->env->restore(std::vector<double>(values, values + size)); });
  }

  static const mlh_rl_env_table* table(const char* name) noexcept {
    // The host tells the two kinds of actions apart by describe's action_dim and calls only
    // the step of its kind.
    static const mlh_rl_env_table t = {sizeof(mlh_rl_env_table), MLH_RL_ENV_ABI_MAJOR, MLH_RL_ENV_ABI_MINOR, name,
                                       &create, &destroy, &describe, &reset, &step, &action_mask, &snapshot, &restore,
                                       &action_bounds, &step_continuous};
    return &t;
  }
};

}  // namespace detail
}  // namespace mlh

// Exports T (an mlh::Environment, constructible from the settings' nlohmann::json or, taking
// no settings, by default) as an environment library named NAME.
#define MLH_RL_ENV(T, NAME)                                                      \
  extern "C" MLH_EXPORT const mlh_rl_env_table* mlh_rl_env_entry(void) {         \
    return ::mlh::detail::RlEnvTable<T>::table(NAME);                            \
  }

#endif  // MLH_RL_ENV_HPP
