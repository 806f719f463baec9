// The user's levels as the commands read them: a level file, or a folder of them, with every
// puzzle solved by the BFS solver as it is loaded. What parsing alone cannot see is checked
// here, each problem a LevelError naming the file and line:
//   - a puzzle the solver finds no solution for, or gives up on (solver_states configurations);
//   - a puzzle solved before its first move (nothing to play);
//   - an `optimal N` line that is not the solver's optimum. A wrong claim is refused, not
//     replaced: the file is not what its author thinks (a board edited after its optimum was
//     written, or an optimum from other rules), and every figure over it (steps / optimal,
//     the curriculum's order) would silently rest on a number the author never checked;
//   - a puzzle larger than the boards the network sees (max_size), or, for training, one whose
//     optimum exceeds the step limit (max_steps): no episode could solve it.
// A puzzle without an `optimal` line gets the solver's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "level_file.hpp"
#include "puzzle.hpp"

namespace ppo {

struct LevelLimits {
  int max_size = kMaxPuzzleSize;     // the largest board side accepted
  int max_steps = 0;                 // > 0: refuse puzzles whose optimum is longer
  std::string max_size_why;          // what sets max_size, for the message ("puzzle.size")
  std::string max_steps_why;         // what sets max_steps, for the message
  int64_t solver_states = 2'000'000;  // the solver's cap per puzzle
};

// Solves and checks every entry of `file` (see above); returns the puzzles with their optimum.
std::vector<Puzzle> check_levels(std::vector<LevelEntry> entries, const std::string& file, const LevelLimits& limits);

// Puzzles from a level file, or from every level file of a folder (its files ending in .txt or
// .lvl, in name order; not its subfolders), each checked. A path that does not exist, a folder
// with no level file, or a file with no puzzle is a LevelError (line 0).
struct LevelSet {
  std::vector<Puzzle> puzzles;
  std::vector<std::string> files;  // the files read, in order
  int max_size = 0;                // the largest board
  int max_optimal = 0;             // the longest optimum
};
LevelSet load_level_set(const std::string& path, const LevelLimits& limits);

}  // namespace ppo
