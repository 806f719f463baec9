// Level files: one or more puzzles in a readable text format.
//
//   # a comment (outside boards); blank lines are ignored
//   size 4                 board side, required, in [2, 16]
//   colors single          single | multi; optional, default single
//   optimal 5              optional: the known optimal number of moves
//   covered 1 2 b          multi-color only: target 'b' lies under the tile drawn at row 1,
//                          column 2 (0-based); one line per covered target
//   board                  then exactly `size` rows of `size` cells, then `end`
//   #..T
//   ....
//   .#x.
//   *...
//   end
//
// Cells: '#' blocked, '.' empty; single-color: 'T' tile, 'x' target, '*' tile on a target;
// multi-color: 'A'..'H' the tile of color 0..7, 'a'..'h' its target (a board with k colors
// uses the first k letters, each tile and each target once). Inside a board every line is a
// row ('#' is a cell there, not a comment). The keys of the next puzzle follow `end`.
// save then load gives back the same puzzles (single-color tiles and targets sorted, as
// canonicalize() leaves them); the text written is what format_levels returns.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "puzzle.hpp"

namespace ppo {

// "<file>:<line>: <what>"; line 0 when the problem is not on a line (unreadable file).
class LevelError : public std::runtime_error {
 public:
  LevelError(const std::string& file, int line, const std::string& what);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& problem() const { return problem_; }  // <what> alone

 private:
  std::string file_;
  int line_;
  std::string problem_;
};

// A puzzle with the lines it came from, so that checks made after parsing (the solver's:
// level_set.hpp) still name the line.
struct LevelEntry {
  Puzzle puzzle;
  int line = 0;          // the puzzle's first line (its first key, or `board`)
  int optimal_line = 0;  // the `optimal` line, 0 when the puzzle has none
};

// `source` names the text in error messages (a file path).
std::vector<LevelEntry> parse_level_entries(const std::string& text, const std::string& source);
std::vector<LevelEntry> load_level_entries(const std::string& path);
std::vector<Puzzle> parse_levels(const std::string& text, const std::string& source);
std::vector<Puzzle> load_levels(const std::string& path);
std::string format_level(const Puzzle& puzzle);  // validates; throws std::invalid_argument
std::string format_levels(const std::vector<Puzzle>& puzzles);  // blank line between puzzles
void save_levels(const std::string& path, const std::vector<Puzzle>& puzzles);  // LevelError

}  // namespace ppo
