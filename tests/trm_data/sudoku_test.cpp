// Sudoku: solver, solution counting, generator (unique puzzles with the asked givens),
// the reference's augmentation and token encoding.
#include <gtest/gtest.h>

#include <chrono>

#include "data/sudoku.hpp"

namespace {

using namespace trm;

SudokuGrid parse(const std::string& s) {
  EXPECT_EQ(s.size(), 81u);
  SudokuGrid g{};
  for (int i = 0; i < 81; ++i) g[static_cast<size_t>(i)] = s[static_cast<size_t>(i)] == '.' ? 0 : static_cast<uint8_t>(s[static_cast<size_t>(i)] - '0');
  return g;
}

TEST(Sudoku, SolvesAKnownHardPuzzle) {
  // Arto Inkala's "world's hardest sudoku" (2012) and its unique solution.
  const SudokuGrid p = parse("8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4..");
  const SudokuGrid want = parse("812753649943682175675491283154237896369845721287169534521974368438526917796318452");
  EXPECT_EQ(count_solutions(p, 2), 1);
  SudokuGrid g = p;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(solve(g));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 0.5);
  EXPECT_EQ(g, want);
  EXPECT_TRUE(is_valid_solution(g));
  EXPECT_TRUE(consistent(p, g));
}

TEST(Sudoku, CountsAndRejects) {
  EXPECT_EQ(count_solutions(SudokuGrid{}, 2), 2);
  EXPECT_EQ(count_solutions(SudokuGrid{}, 1), 1);
  SudokuGrid bad{};
  bad[0] = 5;
  bad[8] = 5;  // two 5s in row 0
  EXPECT_EQ(count_solutions(bad, 2), 0);
  SudokuGrid copy = bad;
  EXPECT_FALSE(solve(copy));
  EXPECT_EQ(copy, bad);
  bad[8] = 10;
  EXPECT_THROW(count_solutions(bad, 2), std::invalid_argument);
  // A grid with no conflicting givens but no solution: row 0 misses only 9, column 8 has 9.
  SudokuGrid stuck = parse("12345678." "........9" + std::string(63, '.'));
  EXPECT_EQ(count_solutions(stuck, 2), 0);
}

TEST(Sudoku, ValidityChecks) {
  std::mt19937_64 rng(1);
  SudokuGrid s = random_solution(rng);
  EXPECT_TRUE(is_valid_solution(s));
  std::swap(s[0], s[1]);
  EXPECT_FALSE(is_valid_solution(s));
  s[0] = 0;
  EXPECT_FALSE(is_valid_solution(s));
  SudokuGrid p{};
  p[4] = s[4];
  EXPECT_TRUE(consistent(p, s));
  p[4] = static_cast<uint8_t>(s[4] % 9 + 1);
  EXPECT_FALSE(consistent(p, s));
}

TEST(Sudoku, GeneratedPuzzlesAreUniqueWithTheAskedGivens) {
  std::mt19937_64 rng(2024);
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 60; ++i) {
    const SudokuGrid sol = random_solution(rng);
    ASSERT_TRUE(is_valid_solution(sol));
    const int givens = 30 + i % 52;  // 30..81
    const SudokuGrid p = make_puzzle(sol, givens, rng);
    EXPECT_EQ(count_givens(p), givens) << to_string(p);
    EXPECT_EQ(count_solutions(p, 2), 1) << to_string(p);
    EXPECT_TRUE(consistent(p, sol));
    SudokuGrid g = p;
    ASSERT_TRUE(solve(g));
    EXPECT_EQ(g, sol);
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);
  // Deterministic in the generator's seed.
  std::mt19937_64 a(5), b(5);
  EXPECT_EQ(make_puzzle(random_solution(a), 40, a), make_puzzle(random_solution(b), 40, b));
  // Unreachable few givens: still unique, with more givens than asked.
  const SudokuGrid sol = random_solution(rng);
  const SudokuGrid p = make_puzzle(sol, kMinSudokuGivens, rng);
  EXPECT_GE(count_givens(p), kMinSudokuGivens);
  EXPECT_EQ(count_solutions(p, 2), 1);
  EXPECT_THROW(make_puzzle(sol, kMinSudokuGivens - 1, rng), std::invalid_argument);
  EXPECT_THROW(make_puzzle(sol, kMaxSudokuGivens + 1, rng), std::invalid_argument);
  EXPECT_THROW(make_puzzle(SudokuGrid{}, 40, rng), std::invalid_argument);
}

TEST(Sudoku, AugmentationKeepsPairsValidAndUnique) {
  std::mt19937_64 rng(77);
  int transposed_or_changed = 0;
  for (int i = 0; i < 50; ++i) {
    const SudokuGrid sol = random_solution(rng);
    const SudokuPair in{make_puzzle(sol, 35, rng), sol};
    const SudokuPair out = augment(in, rng);
    EXPECT_TRUE(is_valid_solution(out.solution));
    EXPECT_TRUE(consistent(out.puzzle, out.solution));
    EXPECT_EQ(count_givens(out.puzzle), 35);  // blanks stay blank
    EXPECT_EQ(count_solutions(out.puzzle, 2), 1);
    SudokuGrid g = out.puzzle;
    ASSERT_TRUE(solve(g));
    EXPECT_EQ(g, out.solution);
    transposed_or_changed += out.solution != sol;
  }
  EXPECT_GT(transposed_or_changed, 45);
}

TEST(Sudoku, Tokens) {
  SudokuGrid g{};
  g[0] = 9;
  g[1] = 1;
  const auto t = to_tokens(g);
  EXPECT_EQ(t[0], 10);
  EXPECT_EQ(t[1], 2);
  EXPECT_EQ(t[2], 1);  // blank
  EXPECT_EQ(from_tokens(t), g);
  auto bad = t;
  bad[5] = 0;  // pad is not a cell
  EXPECT_THROW(from_tokens(bad), std::invalid_argument);
  bad[5] = 11;
  EXPECT_THROW(from_tokens(bad), std::invalid_argument);
  EXPECT_EQ(to_string(g).substr(0, 3), "91.");
}

}  // namespace
