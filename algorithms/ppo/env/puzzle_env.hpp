// The tiler-slider puzzle as a PPO environment. Each episode plays the next puzzle of a
// shared PuzzleSource; 4 actions (0 up, 1 down, 2 left, 3 right).
//
// Rewards (added up on a step): step_reward (-0.1) on every step, invalid moves included
// (they also set StepResult::invalid_move); + solve_reward (+10) on the step that solves the
// puzzle (terminated, solved); + fail_reward (-5) on the step that reaches max_steps (100)
// unsolved. Reaching the step limit is TERMINATION, not truncation: the limit is one of the
// puzzle's rules (running out of moves is losing, with its own reward), and the observation
// carries the remaining step budget (plane 7), so the state's value after it really is 0 and
// PPO must not bootstrap past it.
//
// Observation: kNumPlanes planes of obs_size x obs_size floats, {plane, row, col}; the
// puzzle's N x N board sits in the top-left corner, cells outside it are padding:
//   0 blocked      1 on blocked cells and padding
//   1 tiles        1 on tile cells
//   2 targets      1 on target cells
//   3 distance     on free cells: BFS distance (4-neighbour, through non-blocked cells,
//                  tiles ignored) to the nearest target / (2 * obs_size), capped at 1;
//                  targets 0; unreachable, blocked and padding 1
//   4 tile color   multi-color: (i + 1) / K on tile i (K tiles); single-color: 1 on tiles
//   5 target color multi-color: (i + 1) / K on target i; single-color: 1 on targets
//   6 tile-to-goal on each tile cell: distance (as plane 3) from it to its own target
//                  (multi-color) or to the nearest target (single-color); 0 elsewhere
//   7 budget       (max_steps - steps) / max_steps on every cell
// Planes 1-2 and 4-5 together tell which tile belongs to which target.
#pragma once

#include <memory>

#include "env.hpp"
#include "puzzle.hpp"
#include "puzzle_source.hpp"

namespace ppo {

// obs_size and max_steps have no defaults: puzzle_env_options (env_specs.hpp) sets them from
// the config (max_steps is puzzle.max_steps, obs_size the network's board size). The rewards
// are the environment's own, in no config.
struct PuzzleEnvOptions {
  int obs_size;  // boards up to this size; smaller ones are padded
  int max_steps;
  float step_reward = -0.1f;
  float solve_reward = 10.0f;
  float fail_reward = -5.0f;
};

// The last finished episode, kept across the autoreset (for evaluation statistics, e.g. the
// mean of steps / optimal over solved puzzles).
struct PuzzleEpisode {
  bool solved = false;
  int steps = 0;
  int optimal = -1;  // the puzzle's optimal length, -1 when unknown
};

class PuzzleEnv final : public Env {
 public:
  static constexpr int kNumPlanes = 8;
  // Throws std::invalid_argument for a null source or bad options.
  PuzzleEnv(std::shared_ptr<PuzzleSource> source, const PuzzleEnvOptions& options);

  std::string name() const override { return "puzzle"; }
  std::vector<int64_t> observation_shape() const override;
  int num_actions() const override { return kNumMoves; }
  // Plays source->next() (throws std::invalid_argument if it is larger than obs_size).
  void reset(std::mt19937_64& rng, float* observation) override;
  StepResult step(int action, float* observation) override;
  void action_mask(uint8_t* mask) const override;
  // The episode being played (the puzzle, its tiles, the steps taken, the last episode), so
  // that a resumed run goes on with it; the source's state is its owner's to save.
  std::vector<double> snapshot() const override;
  void restore(const std::vector<double>& snapshot) override;

  // Starts an episode on a given puzzle instead of the source's next (play, evaluation).
  void start(const Puzzle& puzzle, float* observation);

  const Puzzle& puzzle() const { return puzzle_; }
  const PuzzleState& state() const { return state_; }
  int steps() const { return steps_; }
  int optimal() const { return puzzle_.optimal; }
  const PuzzleEpisode& last_episode() const { return last_; }
  const PuzzleEnvOptions& options() const { return options_; }
  // Writes the observation of the current state (as reset/step do).
  void observe(float* observation) const;

 private:
  // Takes `puzzle` as the one played (and its distance fields), checked as start() does.
  void load_puzzle(const Puzzle& puzzle);
  void distance_field(const std::vector<int>& sources, std::vector<float>& out);
  std::shared_ptr<PuzzleSource> source_;
  PuzzleEnvOptions options_;
  Puzzle puzzle_;
  PuzzleState state_;
  int steps_ = 0;
  bool done_ = false;
  PuzzleEpisode last_;
  std::vector<float> dist_any_;               // obs_size^2, normalized, plane 3
  std::vector<std::vector<float>> dist_own_;  // per target (multi-color)
  std::vector<int> queue_;  // distance_field scratch
  std::vector<int> one_;
};

}  // namespace ppo
