#include "puzzle_source.hpp"

#include <stdexcept>

#include "solver.hpp"

namespace ppo {

PuzzleListSource::PuzzleListSource(std::vector<Puzzle> puzzles, bool shuffle, uint64_t seed)
    : puzzles_(std::move(puzzles)), shuffle_(shuffle), rng_(seed) {
  if (puzzles_.empty()) throw std::invalid_argument("PuzzleListSource: no puzzles");
  for (Puzzle& p : puzzles_) {
    validate(p);
    if (p.optimal < 0) {
      SolveOptions o;
      o.want_path = false;
      const SolveResult r = solve(p, o);
      if (r.solved()) p.optimal = r.moves;
    }
  }
}

Puzzle PuzzleListSource::next() {
  if (shuffle_) return puzzles_[uniform_index(rng_, puzzles_.size())];
  const Puzzle& p = puzzles_[cursor_];
  cursor_ = (cursor_ + 1) % puzzles_.size();
  return p;
}

GeneratorSource::GeneratorSource(const GeneratorSpec& spec, uint64_t seed)
    : spec_(spec), rng_(seed) {
  validate(spec_);
}

Puzzle GeneratorSource::next() { return generate_puzzle(spec_, rng_); }

}  // namespace ppo
