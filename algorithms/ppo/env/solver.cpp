#include "solver.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace ppo {

namespace {

uint64_t pack(const int* cells, int n, bool sort) {
  int tmp[kMaxTiles];
  std::copy(cells, cells + n, tmp);
  if (sort) {
    for (int i = 1; i < n; ++i) {  // insertion sort, n <= 8
      const int v = tmp[i];
      int j = i - 1;
      for (; j >= 0 && tmp[j] > v; --j) tmp[j + 1] = tmp[j];
      tmp[j + 1] = v;
    }
  }
  uint64_t key = 0;
  for (int i = 0; i < n; ++i) key |= static_cast<uint64_t>(tmp[i]) << (8 * i);
  return key;
}

void unpack(uint64_t key, int n, int* cells) {
  for (int i = 0; i < n; ++i) cells[i] = static_cast<int>((key >> (8 * i)) & 0xff);
}

struct Node {
  uint64_t parent;
  int8_t move;  // the move that reached it; -1 at the root
  int depth;
};

}  // namespace

SolveResult solve(const Puzzle& puzzle, const SolveOptions& options) {
  return solve(puzzle, initial_state(puzzle), options);
}

SolveResult solve(const Puzzle& puzzle, const PuzzleState& state, const SolveOptions& options) {
  validate(puzzle);
  const int n = static_cast<int>(puzzle.tiles.size());
  if (static_cast<int>(state.size()) != n)
    throw std::invalid_argument("solve: state has the wrong number of tiles");
  const bool sort = !puzzle.multi_color;
  const uint64_t goal = pack(puzzle.targets.data(), n, sort);
  const uint64_t start = pack(state.data(), n, sort);

  SolveResult result;
  std::unordered_map<uint64_t, Node> seen;
  seen.reserve(1024);
  std::vector<uint64_t> frontier{start}, next;
  seen.emplace(start, Node{start, -1, 0});
  result.states_explored = 1;
  auto finish = [&](uint64_t key) {
    result.status = SolveResult::Status::kSolved;
    result.moves = seen.at(key).depth;
    if (options.want_path) {
      for (uint64_t k = key; seen.at(k).move >= 0; k = seen.at(k).parent)
        result.path.push_back(seen.at(k).move);
      std::reverse(result.path.begin(), result.path.end());
    }
    return result;
  };
  if (start == goal) return finish(start);
  int cells[kMaxTiles];
  for (int depth = 1; !frontier.empty(); ++depth) {
    next.clear();
    for (uint64_t key : frontier) {
      for (int m = 0; m < kNumMoves; ++m) {
        unpack(key, n, cells);
        if (!apply_move(puzzle, cells, n, m)) continue;
        const uint64_t child = pack(cells, n, sort);
        if (!seen.emplace(child, Node{key, static_cast<int8_t>(m), depth}).second) continue;
        ++result.states_explored;
        if (child == goal) return finish(child);
        if (result.states_explored >= options.max_states) {
          result.status = SolveResult::Status::kLimitExceeded;
          return result;
        }
        next.push_back(child);
      }
    }
    frontier.swap(next);
  }
  result.status = SolveResult::Status::kUnsolvable;
  return result;
}

Reachable reachable_states(const Puzzle& puzzle, int max_depth, int64_t max_states) {
  validate(puzzle);
  const int n = static_cast<int>(puzzle.tiles.size());
  const bool sort = !puzzle.multi_color;
  Reachable out;
  std::unordered_map<uint64_t, int> seen;
  std::vector<uint64_t> frontier{pack(puzzle.tiles.data(), n, sort)}, next;
  seen.emplace(frontier[0], 0);
  auto record = [&](uint64_t key, int depth) {
    PuzzleState s(n);
    unpack(key, n, s.data());
    out.states.push_back(std::move(s));
    out.depth.push_back(depth);
  };
  record(frontier[0], 0);
  int cells[kMaxTiles];
  for (int depth = 1; depth <= max_depth && !frontier.empty(); ++depth) {
    next.clear();
    for (uint64_t key : frontier) {
      for (int m = 0; m < kNumMoves; ++m) {
        unpack(key, n, cells);
        if (!apply_move(puzzle, cells, n, m)) continue;
        const uint64_t child = pack(cells, n, sort);
        if (!seen.emplace(child, depth).second) continue;
        if (static_cast<int64_t>(out.states.size()) >= max_states) {
          out.complete = false;
          return out;
        }
        record(child, depth);
        next.push_back(child);
      }
    }
    frontier.swap(next);
  }
  return out;
}

}  // namespace ppo
