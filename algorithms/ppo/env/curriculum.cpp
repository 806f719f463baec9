#include "curriculum.hpp"

#include <algorithm>
#include <stdexcept>

#include "solver.hpp"

namespace ppo {

void Curriculum::check_options() const {
  if (options_.window < 1) throw std::invalid_argument("curriculum: window must be >= 1");
  if (options_.level_step < 1) throw std::invalid_argument("curriculum: level_step must be >= 1");
  if (!(options_.threshold >= 0.0 && options_.threshold <= 1.0))
    throw std::invalid_argument("curriculum: threshold must be in [0, 1]");
}

Curriculum::Curriculum(const GeneratorSpec& spec, const CurriculumOptions& options)
    : options_(options), generated_(true), spec_(spec), rng_(options.seed) {
  check_options();
  validate(spec_);
  min_level_ = spec_.min_moves;
  max_level_ = spec_.max_moves;
  level_ = std::clamp(options_.start_level, min_level_, max_level_);
  ring_.assign(options_.window, 0);
}

Curriculum::Curriculum(std::vector<Puzzle> pool, const CurriculumOptions& options)
    : options_(options), generated_(false), rng_(options.seed) {
  check_options();
  for (Puzzle& p : pool) {
    validate(p);
    if (p.optimal < 0) {
      SolveOptions o;
      o.want_path = false;
      const SolveResult r = solve(p, o);
      if (!r.solved()) continue;
      p.optimal = r.moves;
    }
    pool_.push_back(std::move(p));
  }
  if (pool_.empty()) throw std::invalid_argument("curriculum: no solvable puzzles in the pool");
  std::stable_sort(pool_.begin(), pool_.end(),
                   [](const Puzzle& a, const Puzzle& b) { return a.optimal < b.optimal; });
  min_level_ = pool_.front().optimal;
  max_level_ = pool_.back().optimal;
  level_ = std::clamp(options_.start_level, min_level_, max_level_);
  ring_.assign(options_.window, 0);
}

Puzzle Curriculum::next() {
  if (generated_) {
    GeneratorSpec s = spec_;
    s.max_moves = level_;
    return generate_puzzle(s, rng_);
  }
  const auto end = std::upper_bound(pool_.begin(), pool_.end(), level_,
                                    [](int lv, const Puzzle& p) { return lv < p.optimal; });
  const size_t n = static_cast<size_t>(end - pool_.begin());  // >= 1: level >= min_level
  return pool_[uniform_index(rng_, n)];
}

void Curriculum::report(bool solved) {
  const int w = options_.window;
  if (count_ == w) solved_in_window_ -= ring_[head_];
  else ++count_;
  ring_[head_] = solved ? 1 : 0;
  solved_in_window_ += ring_[head_];
  head_ = (head_ + 1) % w;
  if (count_ == w && level_ < max_level_ &&
      static_cast<double>(solved_in_window_) >= options_.threshold * w) {
    level_ = std::min(level_ + options_.level_step, max_level_);
    if (!generated_) {  // skip lengths the pool lacks: the next level admits new puzzles
      const auto it = std::lower_bound(pool_.begin(), pool_.end(), level_,
                                       [](const Puzzle& p, int lv) { return p.optimal < lv; });
      level_ = it->optimal;  // exists: level_ <= max_level_ = the last one's
    }
    head_ = count_ = solved_in_window_ = 0;
  }
}

nlohmann::json Curriculum::state() const {
  return {{"level", level_},   {"window", ring_},  {"head", head_}, {"count", count_},
          {"solved", solved_in_window_}, {"rng", rng_text(rng_)}};
}

void Curriculum::load_state(const nlohmann::json& state) {
  const int level = state.at("level").get<int>();
  if (level < min_level_ || level > max_level_)
    throw std::invalid_argument("the saved curriculum level " + std::to_string(level) + " is not in [" +
                                std::to_string(min_level_) + ", " + std::to_string(max_level_) + "]");
  rng_from_text(state.at("rng").get<std::string>(), rng_);
  level_ = level;
  const auto window = state.at("window").get<std::vector<uint8_t>>();
  if (window.size() != ring_.size()) {
    head_ = count_ = solved_in_window_ = 0;
    return;
  }
  ring_ = window;
  head_ = state.at("head").get<int>();
  count_ = state.at("count").get<int>();
  solved_in_window_ = state.at("solved").get<int>();
}

double Curriculum::solve_rate() const {
  return count_ ? static_cast<double>(solved_in_window_) / count_ : 0.0;
}

}  // namespace ppo
