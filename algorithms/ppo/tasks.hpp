// The environment families PPO trains on, built from the config: CartPole-v1, an environment
// library (env=library), and the
// tiler-slider puzzle fed by a curriculum (or a plain generator stream), by the user's levels
// (puzzle.train_levels), or by a mix of both, plus the held-out evaluation puzzles. ENV's
// errors (std::invalid_argument, LevelError) become mlh::Errors naming the field, or
// mlh::DataErrors naming the level file and line.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config.hpp"
#include "env/generator.hpp"
#include "env_specs.hpp"
#include "env/level_set.hpp"
#include "env/level_sources.hpp"
#include "env/puzzle.hpp"
#include "env/puzzle_env.hpp"
#include "trainer.hpp"

namespace ppo {

// The user's levels a run trains on (puzzle.train_levels), and how its episodes on them went.
struct TrainingLevels {
  std::string path;  // the config's file or folder
  LevelSet set;
  double share = 1.0;                    // of the training episodes
  std::shared_ptr<SolveWindow> results;  // the training episodes played on them
};
// What the run trains on, for its log: "12 puzzles from 'levels.txt' (...), 50% of the episodes".
std::string describe(const TrainingLevels& levels, const Config& cfg);

// The task a config trains on. Reads and checks puzzle.train_levels (an mlh::DataError when
// bad); env=library loads library.path and makes one instance (mlh/rl/environment_library.hpp), refusing
// a library or a network that does not fit (an mlh::Error naming the library).
Task make_task(const Config& cfg);

// A level file named by config field `field`, each puzzle solved and checked
// (env/level_set.hpp) against boards up to max_size (what the network sees); a missing or
// malformed file, a wrong `optimal` or a puzzle without a solution is an mlh::DataError
// naming the file and line.
std::vector<Puzzle> load_level_file(const std::string& path, const std::string& field, int max_size = kMaxPuzzleSize);

// Before training: the level files eval and play will read (puzzle.eval_level_file,
// level_file), loaded and checked as those commands will, so that a bad one is refused (an
// mlh::DataError) before anything trains rather than after. A file that does not exist yet
// may be written before eval or play runs, as for every algorithm's test data
// (docs/own-data.md): returned as a warning, and that command checks it then.
std::vector<std::string> check_command_level_files(const Config& cfg);

// The held-out evaluation puzzles for a network seeing boards up to obs_size: the level file
// puzzle.eval_level_file, or eval_count generated with eval_seed (training draws from other
// seeds).
std::vector<Puzzle> eval_puzzles(const Config& cfg, int obs_size);

}  // namespace ppo
