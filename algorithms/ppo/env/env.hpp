// The environments PPO trains on, behind one interface: the SDK's mlh::Environment
// (mlh/rl_env.hpp), which CartPole, the puzzles, environment libraries (library_env.hpp) and
// Gymnasium environments (gymnasium_env.hpp) all implement. Free of LibTorch so they build and test in seconds. An observation is a
// flat float array of observation_size() values laid out as observation_shape() (CartPole:
// {4}; puzzles: {planes, size, size}).
// Of continuous actions: gymnasium's Pendulum-v1 ({3}) and MountainCarContinuous-v0 ({2}).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <mlh/rl_env.hpp>

namespace ppo {

using Env = mlh::Environment;
using StepResult = mlh::StepResult;

// Makes a fresh environment; VectorEnv calls it once per slot.
using EnvFactory = std::function<std::unique_ptr<Env>()>;

// An environment that steps in another process: VectorEnv starts every such env's step
// (begin_*) before it waits for any (end_step), so they step side by side. step() is
// begin + end.
class RemoteEnv : public Env {
 public:
  virtual void begin_step(int action) = 0;
  virtual void begin_step_continuous(const float* action) = 0;
  virtual StepResult end_step(float* observation) = 0;
};

// Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) "WHO: the observation of WHEN holds X at index
// I" unless the observation's `size` values are finite (environment libraries, Gymnasium).
void check_finite_observation(const float* observation, int64_t size, const std::string& who, const std::string& when);

}  // namespace ppo
