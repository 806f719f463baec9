// Where PuzzleEnv gets its puzzles: one source shared by all the envs of a VectorEnv
// (single-threaded), or one per env (MixedSource, level_sources.hpp). The curriculum, a fixed
// list (a level file), a generator stream and the mix of the user's levels with generated
// puzzles implement it.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generator.hpp"
#include "puzzle.hpp"

namespace ppo {

class PuzzleSource {
 public:
  virtual ~PuzzleSource() = default;
  // The next puzzle to play (optimal >= 0 when known).
  virtual Puzzle next() = 0;
  // Called by PuzzleEnv once per finished episode of a puzzle this source gave.
  virtual void report(bool solved) { (void)solved; }
  // The source's own state for a checkpoint (its random stream, cursor, curriculum), so that
  // a resumed run draws the puzzles an uninterrupted one would: not that of the sources it
  // draws from, which the task saves once (tasks.cpp). Null when it has none.
  virtual nlohmann::json state() const { return nullptr; }
  // Puts back what state() returned; throws std::invalid_argument when it does not fit.
  virtual void load_state(const nlohmann::json& state) { (void)state; }
};

// A random stream as text (the standard library's own format), and back.
std::string rng_text(const std::mt19937_64& rng);
void rng_from_text(const std::string& text, std::mt19937_64& rng);

// A fixed list, e.g. from a level file: in order, cycling (shuffle = false), or drawn
// uniformly with its own rng. Puzzles without a known optimal length are solved up front
// (optimal stays -1 for unsolvable ones or past the solver's cap). Throws
// std::invalid_argument for an empty list or an invalid puzzle.
class PuzzleListSource : public PuzzleSource {
 public:
  PuzzleListSource(std::vector<Puzzle> puzzles, bool shuffle, uint64_t seed = 0);
  Puzzle next() override;
  nlohmann::json state() const override;
  void load_state(const nlohmann::json& state) override;
  const std::vector<Puzzle>& puzzles() const { return puzzles_; }

 private:
  std::vector<Puzzle> puzzles_;
  bool shuffle_;
  size_t cursor_ = 0;
  std::mt19937_64 rng_;
};

// A fresh generate_puzzle(spec) per episode, with its own rng.
class GeneratorSource : public PuzzleSource {
 public:
  GeneratorSource(const GeneratorSpec& spec, uint64_t seed);
  Puzzle next() override;
  nlohmann::json state() const override;
  void load_state(const nlohmann::json& state) override;

 private:
  GeneratorSpec spec_;
  std::mt19937_64 rng_;
};

}  // namespace ppo
