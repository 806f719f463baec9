#include "puzzle_source.hpp"

#include <sstream>
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

nlohmann::json PuzzleListSource::state() const { return {{"rng", rng_text(rng_)}, {"cursor", cursor_}}; }

void PuzzleListSource::load_state(const nlohmann::json& state) {
  const size_t cursor = state.at("cursor").get<size_t>();
  if (cursor >= puzzles_.size())
    throw std::invalid_argument("the saved level cursor " + std::to_string(cursor) + " is past the " +
                                std::to_string(puzzles_.size()) + " levels");
  rng_from_text(state.at("rng").get<std::string>(), rng_);
  cursor_ = cursor;
}

nlohmann::json GeneratorSource::state() const { return {{"rng", rng_text(rng_)}}; }

void GeneratorSource::load_state(const nlohmann::json& state) {
  rng_from_text(state.at("rng").get<std::string>(), rng_);
}

std::string rng_text(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

void rng_from_text(const std::string& text, std::mt19937_64& rng) {
  std::istringstream in(text);
  std::mt19937_64 read;
  in >> read;
  if (!in) throw std::invalid_argument("a saved random stream does not read back");
  rng = read;
}

}  // namespace ppo
