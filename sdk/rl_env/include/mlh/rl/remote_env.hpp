// What a vector of environments needs beyond mlh::Environment (mlh/rl_env.hpp): a factory of
// fresh instances, and environments that step in another process (a Gymnasium worker), which
// VectorEnv starts all at once before it waits for any.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <mlh/rl_env.hpp>

namespace mlh::rl {

// Makes a fresh environment; VectorEnv calls it once per slot.
using EnvFactory = std::function<std::unique_ptr<Environment>()>;

// An environment that steps in another process: VectorEnv starts every such env's step
// (begin_*) before it waits for any (end_step), so they step side by side. step() is
// begin + end.
class RemoteEnv : public Environment {
 public:
  virtual void begin_step(int action) = 0;
  virtual void begin_step_continuous(const float* action) = 0;
  virtual StepResult end_step(float* observation) = 0;
};

// Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) "WHO: the observation of WHEN holds X at index
// I" unless the observation's `size` values are finite (environment libraries, Gymnasium).
void check_finite_observation(const float* observation, int64_t size, const std::string& who, const std::string& when);

// "[8, 4, 4]": an observation shape in messages.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace mlh::rl
