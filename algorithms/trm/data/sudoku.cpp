#include "sudoku.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <mlh/uniform_index.hpp>

namespace trm {
namespace {

constexpr uint16_t kAll = 0x3FE;  // bits 1..9

int box_of(int cell) { return (cell / 27) * 3 + (cell % 9) / 3; }

// Row, column and box masks of the digits used; the search fills the blank with the fewest
// candidates first (most constrained), which keeps typical puzzles far below a millisecond.
struct Solver {
  std::array<uint16_t, 9> row{}, col{}, box{};
  SudokuGrid g{};
  int limit = 1, found = 0;
  SudokuGrid first{};
  std::mt19937_64* rng = nullptr;  // random digit order (for random_solution)

  bool load(const SudokuGrid& grid) {
    g = grid;
    for (int c = 0; c < 81; ++c) {
      const int v = g[c];
      if (v > 9) throw std::invalid_argument("sudoku: cell " + std::to_string(c) + " holds " + std::to_string(v) + " (expected 0..9)");
      if (!v) continue;
      const uint16_t bit = uint16_t(1u << v);
      const int r = c / 9, k = c % 9, b = box_of(c);
      if ((row[r] | col[k] | box[b]) & bit) return false;  // conflicting givens
      row[r] |= bit;
      col[k] |= bit;
      box[b] |= bit;
    }
    return true;
  }

  void search() {
    int best = -1, best_count = 10;
    uint16_t best_mask = 0;
    for (int c = 0; c < 81; ++c) {
      if (g[c]) continue;
      const uint16_t m = kAll & ~(row[c / 9] | col[c % 9] | box[box_of(c)]);
      const int n = __builtin_popcount(m);
      if (n < best_count) {
        best = c;
        best_count = n;
        best_mask = m;
        if (n <= 1) break;
      }
    }
    if (best < 0) {
      if (found++ == 0) first = g;
      return;
    }
    if (best_count == 0) return;
    int digits[9], nd = 0;
    for (int v = 1; v <= 9; ++v)
      if (best_mask & (1u << v)) digits[nd++] = v;
    if (rng)
      for (int i = nd - 1; i > 0; --i) std::swap(digits[i], digits[(*rng)() % static_cast<uint64_t>(i + 1)]);
    const int r = best / 9, k = best % 9, b = box_of(best);
    for (int i = 0; i < nd && found < limit; ++i) {
      const uint16_t bit = uint16_t(1u << digits[i]);
      g[best] = static_cast<uint8_t>(digits[i]);
      row[r] |= bit;
      col[k] |= bit;
      box[b] |= bit;
      search();
      row[r] &= ~bit;
      col[k] &= ~bit;
      box[b] &= ~bit;
    }
    g[best] = 0;
  }
};

template <typename T, size_t N>
void shuffle(std::array<T, N>& a, std::mt19937_64& rng) {
  for (size_t i = N; i > 1; --i) std::swap(a[i - 1], a[mlh::uniform_index(rng, i)]);
}

}  // namespace

int count_solutions(const SudokuGrid& grid, int limit) {
  if (limit < 1) return 0;
  Solver s;
  if (!s.load(grid)) return 0;
  s.limit = limit;
  s.search();
  return std::min(s.found, limit);
}

bool solve(SudokuGrid& grid) {
  Solver s;
  if (!s.load(grid)) return false;
  s.limit = 1;
  s.search();
  if (!s.found) return false;
  grid = s.first;
  return true;
}

bool is_valid_solution(const SudokuGrid& g) {
  std::array<uint16_t, 9> row{}, col{}, box{};
  for (int c = 0; c < 81; ++c) {
    const int v = g[c];
    if (v < 1 || v > 9) return false;
    const uint16_t bit = uint16_t(1u << v);
    if ((row[c / 9] | col[c % 9] | box[box_of(c)]) & bit) return false;
    row[c / 9] |= bit;
    col[c % 9] |= bit;
    box[box_of(c)] |= bit;
  }
  return true;
}

bool consistent(const SudokuGrid& puzzle, const SudokuGrid& solution) {
  for (int c = 0; c < 81; ++c)
    if (puzzle[c] && puzzle[c] != solution[c]) return false;
  return true;
}

int count_givens(const SudokuGrid& g) {
  return static_cast<int>(std::count_if(g.begin(), g.end(), [](uint8_t v) { return v != 0; }));
}

SudokuGrid random_solution(std::mt19937_64& rng) {
  Solver s;
  s.load(SudokuGrid{});
  s.rng = &rng;
  s.limit = 1;
  s.search();
  return s.first;
}

SudokuGrid make_puzzle(const SudokuGrid& solution, int givens, std::mt19937_64& rng) {
  if (givens < kMinSudokuGivens || givens > kMaxSudokuGivens)
    throw std::invalid_argument("make_puzzle: givens must be in " + std::to_string(kMinSudokuGivens) + ".." +
                                std::to_string(kMaxSudokuGivens) + ", got " + std::to_string(givens));
  if (!is_valid_solution(solution)) throw std::invalid_argument("make_puzzle: the solution is not a valid complete grid");
  std::array<int, 81> order;
  std::iota(order.begin(), order.end(), 0);
  shuffle(order, rng);
  SudokuGrid p = solution;
  int left = 81;
  for (int c : order) {
    if (left == givens) break;
    const uint8_t keep = p[c];
    p[c] = 0;
    // With many givens left a single blank is always forced; the solver confirms the rest.
    if (count_solutions(p, 2) == 1) --left;
    else p[c] = keep;
  }
  return p;
}

SudokuPair augment(const SudokuPair& in, std::mt19937_64& rng) {
  std::array<uint8_t, 10> digit{};  // digit[0] = 0: blank stays blank
  std::array<uint8_t, 9> perm9;
  std::iota(perm9.begin(), perm9.end(), uint8_t{1});
  shuffle(perm9, rng);
  for (int d = 1; d <= 9; ++d) digit[d] = perm9[d - 1];
  const bool transpose = mlh::uniform_index(rng, 2) == 1;
  auto lines = [&] {  // a band (stack) order, then a line order within each
    std::array<int, 3> bands{0, 1, 2};
    shuffle(bands, rng);
    std::array<int, 9> out{};
    for (int b = 0; b < 3; ++b) {
      std::array<int, 3> within{0, 1, 2};
      shuffle(within, rng);
      for (int i = 0; i < 3; ++i) out[b * 3 + i] = bands[b] * 3 + within[i];
    }
    return out;
  };
  const auto row_perm = lines();
  const auto col_perm = lines();
  auto apply = [&](const SudokuGrid& x) {
    SudokuGrid out{};
    for (int i = 0; i < 81; ++i) {
      // As the reference: new[i] = (transpose ? x.T : x).flat[row_perm[i/9]*9 + col_perm[i%9]].
      const int r = row_perm[i / 9], c = col_perm[i % 9];
      const int src = transpose ? c * 9 + r : r * 9 + c;
      out[i] = digit[x[src]];
    }
    return out;
  };
  return {apply(in.puzzle), apply(in.solution)};
}

std::array<uint8_t, 81> to_tokens(const SudokuGrid& g) {
  std::array<uint8_t, 81> t{};
  for (int c = 0; c < 81; ++c) {
    if (g[c] > 9) throw std::invalid_argument("to_tokens: cell " + std::to_string(c) + " holds " + std::to_string(g[c]));
    t[c] = static_cast<uint8_t>(g[c] + 1);
  }
  return t;
}

SudokuGrid from_tokens(const std::array<uint8_t, 81>& t) {
  SudokuGrid g{};
  for (int c = 0; c < 81; ++c) {
    if (t[c] < 1 || t[c] > 10) throw std::invalid_argument("from_tokens: cell " + std::to_string(c) + " holds token " + std::to_string(t[c]));
    g[c] = static_cast<uint8_t>(t[c] - 1);
  }
  return g;
}

std::string to_string(const SudokuGrid& g) {
  std::string s(81, '.');
  for (int c = 0; c < 81; ++c)
    if (g[c]) s[c] = static_cast<char>('0' + g[c]);
  return s;
}

}  // namespace trm
