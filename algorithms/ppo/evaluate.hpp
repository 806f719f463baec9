// Evaluating a policy: CartPole's or an environment library's episodes, puzzle solve rates (a trained network or, with
// none, a uniformly random policy over the valid moves), and playing one puzzle move by
// move.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "env/env.hpp"
#include "env/puzzle.hpp"
#include "env/puzzle_env.hpp"
#include "networks/networks.hpp"

namespace ppo {

struct EpisodeEval {
  double mean_return = 0, std_return = 0;
  std::vector<double> returns;
  int64_t solved = 0;  // episodes whose last step said solved (environment libraries may)
};
// `episodes` episodes of `env` (CartPole's, or an environment library's) played by `net`,
// one at a time; mask: with the env's action_mask().
EpisodeEval evaluate_episodes(ActorCritic& net, Env& env, int64_t episodes, uint64_t seed, bool deterministic,
                              bool mask);

struct PuzzleEval {
  double solve_rate = 0;
  double mean_steps = 0;  // over solved puzzles (NaN: none solved)
  double mean_ratio = 0;  // steps / optimal over solved puzzles with optimal > 0 (NaN: none)
  int64_t puzzles = 0, solved = 0;
};
// A mean over the solved puzzles for a log line: "n/a (none solved)" instead of "nan".
std::string solved_mean_text(double mean, int precision = 2);
// One episode per puzzle, up to 64 at a time. net == nullptr: uniform random moves (among
// the valid ones when mask).
PuzzleEval evaluate_puzzles(ActorCritic* net, const std::vector<Puzzle>& puzzles, const PuzzleEnvOptions& options,
                            bool deterministic, bool mask, uint64_t seed);

struct PlayResult {
  bool solved = false;
  std::vector<int> moves;
  std::vector<std::string> move_names;
};
// Plays `puzzle`, sending the start board and, after each move, its name and the board to `out`.
PlayResult play_puzzle(ActorCritic& net, const Puzzle& puzzle, const PuzzleEnvOptions& options, bool mask,
                       bool deterministic, uint64_t seed, const std::function<void(const std::string&)>& out);

}  // namespace ppo
