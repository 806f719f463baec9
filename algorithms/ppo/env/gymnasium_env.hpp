// A Gymnasium environment (config env=gymnasium), behind ppo::Env: each instance runs in a
// Python process of its own (gymnasium_worker.py, embedded in the plugin), so the PPO loop
// stays in C++ while the user's environment, its wrappers and Gymnasium's registry are
// Python's. Observations and actions cross through a shared-memory block; a Unix socket
// carries the commands (reset with a seed, step) and each step's reward and flags.
//
// VectorEnv starts every worker's step before it waits for any (begin_step / end_step), so
// the workers step side by side. Autoreset is VectorEnv's: an episode that ended is reset
// with a seed from the env's own stream, Gymnasium's same-step semantics (the final
// observation kept for the truncation's bootstrap).
//
// Every error names the environment ("gymnasium environment 'ID'") and what failed: the
// worker that cannot start (no such interpreter, no gymnasium, an unknown id, a constructor or
// wrapper that raises, a space PPO cannot take: MLH_ERR_INVALID_ARGUMENT, the config's to fix),
// a reset or step that raises (the exception, its file and line, the episode and step), an
// observation holding NaN or infinity, and a worker that exits or is killed.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "env.hpp"
#include "gymnasium_spec.hpp"

namespace ppo {

class GymnasiumEnv final : public RemoteEnv {
 public:
  // Starts the worker and reads its spaces. Throws mlh::Error.
  explicit GymnasiumEnv(const GymnasiumSpec& spec);
  ~GymnasiumEnv() override;
  GymnasiumEnv(const GymnasiumEnv&) = delete;
  GymnasiumEnv& operator=(const GymnasiumEnv&) = delete;

  std::string name() const override { return name_; }
  std::vector<int64_t> observation_shape() const override { return shape_; }
  int num_actions() const override { return num_actions_; }
  mlh::ActionBounds action_bounds() const override { return bounds_; }
  // Resets with a seed drawn from `rng` (Gymnasium's reset(seed=...)).
  void reset(std::mt19937_64& rng, float* observation) override;
  StepResult step(int action, float* observation) override;
  StepResult step_continuous(const float* action, float* observation) override;
  void begin_step(int action) override;
  void begin_step_continuous(const float* action) override;
  StepResult end_step(float* observation) override;

 private:
  // Reads the worker's spaces and maps the shared block (the constructor's second half).
  void describe(const std::string& python);
  // Asks the worker to close its environment, kills it after a second, frees the block.
  void shut_down() noexcept;
  // "gymnasium environment 'ID'": how every message about it starts.
  std::string who() const;
  void send(const void* data, size_t size);
  void receive(void* data, size_t size);
  // Reads the worker's answer tag; an error answer becomes an mlh::Error about `what`.
  void expect_ok(const std::string& what);
  [[noreturn]] void worker_gone(const std::string& what);
  void copy_observation(float* observation, const std::string& when) const;
  std::string at_step() const;

  std::string id_, name_;
  pid_t pid_ = -1;
  int socket_ = -1, block_fd_ = -1;
  void* block_ = nullptr;
  size_t block_size_ = 0, action_offset_ = 0;
  std::vector<int64_t> shape_;
  int64_t size_ = 0;
  int num_actions_ = 0;
  mlh::ActionBounds bounds_;
  int64_t total_steps_ = 0, episode_steps_ = 0, episodes_ = 0;
  bool stepping_ = false;
};

}  // namespace ppo
