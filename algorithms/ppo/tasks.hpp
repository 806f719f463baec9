// The environment families PPO trains on, built from the config: CartPole-v1, and the
// tiler-slider puzzle fed by a curriculum (or a plain generator stream), plus the held-out
// evaluation puzzles. ENV's errors (std::invalid_argument, LevelError) become mlh::Errors
// naming the field or file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "env/generator.hpp"
#include "env/puzzle.hpp"
#include "env/puzzle_env.hpp"
#include "trainer.hpp"

namespace ppo {

GeneratorSpec generator_spec(const Config& cfg);
PuzzleEnvOptions puzzle_env_options(const Config& cfg, int obs_size);

Task make_task(const Config& cfg);

// Level file -> puzzles; a missing or malformed file is an mlh::Error naming it.
std::vector<Puzzle> load_level_file(const std::string& path);

// The held-out evaluation puzzles: the level file puzzle.eval_level_file, or eval_count
// generated with eval_seed (training draws from other seeds).
std::vector<Puzzle> eval_puzzles(const Config& cfg);

}  // namespace ppo
