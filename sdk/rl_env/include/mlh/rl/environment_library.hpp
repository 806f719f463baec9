// An environment from a shared library (PPO's config env=library, library.path): the
// library's C table (mlh/mlh_rl_env.h) behind mlh::Environment, so VectorEnv (vector_env.hpp)
// runs many copies of it with autoreset, per-env seeds and episode statistics as it does any
// other environment. Any algorithm can load one (link mlhost::rl_env).
//
// The negotiated ABI minor is min(this host's, the table's): a library built against an older
// header (tests/abi/frozen/rl_env_v1.0) loads, with discrete actions only.
//
// mlhost checks what it gets: a missing file, a library without the entry symbol, another
// ABI major or a table without its required functions are refused at load; a failing
// create/reset/step (the library's message, e.g. a C++ exception it caught), a NaN or
// infinite observation or reward, an observation written past its size, or an instance whose
// shape differs from the first one stop the run. Every such error is an mlh::Error whose
// message starts with "environment library 'PATH'" and says what went wrong and where (which
// step).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mlh/mlh_rl_env.h>

#include "remote_env.hpp"

namespace mlh::rl {

class EnvLibrary {
 public:
  // Loads the library at `path` and checks its table. Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT),
  // naming `config_field`, the config field the path came from.
  static std::shared_ptr<const EnvLibrary> open(const std::string& path, const std::string& config_field = "library.path");
  ~EnvLibrary();
  EnvLibrary(const EnvLibrary&) = delete;
  EnvLibrary& operator=(const EnvLibrary&) = delete;

  const std::string& path() const { return path_; }
  std::string name() const;
  const mlh_rl_env_table& table() const { return *table_; }
  // min(MLH_RL_ENV_ABI_MINOR, the table's abi_minor)
  uint32_t minor() const;
  // Whether the table has continuous actions' functions (minor 1 and both set).
  bool has_continuous_actions() const;
  // "environment library 'PATH' (NAME)": how every message about it starts.
  std::string who() const;

 private:
  EnvLibrary(std::string path, void* handle, const mlh_rl_env_table* table);
  std::string path_;
  void* handle_ = nullptr;
  const mlh_rl_env_table* table_ = nullptr;
};

class LibraryEnv final : public Environment {
 public:
  // Creates an instance with the environment's own settings (a JSON object as text).
  // `expected_shape` (when not empty): the shape every instance must have.
  LibraryEnv(std::shared_ptr<const EnvLibrary> library, const std::string& settings_json,
             const std::vector<int64_t>& expected_shape = {});
  LibraryEnv(const LibraryEnv&) = delete;
  LibraryEnv& operator=(const LibraryEnv&) = delete;

  std::string name() const override { return library_->name(); }
  std::vector<int64_t> observation_shape() const override { return shape_; }
  int num_actions() const override { return num_actions_; }
  mlh::ActionBounds action_bounds() const override { return bounds_; }
  bool has_action_mask() const { return num_actions_ > 0 && library_->table().action_mask != nullptr; }
  void reset(std::mt19937_64& rng, float* observation) override;
  StepResult step(int action, float* observation) override;
  StepResult step_continuous(const float* action, float* observation) override;
  void action_mask(uint8_t* mask) const override;
  std::vector<double> snapshot() const override;
  void restore(const std::vector<double>& snapshot) override;

 private:
  [[noreturn]] void fail(const std::string& what, mlh_status code, const mlh_error& error) const;
  // Copies the observation the library wrote into scratch_ to `observation`, after checking
  // it stayed within its size and holds finite numbers; `when` says which call wrote it.
  void take_observation(float* observation, const std::string& when) const;
  std::string at_step() const;
  // Reads the continuous actions' bounds (environment ABI 1.1) and checks them.
  void read_action_bounds(int action_dim);
  // Calls the table's step of either kind (`step`), then checks its observation and reward;
  // `action` says which action, for a message.
  StepResult call_step(const std::function<mlh_status(mlh_rl_env_step*, mlh_error*)>& step, float* observation,
                       const std::function<std::string()>& action);
  std::shared_ptr<const EnvLibrary> library_;
  // Destroyed by the table's destroy, also when the constructor throws after create.
  std::unique_ptr<mlh_rl_env, void (*)(mlh_rl_env*)> instance_{nullptr, nullptr};
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  int num_actions_ = 0;
  mlh::ActionBounds bounds_;  // continuous actions; empty for discrete ones
  std::vector<float> scratch_;  // size_ values and a guard band the library must not touch
  int64_t total_steps_ = 0, episode_steps_ = 0, episodes_ = 0;
};

}  // namespace mlh::rl
