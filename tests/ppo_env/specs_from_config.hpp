// The generator specs and puzzle environment options ppo_env's tests use, made as the plugin
// makes them: PPO's config table's defaults (parse_config) with the test's puzzle.* fields over
// them, through generator_spec and puzzle_env_options. A test never invents the fields it does
// not care about, so none drifts from the table.
#pragma once

#include <nlohmann/json.hpp>

#include "config.hpp"
#include "env_specs.hpp"

namespace ppo_env_test {

inline ppo::GeneratorSpec generator_spec_with(const nlohmann::json& puzzle = nlohmann::json::object()) {
  return ppo::generator_spec(ppo::parse_config({{"puzzle", puzzle}}));
}

// obs_size is the network's board size (the plugin passes puzzle.size or the trained run's).
inline ppo::PuzzleEnvOptions puzzle_env_options_with(int obs_size,
                                                     const nlohmann::json& puzzle = nlohmann::json::object()) {
  return ppo::puzzle_env_options(ppo::parse_config({{"puzzle", puzzle}}), obs_size);
}

}  // namespace ppo_env_test
