// The environments PPO trains on, behind one interface: the SDK's mlh::Environment
// (mlh/rl_env.hpp), which CartPole, the puzzles, environment libraries (the SDK's
// mlh/rl/environment_library.hpp) and Gymnasium environments (gymnasium_env.hpp) all
// implement. Free of LibTorch so they build and test in seconds. An observation is a flat
// float array of observation_size() values laid out as observation_shape() (CartPole: {4};
// puzzles: {planes, size, size}).
// Of continuous actions: gymnasium's Pendulum-v1 ({3}) and MountainCarContinuous-v0 ({2}).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <mlh/rl/environment_library.hpp>
#include <mlh/rl/remote_env.hpp>
#include <mlh/rl/vector_env.hpp>
#include <mlh/rl_env.hpp>

namespace ppo {

using Env = mlh::Environment;
using StepResult = mlh::StepResult;

// The SDK's machinery for environments (mlh/rl/, any algorithm's): vectors of them,
// environment libraries, environments in another process, by the names PPO's code uses.
using mlh::rl::check_finite_observation;
using mlh::rl::EnvFactory;
using mlh::rl::EnvLibrary;
using mlh::rl::EpisodeRecord;
using mlh::rl::LibraryEnv;
using mlh::rl::RemoteEnv;
using mlh::rl::shape_text;
using mlh::rl::VectorEnv;

}  // namespace ppo
