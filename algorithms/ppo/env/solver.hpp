// Breadth-first search over tile configurations: the optimal number of moves of a puzzle
// (every move costs 1; invalid moves are never taken). Single-color configurations are
// canonicalized as sorted cells (tiles are interchangeable); multi-color ones keep tile
// order. A configuration packs into 64 bits (one byte per tile).
#pragma once

#include <cstdint>
#include <vector>

#include "puzzle.hpp"

namespace ppo {

struct SolveOptions {
  int64_t max_states = 2'000'000;  // distinct configurations stored before giving up
  bool want_path = true;           // also return an optimal move sequence
};

struct SolveResult {
  enum class Status { kSolved, kUnsolvable, kLimitExceeded };
  Status status = Status::kUnsolvable;
  int moves = -1;                 // optimal length when kSolved (0: already solved)
  std::vector<int> path;          // an optimal move sequence when kSolved and want_path
  int64_t states_explored = 0;    // configurations stored
  bool solved() const { return status == Status::kSolved; }
};

// Solves from the puzzle's start (tiles) or from `state`. Validates the puzzle.
SolveResult solve(const Puzzle& puzzle, const SolveOptions& options = {});
SolveResult solve(const Puzzle& puzzle, const PuzzleState& state,
                  const SolveOptions& options = {});

// Every configuration reachable within max_depth moves with its distance (BFS order, so
// distances ascend), at most max_states of them. The generator picks targets from these.
struct Reachable {
  std::vector<PuzzleState> states;  // tile order (single-color: sorted)
  std::vector<int> depth;
  bool complete = true;  // false when max_states cut the search short
};
Reachable reachable_states(const Puzzle& puzzle, int max_depth, int64_t max_states);

}  // namespace ppo
