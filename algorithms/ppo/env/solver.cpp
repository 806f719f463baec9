#include "solver.hpp"

#include <algorithm>
#include <limits>
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

// What a breadth-first search does with a configuration it reached.
enum class Next { kSeen, kExpand, kStop };

// Breadth-first over the configurations reachable from `start` (tiles packed as pack() does,
// sorted for single-color puzzles), at most max_depth moves away: every move of every
// configuration of the frontier, in move order, is handed to visit(child, parent, move,
// depth), which says whether the child was seen before (skipped), is to be expanded at the
// next depth, or ends the search.
template <class Visit>
void breadth_first(const Puzzle& puzzle, uint64_t start, int max_depth, Visit visit) {
  const int n = static_cast<int>(puzzle.tiles.size());
  const bool sort = !puzzle.multi_color;
  std::vector<uint64_t> frontier{start}, next;
  int cells[kMaxTiles];
  for (int depth = 1; depth <= max_depth && !frontier.empty(); ++depth) {
    next.clear();
    for (uint64_t key : frontier) {
      for (int m = 0; m < kNumMoves; ++m) {
        unpack(key, n, cells);
        if (!apply_move(puzzle, cells, n, m)) continue;
        const uint64_t child = pack(cells, n, sort);
        const Next what = visit(child, key, m, depth);
        if (what == Next::kStop) return;
        if (what == Next::kExpand) next.push_back(child);
      }
    }
    frontier.swap(next);
  }
}

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
  };
  if (start == goal) {
    finish(start);
    return result;
  }
  result.status = SolveResult::Status::kUnsolvable;  // unless the search finds the goal or runs out of states
  breadth_first(puzzle, start, std::numeric_limits<int>::max(), [&](uint64_t child, uint64_t parent, int m, int depth) {
    if (!seen.emplace(child, Node{parent, static_cast<int8_t>(m), depth}).second) return Next::kSeen;
    ++result.states_explored;
    if (child == goal) {
      finish(child);
      return Next::kStop;
    }
    if (result.states_explored >= options.max_states) {
      result.status = SolveResult::Status::kLimitExceeded;
      return Next::kStop;
    }
    return Next::kExpand;
  });
  return result;
}

Reachable reachable_states(const Puzzle& puzzle, int max_depth, int64_t max_states) {
  validate(puzzle);
  const int n = static_cast<int>(puzzle.tiles.size());
  const bool sort = !puzzle.multi_color;
  Reachable out;
  std::unordered_map<uint64_t, int> seen;
  const uint64_t start = pack(puzzle.tiles.data(), n, sort);
  seen.emplace(start, 0);
  auto record = [&](uint64_t key, int depth) {
    PuzzleState s(n);
    unpack(key, n, s.data());
    out.states.push_back(std::move(s));
    out.depth.push_back(depth);
  };
  record(start, 0);
  breadth_first(puzzle, start, max_depth, [&](uint64_t child, uint64_t, int, int depth) {
    if (!seen.emplace(child, depth).second) return Next::kSeen;
    if (static_cast<int64_t>(out.states.size()) >= max_states) {
      out.complete = false;
      return Next::kStop;
    }
    record(child, depth);
    return Next::kExpand;
  });
  return out;
}

}  // namespace ppo
