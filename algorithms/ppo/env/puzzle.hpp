// The tiler-slider puzzle: an N x N grid with blocked cells, K tiles and K targets. A move
// (0 up, 1 down, 2 left, 3 right) slides every tile in that direction until it meets the
// wall, a blocked cell or another tile; the tile nearest the destination edge moves first
// and the others stack behind it. A move that moves no tile is invalid (changes nothing).
//   single-color: solved when the set of tile cells equals the set of target cells.
//   multi-color:  tile i has color i and target i color i; solved when every tile i stands
//                 on target i (the same cells in the wrong colors are not solved).
// Cells are numbered row * size + col, row 0 at the top.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ppo {

constexpr int kMinPuzzleSize = 2;
constexpr int kMaxPuzzleSize = 16;  // cells fit in a byte
constexpr int kMaxTiles = 8;        // a configuration packs into 64 bits (solver)
// The most walls a generated board may have: denser boards leave too few solvable layouts
// for the generator to find one within its attempts.
constexpr double kMaxBlockedDensity = 0.8;
constexpr int kNumMoves = 4;
enum Move : int { kUp = 0, kDown = 1, kLeft = 2, kRight = 3 };
const char* move_name(int move);  // "up", "down", "left", "right"

struct Puzzle {
  int size = 0;
  bool multi_color = false;
  std::vector<uint8_t> blocked;  // size * size, 1 = blocked
  std::vector<int> tiles;        // start cells; multi-color: tiles[i] has color i
  std::vector<int> targets;      // same count; multi-color: targets[i] has color i
  int optimal = -1;              // optimal number of moves when known, else -1

  int num_cells() const { return size * size; }
  bool is_blocked(int cell) const { return blocked[cell] != 0; }
  bool operator==(const Puzzle& o) const;
  bool operator!=(const Puzzle& o) const { return !(*this == o); }
};

// Tile cells in tile order (tile i at state[i]). Single-color states may be in any order.
using PuzzleState = std::vector<int>;

// Throws std::invalid_argument naming the problem (size out of range, counts, overlaps,
// tiles/targets on blocked cells or outside the board).
void validate(const Puzzle& puzzle);
// Single-color: sorts tiles and targets (their order carries no meaning). Multi-color: no-op.
void canonicalize(Puzzle& puzzle);

PuzzleState initial_state(const Puzzle& puzzle);
// Slides the tiles; returns whether any tile moved. `move` must be in [0, 4).
bool apply_move(const Puzzle& puzzle, PuzzleState& state, int move);
// Same on a raw array of n cells (no allocation; the solver's inner loop).
bool apply_move(const Puzzle& puzzle, int* cells, int n, int move);
// Whether `move` would move some tile.
bool move_changes(const Puzzle& puzzle, const PuzzleState& state, int move);
bool is_solved(const Puzzle& puzzle, const PuzzleState& state);

// Text picture of a state, one line per row, the level-file symbols:
//   '#' blocked   '.' empty
//   single-color: 'T' tile, 'x' target, '*' tile on a target
//   multi-color:  'A'.. tile of color 0.., 'a'.. target of color 0..; a tile on a target
//                 shows the tile's letter, and a line "A on b at (row,col)" follows the grid
//                 for each such cell (a tile on its own target: "A on a ...").
std::string render(const Puzzle& puzzle, const PuzzleState& state);

}  // namespace ppo
