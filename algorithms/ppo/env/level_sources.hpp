// The puzzle sources that training on the user's levels adds: the mix of those levels with
// generated puzzles, and the record of how the episodes on the levels went (the training
// levels' own solve rate, which the run's overall one would hide under generated puzzles).
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "puzzle_source.hpp"

namespace ppo {

// Outcomes of finished episodes: the last `window` of them, and the count of all.
class SolveWindow {
 public:
  explicit SolveWindow(int window = 100);  // throws std::invalid_argument when < 1
  void add(bool solved);
  double rate() const;  // over the window; 0 when no episode finished yet
  int64_t episodes() const { return episodes_; }
  int64_t solved() const { return solved_; }
  // For a checkpoint; a saved window of another size is refused (std::invalid_argument).
  nlohmann::json state() const;
  void load_state(const nlohmann::json& state);

 private:
  std::vector<uint8_t> ring_;
  int head_ = 0, count_ = 0, in_window_ = 0;
  int64_t episodes_ = 0, solved_ = 0;
};

// Passes a source's puzzles through and adds each reported episode to `results`.
class RecordingSource : public PuzzleSource {
 public:
  RecordingSource(std::shared_ptr<PuzzleSource> inner, std::shared_ptr<SolveWindow> results);
  Puzzle next() override { return inner_->next(); }
  void report(bool solved) override;

 private:
  std::shared_ptr<PuzzleSource> inner_;
  std::shared_ptr<SolveWindow> results_;
};

// One environment's draw between the user's levels and generated puzzles: each episode's
// puzzle comes from `levels` with probability `share` (in (0, 1]), else from `generated`, and
// the episode's outcome is reported to the source it came from (each keeps its own
// curriculum). Make one per environment: a PuzzleEnv asks for its next puzzle only after it
// reported the last one's outcome, so this knows whose episode a report is; the two sources
// are shared by all the environments. Deterministic given its seed.
class MixedSource : public PuzzleSource {
 public:
  MixedSource(std::shared_ptr<PuzzleSource> levels, std::shared_ptr<PuzzleSource> generated, double share,
              uint64_t seed);
  Puzzle next() override;
  void report(bool solved) override;
  // Its stream and whose puzzle is being played (the two sources are saved by their owner).
  nlohmann::json state() const override;
  void load_state(const nlohmann::json& state) override;

 private:
  std::shared_ptr<PuzzleSource> levels_, generated_;
  double share_;
  std::mt19937_64 rng_;
  PuzzleSource* current_ = nullptr;  // the source of the puzzle being played
};

}  // namespace ppo
