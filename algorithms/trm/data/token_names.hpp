// The names of a dataset's tokens: what `solve` prints for each token id and what
// solve.puzzle reads back. A dataset names them in the optional dataset.json key
// "token_names" (a list of vocab_size strings, element i naming token i); mlhost's Sudoku and
// maze builders write it. The reference's builders do not, so a dataset without it gets the
// names of the reference's layout it has (Sudoku-Extreme, 30x30 mazes, ARC), else the token
// ids themselves: nothing is guessed from a shape that a user's own dataset could share,
// but for those three.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trm {

// What dataset.json's "token_names" must be: vocab_size strings, each non-empty, free of
// control characters, no two alike; when any name is longer than one character (names are
// then read back separated by whitespace), none may hold whitespace. The reason it is not,
// or "" when it is.
std::string token_names_problem(const std::vector<std::string>& names, int64_t vocab_size);

// The names mlhost's builders write. Sudoku: pad "_", blank ".", digits "1".."9". Mazes:
// pad "_", then "# SGo" (wall, open, start, goal, path). ARC (the reference's encoding, which
// build-data keeps byte for byte, so these are never written): pad ".", end of grid "#",
// colours "0".."9".
std::vector<std::string> sudoku_token_names();
std::vector<std::string> maze_token_names();
std::vector<std::string> arc_token_names();

// UTF-8 code points of a string (its continuation bytes not counted): a name's width.
size_t code_points(const std::string& s);

struct TokenNaming {
  std::vector<std::string> names;
  std::string source;  // where they came from, for the log: "dataset.json's token_names", ...
};

// The names for a dataset whose dataset.json gives `given` (empty when it names none): those,
// else the reference's layout of this vocabulary and length (Sudoku 11 x 81, mazes 6 x 900,
// ARC 12 x 900), else the ids ("0", "1", ...).
TokenNaming token_naming(const std::vector<std::string>& given, int64_t vocab_size, int64_t seq_len);

}  // namespace trm
