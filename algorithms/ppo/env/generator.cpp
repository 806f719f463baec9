#include "generator.hpp"

#include <stdexcept>
#include <string>

#include "solver.hpp"

namespace ppo {

double uniform_unit(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

void validate(const GeneratorSpec& s) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("generator spec: " + what); };
  if (s.size < kMinPuzzleSize || s.size > kMaxPuzzleSize)
    bad("size " + std::to_string(s.size) + " out of range [" + std::to_string(kMinPuzzleSize) +
        ", " + std::to_string(kMaxPuzzleSize) + "]");
  if (s.tiles < 1 || s.tiles > kMaxTiles)
    bad("tiles " + std::to_string(s.tiles) + " out of range [1, " + std::to_string(kMaxTiles) + "]");
  if (s.tiles > s.size * s.size / 2) bad("too many tiles for the board");
  if (!(s.blocked_density >= 0.0 && s.blocked_density <= kMaxBlockedDensity))
    bad("blocked_density " + std::to_string(s.blocked_density) + " out of range [0, " +
        std::to_string(kMaxBlockedDensity) + "]");
  if (s.min_moves < 1) bad("min_moves must be >= 1");
  if (s.max_moves < s.min_moves) bad("max_moves must be >= min_moves");
  if (s.max_attempts < 1) bad("max_attempts must be >= 1");
  if (s.max_states < 1) bad("max_states must be >= 1");
}

Puzzle generate_puzzle(const GeneratorSpec& spec, std::mt19937_64& rng) {
  validate(spec);
  const int cells = spec.size * spec.size;
  for (int attempt = 0; attempt < spec.max_attempts; ++attempt) {
    Puzzle p;
    p.size = spec.size;
    p.multi_color = spec.multi_color;
    p.blocked.assign(cells, 0);
    std::vector<int> free_cells;
    for (int c = 0; c < cells; ++c) {
      if (uniform_unit(rng) < spec.blocked_density) p.blocked[c] = 1;
      else free_cells.push_back(c);
    }
    if (static_cast<int>(free_cells.size()) < spec.tiles + 1) continue;
    for (int i = 0; i < spec.tiles; ++i) {  // partial Fisher-Yates
      const int j = i + static_cast<int>(mlh::uniform_index(rng, free_cells.size() - i));
      std::swap(free_cells[i], free_cells[j]);
      p.tiles.push_back(free_cells[i]);
    }
    p.targets = p.tiles;  // placeholder for reachable_states' validation
    canonicalize(p);
    const Reachable r = reachable_states(p, spec.max_moves, spec.max_states);
    // Distances present in range (BFS order: depth ascends).
    std::vector<int> first(spec.max_moves + 2, -1);
    for (size_t i = 0; i < r.depth.size(); ++i)
      if (first[r.depth[i]] < 0) first[r.depth[i]] = static_cast<int>(i);
    std::vector<int> depths;
    for (int d = spec.min_moves; d <= spec.max_moves; ++d)
      if (first[d] >= 0) depths.push_back(d);
    // When the BFS was cut short the last depth is incomplete; it still holds states at
    // exactly that distance, which is all that matters.
    if (depths.empty()) continue;
    const int d = depths[mlh::uniform_index(rng, depths.size())];
    int end = first[d];
    while (end < static_cast<int>(r.depth.size()) && r.depth[end] == d) ++end;
    const int pick = first[d] + static_cast<int>(mlh::uniform_index(rng, end - first[d]));
    p.targets = r.states[pick];
    canonicalize(p);
    SolveOptions o;
    o.want_path = false;
    o.max_states = spec.max_states * 4;
    const SolveResult s = solve(p, o);
    if (!s.solved() || s.moves != d) continue;  // cannot happen; kept as a check
    p.optimal = d;
    return p;
  }
  throw std::runtime_error("generator: no puzzle with optimal length in [" +
                           std::to_string(spec.min_moves) + ", " +
                           std::to_string(spec.max_moves) + "] after " +
                           std::to_string(spec.max_attempts) + " attempts (size " +
                           std::to_string(spec.size) + ", " + std::to_string(spec.tiles) +
                           " tiles, blocked_density " + std::to_string(spec.blocked_density) + ")");
}

}  // namespace ppo
