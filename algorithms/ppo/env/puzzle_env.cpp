#include "puzzle_env.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ppo {

PuzzleEnv::PuzzleEnv(std::shared_ptr<PuzzleSource> source, const PuzzleEnvOptions& options)
    : source_(std::move(source)), options_(options) {
  if (!source_) throw std::invalid_argument("PuzzleEnv: no puzzle source");
  if (options_.obs_size < kMinPuzzleSize || options_.obs_size > kMaxPuzzleSize)
    throw std::invalid_argument("PuzzleEnv: obs_size " + std::to_string(options_.obs_size) +
                                " out of range [" + std::to_string(kMinPuzzleSize) + ", " +
                                std::to_string(kMaxPuzzleSize) + "]");
  if (options_.max_steps < 1) throw std::invalid_argument("PuzzleEnv: max_steps must be >= 1");
  const int s = options_.obs_size;
  dist_any_.assign(s * s, 1.0f);
  queue_.reserve(s * s);
}

std::vector<int64_t> PuzzleEnv::observation_shape() const {
  return {kNumPlanes, options_.obs_size, options_.obs_size};
}

void PuzzleEnv::reset(std::mt19937_64& rng, float* observation) {
  (void)rng;  // the source has its own rng, shared by all envs
  start(source_->next(), observation);
}

void PuzzleEnv::start(const Puzzle& puzzle, float* observation) {
  load_puzzle(puzzle);
  state_ = puzzle_.tiles;
  steps_ = 0;
  done_ = false;
  observe(observation);
}

void PuzzleEnv::load_puzzle(const Puzzle& puzzle) {
  validate(puzzle);
  if (puzzle.size > options_.obs_size)
    throw std::invalid_argument("PuzzleEnv: puzzle size " + std::to_string(puzzle.size) +
                                " larger than obs_size " + std::to_string(options_.obs_size));
  puzzle_ = puzzle;
  distance_field(puzzle_.targets, dist_any_);
  const size_t k = puzzle_.targets.size();
  if (puzzle_.multi_color) {
    if (dist_own_.size() < k) dist_own_.resize(k);
    for (size_t i = 0; i < k; ++i) {
      one_.assign(1, puzzle_.targets[i]);
      distance_field(one_, dist_own_[i]);
    }
  }
}

// Layout: version, size, multi_color, optimal, K, steps, done, last episode (solved, steps,
// optimal), then blocked (size * size), tiles, targets and the tiles' cells now (K each).
namespace {
constexpr double kSnapshotVersion = 1;
constexpr size_t kSnapshotHeader = 10;
}  // namespace

std::vector<double> PuzzleEnv::snapshot() const {
  const size_t k = puzzle_.tiles.size();
  std::vector<double> s = {kSnapshotVersion, double(puzzle_.size), double(puzzle_.multi_color), double(puzzle_.optimal),
                           double(k), double(steps_), double(done_), double(last_.solved), double(last_.steps),
                           double(last_.optimal)};
  s.insert(s.end(), puzzle_.blocked.begin(), puzzle_.blocked.end());
  for (const std::vector<int>* cells : {&puzzle_.tiles, &puzzle_.targets, &state_})
    s.insert(s.end(), cells->begin(), cells->end());
  return s;
}

void PuzzleEnv::restore(const std::vector<double>& s) {
  auto bad = [](const std::string& why) { return std::invalid_argument("PuzzleEnv::restore: " + why); };
  if (s.size() < kSnapshotHeader || s[0] != kSnapshotVersion) throw bad("not a puzzle snapshot");
  const auto size = static_cast<size_t>(s[1]), k = static_cast<size_t>(s[4]);
  if (size > kMaxPuzzleSize || k > kMaxTiles || s.size() != kSnapshotHeader + size * size + 3 * k)
    throw bad("a snapshot of " + std::to_string(s.size()) + " values does not hold a puzzle");
  Puzzle p;
  p.size = static_cast<int>(size);
  p.multi_color = s[2] != 0;
  p.optimal = static_cast<int>(s[3]);
  auto next = s.begin() + kSnapshotHeader;
  auto take = [&next](size_t n, auto& out) {
    out.assign(next, next + static_cast<std::ptrdiff_t>(n));
    next += static_cast<std::ptrdiff_t>(n);
  };
  take(size * size, p.blocked);
  take(k, p.tiles);
  take(k, p.targets);
  PuzzleState cells;
  take(k, cells);
  for (int c : cells)
    if (c < 0 || c >= p.num_cells() || p.blocked[c]) throw bad("a tile on cell " + std::to_string(c));
  load_puzzle(p);
  state_ = std::move(cells);
  steps_ = static_cast<int>(s[5]);
  done_ = s[6] != 0;
  last_ = {s[7] != 0, static_cast<int>(s[8]), static_cast<int>(s[9])};
}

// BFS over the board's non-blocked cells from `sources`, written in obs coordinates.
void PuzzleEnv::distance_field(const std::vector<int>& sources, std::vector<float>& out) {
  const int s = options_.obs_size, n = puzzle_.size;
  const float scale = 1.0f / (2.0f * static_cast<float>(s));
  std::vector<int>& dist = queue_;  // per-cell distance, -1 = not reached
  dist.assign(n * n, -1);
  std::vector<int> order;
  order.reserve(n * n);
  for (int c : sources) {
    dist[c] = 0;
    order.push_back(c);
  }
  for (size_t h = 0; h < order.size(); ++h) {
    const int c = order[h], r = c / n, col = c % n;
    const int nb[4] = {r > 0 ? c - n : -1, r < n - 1 ? c + n : -1, col > 0 ? c - 1 : -1,
                       col < n - 1 ? c + 1 : -1};
    for (int x : nb) {
      if (x < 0 || puzzle_.blocked[x] || dist[x] >= 0) continue;
      dist[x] = dist[c] + 1;
      order.push_back(x);
    }
  }
  out.assign(s * s, 1.0f);
  for (int c = 0; c < n * n; ++c)
    if (dist[c] >= 0) out[(c / n) * s + c % n] = std::min(1.0f, dist[c] * scale);
}

void PuzzleEnv::observe(float* o) const {
  const int s = options_.obs_size, n = puzzle_.size, plane = s * s;
  std::fill(o, o + kNumPlanes * plane, 0.0f);
  float* blocked = o;
  float* tiles = o + plane;
  float* targets = o + 2 * plane;
  float* dist = o + 3 * plane;
  float* tile_color = o + 4 * plane;
  float* target_color = o + 5 * plane;
  float* to_goal = o + 6 * plane;
  float* budget = o + 7 * plane;
  for (int r = 0; r < s; ++r)
    for (int c = 0; c < s; ++c)
      blocked[r * s + c] = (r >= n || c >= n || puzzle_.blocked[r * n + c]) ? 1.0f : 0.0f;
  std::copy(dist_any_.begin(), dist_any_.end(), dist);
  const int k = static_cast<int>(state_.size());
  auto at = [&](int cell) { return (cell / n) * s + cell % n; };
  for (int i = 0; i < k; ++i) {
    const int t = at(state_[i]), g = at(puzzle_.targets[i]);
    tiles[t] = 1.0f;
    targets[g] = 1.0f;
    tile_color[t] = puzzle_.multi_color ? static_cast<float>(i + 1) / k : 1.0f;
    target_color[g] = puzzle_.multi_color ? static_cast<float>(i + 1) / k : 1.0f;
    to_goal[t] = puzzle_.multi_color ? dist_own_[i][t] : dist_any_[t];
  }
  const float left = static_cast<float>(options_.max_steps - steps_) / options_.max_steps;
  std::fill(budget, budget + plane, left);
}

StepResult PuzzleEnv::step(int action, float* observation) {
  if (action < 0 || action >= kNumMoves)
    throw std::out_of_range("PuzzleEnv: action " + std::to_string(action) + " not in [0, 4)");
  if (done_) throw std::logic_error("PuzzleEnv: step after the episode ended (reset first)");
  StepResult r;
  r.invalid_move = !apply_move(puzzle_, state_, action);
  ++steps_;
  r.reward = options_.step_reward;
  if (is_solved(puzzle_, state_)) {
    r.reward += options_.solve_reward;
    r.terminated = true;
    r.solved = true;
  } else if (steps_ >= options_.max_steps) {
    r.reward += options_.fail_reward;
    r.terminated = true;
  }
  if (r.terminated) {
    done_ = true;
    last_.solved = r.solved;
    last_.steps = steps_;
    last_.optimal = puzzle_.optimal;
    source_->report(r.solved);
  }
  observe(observation);
  return r;
}

void PuzzleEnv::action_mask(uint8_t* mask) const {
  for (int m = 0; m < kNumMoves; ++m) mask[m] = move_changes(puzzle_, state_, m) ? 1 : 0;
}

}  // namespace ppo
