// The one place a config becomes the specs of PPO's environment layer (env/, ppo_env): every
// config-derived value of a GeneratorSpec or PuzzleEnvOptions is set here from the parsed
// config, whose defaults are the table's (config.cpp). The spec structs carry no defaults of
// their own for those values, so a spec made any other way has no second, drifting default to
// fall back on. Free of LibTorch: ppo_env's tests build their specs through it too.
#pragma once

#include "config.hpp"
#include "env/generator.hpp"
#include "env/puzzle_env.hpp"

namespace ppo {

// The generated puzzles' spec: puzzle.size, tiles, blocked_density, multi_color, min_moves and
// max_moves. A spec the generator refuses is an mlh::Error naming config field 'puzzle'.
GeneratorSpec generator_spec(const Config& cfg);
// A puzzle environment's options for a network seeing boards up to obs_size.
PuzzleEnvOptions puzzle_env_options(const Config& cfg, int obs_size);

}  // namespace ppo
