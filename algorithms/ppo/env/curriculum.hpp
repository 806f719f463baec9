// A curriculum of puzzles by optimal length. The level is the longest optimal length
// admitted; puzzles are drawn with optimal length in [lowest, level]. After every reported
// episode the solve rate over the last `window` episodes at the current level is checked;
// when the window is full and the rate is >= threshold the level rises by level_step (up to
// the highest available; a pool's level skips lengths it has no puzzles of) and the
// window starts empty again, so every level must prove itself
// on `window` episodes of its own. Deterministic given its seed and the sequence of reports.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "puzzle_source.hpp"

namespace ppo {

struct CurriculumOptions {
  int start_level = 2;       // first level (longest optimal length admitted)
  int level_step = 1;
  int window = 200;          // episodes in the moving window
  double threshold = 0.8;    // solve rate needed to advance
  uint64_t seed = 0;
};

class Curriculum : public PuzzleSource {
 public:
  // Generated puzzles: optimal lengths in [spec.min_moves, spec.max_moves]; the level runs
  // from max(start_level, spec.min_moves) to spec.max_moves.
  Curriculum(const GeneratorSpec& spec, const CurriculumOptions& options);
  // A fixed pool (e.g. a level file): unknown optimal lengths are solved first, unsolvable
  // puzzles dropped; the level runs from max(start_level, shortest) to the longest.
  Curriculum(std::vector<Puzzle> pool, const CurriculumOptions& options);

  Puzzle next() override;
  void report(bool solved) override;
  // The level, its window and the stream. A saved window of another size (the config's
  // window changed on --resume) keeps the level and starts the window empty.
  nlohmann::json state() const override;
  void load_state(const nlohmann::json& state) override;

  int level() const { return level_; }
  int max_level() const { return max_level_; }
  int min_level() const { return min_level_; }
  // Solve rate over the current window (0 when empty) and how many episodes it holds.
  double solve_rate() const;
  int window_count() const { return count_; }
  const CurriculumOptions& options() const { return options_; }

 private:
  void check_options() const;
  CurriculumOptions options_;
  bool generated_ = true;
  GeneratorSpec spec_;
  std::vector<Puzzle> pool_;  // sorted by optimal length
  int min_level_ = 1, max_level_ = 1, level_ = 1;
  std::vector<uint8_t> ring_;  // window results
  int head_ = 0, count_ = 0, solved_in_window_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace ppo
