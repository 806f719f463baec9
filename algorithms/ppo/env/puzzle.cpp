#include "puzzle.hpp"

#include <algorithm>
#include <stdexcept>

namespace ppo {

namespace {
constexpr int kDRow[4] = {-1, 1, 0, 0};
constexpr int kDCol[4] = {0, 0, -1, 1};

// Whether the cell next to `cell` in direction `move` is on the board; writes it.
inline bool neighbour(int size, int cell, int move, int& next) {
  const int r = cell / size + kDRow[move], c = cell % size + kDCol[move];
  if (r < 0 || r >= size || c < 0 || c >= size) return false;
  next = r * size + c;
  return true;
}
}  // namespace

const char* move_name(int move) {
  static const char* const kNames[4] = {"up", "down", "left", "right"};
  return move >= 0 && move < 4 ? kNames[move] : "?";
}

bool Puzzle::operator==(const Puzzle& o) const {
  return size == o.size && multi_color == o.multi_color && blocked == o.blocked &&
         tiles == o.tiles && targets == o.targets && optimal == o.optimal;
}

void validate(const Puzzle& p) {
  if (p.size < kMinPuzzleSize || p.size > kMaxPuzzleSize)
    throw std::invalid_argument("puzzle size " + std::to_string(p.size) + " out of range [" +
                                std::to_string(kMinPuzzleSize) + ", " +
                                std::to_string(kMaxPuzzleSize) + "]");
  if (static_cast<int>(p.blocked.size()) != p.num_cells())
    throw std::invalid_argument("puzzle: blocked has " + std::to_string(p.blocked.size()) +
                                " cells, expected " + std::to_string(p.num_cells()));
  if (p.tiles.empty()) throw std::invalid_argument("puzzle: no tiles");
  if (p.tiles.size() > static_cast<size_t>(kMaxTiles))
    throw std::invalid_argument("puzzle: " + std::to_string(p.tiles.size()) +
                                " tiles, at most " + std::to_string(kMaxTiles));
  if (p.tiles.size() != p.targets.size())
    throw std::invalid_argument("puzzle: " + std::to_string(p.tiles.size()) + " tiles but " +
                                std::to_string(p.targets.size()) + " targets");
  for (const auto* list : {&p.tiles, &p.targets}) {
    const char* what = list == &p.tiles ? "tile" : "target";
    std::vector<uint8_t> seen(p.num_cells(), 0);
    for (int c : *list) {
      if (c < 0 || c >= p.num_cells())
        throw std::invalid_argument(std::string("puzzle: ") + what + " cell " +
                                    std::to_string(c) + " outside the board");
      if (p.blocked[c])
        throw std::invalid_argument(std::string("puzzle: ") + what + " on blocked cell " +
                                    std::to_string(c));
      if (seen[c]++)
        throw std::invalid_argument(std::string("puzzle: two ") + what + "s on cell " +
                                    std::to_string(c));
    }
  }
}

void canonicalize(Puzzle& p) {
  if (p.multi_color) return;
  std::sort(p.tiles.begin(), p.tiles.end());
  std::sort(p.targets.begin(), p.targets.end());
}

PuzzleState initial_state(const Puzzle& p) { return p.tiles; }

bool apply_move(const Puzzle& p, int* cells, int n, int move) {
  if (move < 0 || move >= kNumMoves) throw std::out_of_range("puzzle move must be in [0, 4)");
  uint8_t occupied[kMaxPuzzleSize * kMaxPuzzleSize] = {};
  int order[kMaxTiles];
  for (int i = 0; i < n; ++i) {
    occupied[cells[i]] = 1;
    order[i] = i;
  }
  // Nearest the destination edge first: the key grows away from that edge.
  const int size = p.size;
  auto key = [&](int cell) {
    switch (move) {
      case kUp: return cell / size;
      case kDown: return size - 1 - cell / size;
      case kLeft: return cell % size;
      default: return size - 1 - cell % size;
    }
  };
  for (int i = 1; i < n; ++i) {  // insertion sort, n <= 8
    const int v = order[i];
    int j = i - 1;
    while (j >= 0 && key(cells[order[j]]) > key(cells[v])) {
      order[j + 1] = order[j];
      --j;
    }
    order[j + 1] = v;
  }
  bool moved = false;
  for (int k = 0; k < n; ++k) {
    int& cell = cells[order[k]];
    int next;
    while (neighbour(size, cell, move, next) && !p.blocked[next] && !occupied[next]) {
      occupied[cell] = 0;
      occupied[next] = 1;
      cell = next;
      moved = true;
    }
  }
  return moved;
}

bool apply_move(const Puzzle& p, PuzzleState& state, int move) {
  return apply_move(p, state.data(), static_cast<int>(state.size()), move);
}

bool move_changes(const Puzzle& p, const PuzzleState& state, int move) {
  if (move < 0 || move >= kNumMoves) throw std::out_of_range("puzzle move must be in [0, 4)");
  // Some tile moves iff some tile has a free neighbour that way (the front tiles only move
  // away, so a tile that is free now still moves when its turn comes).
  for (int cell : state) {
    int next;
    if (!neighbour(p.size, cell, move, next) || p.blocked[next]) continue;
    if (std::find(state.begin(), state.end(), next) == state.end()) return true;
  }
  return false;
}

bool is_solved(const Puzzle& p, const PuzzleState& state) {
  if (p.multi_color) return state == p.targets;
  for (int cell : state)
    if (std::find(p.targets.begin(), p.targets.end(), cell) == p.targets.end()) return false;
  return state.size() == p.targets.size();  // tiles are distinct, so this is set equality
}

std::string render(const Puzzle& p, const PuzzleState& state) {
  const int n = p.num_cells();
  std::string grid;
  std::string notes;
  for (int cell = 0; cell < n; ++cell) {
    char ch = p.blocked[cell] ? '#' : '.';
    const auto tile = std::find(state.begin(), state.end(), cell);
    const auto target = std::find(p.targets.begin(), p.targets.end(), cell);
    const bool has_tile = tile != state.end(), has_target = target != p.targets.end();
    if (!p.multi_color) {
      if (has_tile && has_target) ch = '*';
      else if (has_tile) ch = 'T';
      else if (has_target) ch = 'x';
    } else {
      const int ti = static_cast<int>(tile - state.begin());
      const int gi = static_cast<int>(target - p.targets.begin());
      if (has_tile) ch = static_cast<char>('A' + ti);
      else if (has_target) ch = static_cast<char>('a' + gi);
      if (has_tile && has_target)
        notes += std::string(1, static_cast<char>('A' + ti)) + " on " +
                 std::string(1, static_cast<char>('a' + gi)) + " at (" +
                 std::to_string(cell / p.size) + "," + std::to_string(cell % p.size) + ")\n";
    }
    grid += ch;
    if (cell % p.size == p.size - 1) grid += '\n';
  }
  return grid + notes;
}

}  // namespace ppo
