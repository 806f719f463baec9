// The environments PPO trains on, behind one interface: the SDK's mlh::Environment
// (mlh/rl_env.hpp), which CartPole, the puzzles and environment libraries (library_env.hpp)
// all implement. Free of LibTorch so they build and test in seconds. An observation is a
// flat float array of observation_size() values laid out as observation_shape() (CartPole:
// {4}; puzzles: {planes, size, size}).
// Of continuous actions: gymnasium's Pendulum-v1 ({3}) and MountainCarContinuous-v0 ({2}).
#pragma once

#include <functional>
#include <memory>

#include <mlh/rl_env.hpp>

namespace ppo {

using Env = mlh::Environment;
using StepResult = mlh::StepResult;

// Makes a fresh environment; VectorEnv calls it once per slot.
using EnvFactory = std::function<std::unique_ptr<Env>()>;

}  // namespace ppo
