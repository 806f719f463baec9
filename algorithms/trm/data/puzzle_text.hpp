// A puzzle as people read and type it, in its dataset's token names (token_names.hpp): the
// lines `solve` prints, and solve.puzzle read back into tokens. A sequence whose length is a
// square (16, 81, 900) is a square grid, anything else one row.
//
// One-character names (Sudoku's, the maze's, ARC's, a vocabulary of at most 10 ids) are
// printed a cell per character, with a space between cells unless a name is itself a space;
// read back a character per cell, line breaks, and spaces that are not a name, skipped.
// Longer names are printed right-aligned to the widest, a space between cells, and read back
// as whitespace-separated names.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trm {

// The rows and columns a sequence of `seq_len` cells is shown as.
struct GridShape {
  int64_t rows = 1, cols = 0;
};
GridShape grid_shape(int64_t seq_len);

// `tokens` as lines of names; a token outside `names` prints as "?<id>".
std::vector<std::string> puzzle_lines(const std::vector<int32_t>& tokens, const std::vector<std::string>& names);

// `text` as `seq_len` tokens. Errors are mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the
// config field `field`: an unknown token (with its position and the names there are), or a
// count other than seq_len (with the grid it would be).
std::vector<int32_t> parse_puzzle(const std::string& text, const std::vector<std::string>& names, int64_t seq_len,
                                  const std::string& field);

}  // namespace trm
