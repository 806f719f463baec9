// 9x9 Sudoku for TRM's Sudoku task: a bitmask backtracking solver (which also counts
// solutions, to prove a puzzle unique), a generator of random solved grids and of puzzles
// with a unique solution, the reference's augmentation (shuffle_sudoku in
// build_sudoku_dataset.py) and its token encoding. Sudoku-Extreme itself cannot be
// downloaded here; the generator gives datasets of the same format for training and tests.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <string>

namespace trm {

using SudokuGrid = std::array<uint8_t, 81>;  // 0 = blank, 1..9 digits, row-major

// The givens a generated puzzle may have: 17 is the fewest any Sudoku with a unique solution
// has (McGuire et al. 2012), 81 a full grid. make_puzzle enforces them; the builder's options
// and TRM's config table (build.min_givens, build.max_givens) take their bounds from here.
constexpr int kMinSudokuGivens = 17, kMaxSudokuGivens = 81;

// Number of solutions, counting stops at `limit` (limit 2 answers "unique?"). A grid whose
// givens already conflict has 0. Cells above 9 throw std::invalid_argument.
int count_solutions(const SudokuGrid&, int limit);
// Fills the grid in place with its first solution; false (grid unchanged) if there is none.
bool solve(SudokuGrid&);
// A complete grid obeying the row, column and box rules.
bool is_valid_solution(const SudokuGrid&);
// Every given (non-blank) cell of `puzzle` equals the same cell of `solution`.
bool consistent(const SudokuGrid& puzzle, const SudokuGrid& solution);
int count_givens(const SudokuGrid&);
SudokuGrid random_solution(std::mt19937_64&);
// A puzzle with a unique solution (the given one) and exactly `givens` filled cells when
// reachable: cells are removed in random order, each removal kept only if the solution stays
// unique; when no more can be removed, the puzzle keeps more givens than asked. Large
// `givens` (few blanks) is quick; kMinSudokuGivens..kMaxSudokuGivens accepted, else
// std::invalid_argument.
SudokuGrid make_puzzle(const SudokuGrid& solution, int givens, std::mt19937_64&);

struct SudokuPair {
  SudokuGrid puzzle, solution;
};
// The reference's shuffle_sudoku: a digit permutation (blank stays blank), a transpose with
// probability 0.5, a band shuffle and a row-within-band shuffle, a stack shuffle and a
// column-within-stack shuffle; the same map applied to puzzle and solution.
SudokuPair augment(const SudokuPair&, std::mt19937_64&);

// Tokens as the reference stores them: pad 0, blank 1, digits 1..9 -> 2..10 (value + 1).
std::array<uint8_t, 81> to_tokens(const SudokuGrid&);
// The inverse (tokens 1..10); other tokens throw std::invalid_argument.
SudokuGrid from_tokens(const std::array<uint8_t, 81>&);
// 81 characters, '.' for a blank (for logs and test messages).
std::string to_string(const SudokuGrid&);

}  // namespace trm
